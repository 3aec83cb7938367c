import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { packageVersion } from './paths.js';

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? fallback : ['true', '1', 'yes'].includes(v)));
const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).optional().transform((v) => v ?? fallback);
const url = z.url({ message: 'must be a URL' }).optional();
const list = z
  .string()
  .optional()
  .transform((v) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : []));

/** One TRUST_PROXY entry: a proxy-addr name, an IP address, or a CIDR range. */
function isProxyEntry(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address, bits, extra] = entry.split('/');
  const family = net.isIP(address!);
  if (bits === undefined) return family !== 0;
  return family !== 0 && extra === undefined && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}
/**
 * Express's `trust proxy` forms: a hop count, or comma-separated names/addresses/CIDRs. Unset (or
 * `false`) trusts no proxy, so X-Forwarded-For is ignored. `true` is refused: trusting every hop lets
 * any client choose its own address and walk around the per-IP limits.
 */
const trustProxy = z
  .string()
  .optional()
  .transform((v, ctx): false | number | string[] => {
    if (v === undefined || v === 'false') return false;
    if (/^\d+$/.test(v)) return Number(v);
    const entries = v.split(',').map((s) => s.trim()).filter(Boolean);
    if (entries.length > 0 && entries.every(isProxyEntry)) return entries;
    ctx.addIssue({ code: 'custom', message: 'must be a hop count or a comma-separated list of loopback, linklocal, uniquelocal, IP addresses and CIDR ranges' });
    return z.NEVER;
  });

/** Every environment variable the server reads. The README's configuration table mirrors this. */
const EnvSchema = z.object({
  // Production unless told otherwise (`npm run dev` and the tests say so): introspection and the
  // explorer are for a developer's machine, not what a forgotten variable should expose.
  NODE_ENV: z.enum(['development', 'production', 'test']).optional(),
  PORT: int(3000),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  DATA_DIR: z.string().default('./.data'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL').optional(),
  PUBLIC_URL: url,
  PUBLIC_APP_URL: url,
  DASHBOARD_URL: url,
  SECRET_ENCRYPTION_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  APP_ENCRYPTION_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SERVICE_VERSION: z.string().optional(),
  AUTO_MIGRATE: bool(true),
  CORS_ORIGINS: list,
  BODY_LIMIT: z.string().default('1mb'),
  TRUST_PROXY: trustProxy,
  ALLOW_PRIVATE_NETWORK_TARGETS: bool(false),
  ADMIN_EMAIL: z.email({ message: 'must be an email address' }).optional(),
  ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  ACCESS_TOKEN_TTL_SECONDS: int(900, 60),
  REFRESH_TOKEN_TTL_SECONDS: int(7 * 24 * 3600, 300),
  LOGIN_MAX_FAILURES_PER_EMAIL: int(10, 1),
  LOGIN_LOCKOUT_MINUTES: int(15, 1),
  LOGIN_MAX_FAILURES_PER_IP: int(100, 1),
  LOGIN_IP_WINDOW_MINUTES: int(15, 1),
  SSO_RATE_LIMIT_PER_MINUTE: int(120, 1),
  SAML_SP_ENTITY_ID: z.string().optional(),
  SAML_SP_PRIVATE_KEY: z.string().optional(),
  SAML_SP_CERTIFICATE: z.string().optional(),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  SMTP_FROM: z.string().default('rmm-service <no-reply@localhost>'),
  PAGERDUTY_EVENTS_URL: url,
  SMS_API_URL: url,
  SMS_API_KEY: z.string().optional(),
  ALERT_ESCALATION_CHECK_SECONDS: int(5, 1),
  GRAPHQL_MAX_DEPTH: int(12, 2),
  GRAPHQL_MAX_COST: int(10000, 10),
  GRAPHQL_MAX_ALIASES: int(100, 1),
  GRAPHQL_MAX_BATCH: int(10, 1),
  GRAPHQL_WS_RECHECK_SECONDS: int(30, 1),
  GRAPHQL_EXPLORER: bool(false),
  GRAPHQL_PERSISTED_QUERIES_MAX: int(10000, 0),
  PERSISTED_QUERIES: z.enum(['off', 'apq', 'trusted']).default('apq'),
  GRAPHQL_TIMEOUT_MS: int(10000, 1),
  GRAPHQL_GET_MAX_AGE_SECONDS: int(30, 0),
  API_RATE_LIMIT_PER_MINUTE: int(1200, 0),
  DEVICE_OFFLINE_AFTER_SECONDS: int(300, 1),
  DEVICE_UPDATING_TIMEOUT_SECONDS: int(300, 1),
  DEVICE_COMMAND_TIMEOUT_SECONDS: int(3600, 1),
  AGENT_HEARTBEAT_INTERVAL_SECONDS: int(60, 5),
  SECURITY_SCORE_CHANGE_THRESHOLD: int(5, 1),
  POLICY_EVALUATION_INTERVAL_MINUTES: int(60, 1),
  BINARY_SOURCE: z.enum(['github', 'local']).default('github'),
  AGENT_AUTO_PROMOTE: bool(true),
  AGENT_RELEASES_REPO: z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'must be owner/name').optional(),
  AGENT_RELEASES_API_URL: url,
  AGENT_RELEASES_TOKEN: z.string().optional(),
  AGENT_BINARY_DIR: z.string().optional(),
  VULN_DB_URL: url,
  VULN_DB_CACHE_SECONDS: int(86400, 0),
  THIRD_PARTY_TEST_DEVICE_ID: z.uuid({ message: 'must be a device id (uuid)' }).optional(),
});

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  isProduction: boolean;
  port: number;
  host: string;
  logLevel: string;
  dataDir: string;
  databaseUrl: string | null;
  mongodbUrl: string | null;
  publicUrl: string;
  encryptionKey: string;
  jwtSecret: string;
  serviceVersion: string;
  autoMigrate: boolean;
  corsOrigins: string[];
  bodyLimit: string;
  /** Express `trust proxy`: which hops' X-Forwarded-For entries are believed; false = none */
  trustProxy: false | number | string[];
  allowPrivateNetworkTargets: boolean;
  admin: { email: string; password: string } | null;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  login: { maxFailuresPerEmail: number; lockoutMinutes: number; maxFailuresPerIp: number; ipWindowMinutes: number };
  ssoRateLimitPerMinute: number;
  saml: { spEntityId: string; privateKey: string | null; certificate: string | null };
  smtp: { url: string; from: string } | null;
  /**
   * Alert notification channels: pagerdutyEventsUrl, PagerDuty's Events API v2 enqueue URL; sms, the
   * SMS provider's send URL and key (null: sms channels fail their sends); escalationCheckSeconds, how
   * often due escalation steps are looked for
   */
  alertChannels: { pagerdutyEventsUrl: string; sms: { url: string; apiKey: string | null } | null; escalationCheckSeconds: number };
  /** wsRecheckSeconds: how often every open WebSocket's credentials are re-checked, behind the revocation events */
  /** persistedQueriesMax: automatic persisted queries kept in the database; past it, new ones run but are not kept */
  /** maxAliases: aliased fields in one operation; maxBatch: operations in one HTTP request (a JSON array) */
  /** explorer: GraphiQL at GET /graphql, and introspection (which it needs) in production too */
  /**
   * persistedQueries: `off` refuses the persistedQuery extension, `apq` registers any valid query by its
   * hash, `trusted` answers only the documents of an imported manifest; timeoutMs: an HTTP operation
   * still running then is answered 504 TIMEOUT and abandoned; getMaxAgeSeconds: how long a successful
   * GET by persisted-query hash may be kept by the caller's own cache (0: never)
   */
  graphql: {
    maxDepth: number;
    maxCost: number;
    maxAliases: number;
    maxBatch: number;
    explorer: boolean;
    wsRecheckSeconds: number;
    persistedQueriesMax: number;
    persistedQueries: 'off' | 'apq' | 'trusted';
    timeoutMs: number;
    getMaxAgeSeconds: number;
  };
  /** requests per minute and caller (user or API key), REST and GraphQL (HTTP and each subscribe) alike; 0: no limit */
  apiRateLimitPerMinute: number;
  /** offlineAfterSeconds: no heartbeat nor channel for this long turns a device offline; updatingTimeoutSeconds: an update that takes longer does too */
  devices: { offlineAfterSeconds: number; updatingTimeoutSeconds: number; commandTimeoutSeconds: number; heartbeatIntervalSeconds: number };
  /**
   * source: where agents download binaries (`github`: the release asset's URL; `local`: this server,
   * from binaryDir); autoPromote: a synced stable release becomes the upgrade target at once;
   * releasesApiUrl: a GitHub-compatible `…/repos/<owner>/<repo>` API root, null when not configured
   */
  agentReleases: { source: 'github' | 'local'; autoPromote: boolean; releasesApiUrl: string | null; token: string | null; binaryDir: string };
  /**
   * vulnDbUrl: an OSV-compatible API root third-party patches are enriched from; vulnDbCacheSeconds: how
   * long its answer for a package version is reused, by every organization; thirdPartyTestDeviceId: the
   * device catalog tests install on when none is named
   */
  patching: { vulnDbUrl: string; vulnDbCacheSeconds: number; thirdPartyTestDeviceId: string | null };
  /** scoreChangeThreshold: a device's score moving by at least this many points emits `security.score_changed` */
  security: { scoreChangeThreshold: number };
  /** evaluationIntervalMinutes: active configuration policies evaluate their devices again this often */
  policies: { evaluationIntervalMinutes: number };
}

export class ConfigError extends Error {}

/**
 * Reads and validates the environment once. Without NODE_ENV the server behaves as production (no
 * introspection, no explorer) but, like development, generates missing secrets on first start and keeps
 * them in DATA_DIR/secrets.json, so `npm install && npm start` needs no configuration; a deployment that
 * says NODE_ENV=production must give its secrets (every instance needs the same ones), else start-up stops.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = { ...parsed.data, NODE_ENV: parsed.data.NODE_ENV ?? 'production' };
  const isProduction = e.NODE_ENV === 'production';
  const secretsRequired = parsed.data.NODE_ENV === 'production';
  const dataDir = path.resolve(e.DATA_DIR);
  const secrets = resolveSecrets(
    {
      encryptionKey: { value: e.SECRET_ENCRYPTION_KEY ?? e.APP_ENCRYPTION_KEY, names: 'SECRET_ENCRYPTION_KEY or APP_ENCRYPTION_KEY' },
      jwtSecret: { value: e.JWT_SECRET, names: 'JWT_SECRET' },
    },
    { required: secretsRequired, dataDir },
  );
  if ((e.ADMIN_EMAIL === undefined) !== (e.ADMIN_PASSWORD === undefined)) {
    throw new ConfigError('Invalid configuration:\n  ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }
  const publicUrl = (e.PUBLIC_URL ?? e.PUBLIC_APP_URL ?? e.DASHBOARD_URL ?? 'http://localhost:3000').replace(/\/+$/, '');
  return {
    nodeEnv: e.NODE_ENV,
    isProduction,
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL ?? (e.NODE_ENV === 'test' ? 'silent' : 'info'),
    dataDir,
    databaseUrl: e.DATABASE_URL ?? null,
    mongodbUrl: e.MONGODB_URL ?? null,
    publicUrl,
    encryptionKey: secrets.encryptionKey,
    jwtSecret: secrets.jwtSecret,
    serviceVersion: e.SERVICE_VERSION ?? packageVersion(),
    autoMigrate: e.AUTO_MIGRATE,
    corsOrigins: e.CORS_ORIGINS,
    bodyLimit: e.BODY_LIMIT,
    trustProxy: e.TRUST_PROXY,
    allowPrivateNetworkTargets: e.ALLOW_PRIVATE_NETWORK_TARGETS,
    admin: e.ADMIN_EMAIL && e.ADMIN_PASSWORD ? { email: e.ADMIN_EMAIL, password: e.ADMIN_PASSWORD } : null,
    accessTokenTtlSeconds: e.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: e.REFRESH_TOKEN_TTL_SECONDS,
    login: {
      maxFailuresPerEmail: e.LOGIN_MAX_FAILURES_PER_EMAIL,
      lockoutMinutes: e.LOGIN_LOCKOUT_MINUTES,
      maxFailuresPerIp: e.LOGIN_MAX_FAILURES_PER_IP,
      ipWindowMinutes: e.LOGIN_IP_WINDOW_MINUTES,
    },
    ssoRateLimitPerMinute: e.SSO_RATE_LIMIT_PER_MINUTE,
    saml: {
      spEntityId: e.SAML_SP_ENTITY_ID ?? `${publicUrl}/api/v1/sso/saml/metadata`,
      privateKey: e.SAML_SP_PRIVATE_KEY ?? null,
      certificate: e.SAML_SP_CERTIFICATE ?? null,
    },
    smtp: e.SMTP_URL ? { url: e.SMTP_URL, from: e.SMTP_FROM } : null,
    alertChannels: {
      pagerdutyEventsUrl: pagerdutyEventsUrl(e.PAGERDUTY_EVENTS_URL ?? 'https://events.pagerduty.com'),
      sms: e.SMS_API_URL ? { url: e.SMS_API_URL, apiKey: e.SMS_API_KEY ?? null } : null,
      escalationCheckSeconds: e.ALERT_ESCALATION_CHECK_SECONDS,
    },
    graphql: {
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxCost: e.GRAPHQL_MAX_COST,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxBatch: e.GRAPHQL_MAX_BATCH,
      explorer: e.GRAPHQL_EXPLORER,
      wsRecheckSeconds: e.GRAPHQL_WS_RECHECK_SECONDS,
      persistedQueriesMax: e.GRAPHQL_PERSISTED_QUERIES_MAX,
      persistedQueries: e.PERSISTED_QUERIES,
      timeoutMs: e.GRAPHQL_TIMEOUT_MS,
      getMaxAgeSeconds: e.GRAPHQL_GET_MAX_AGE_SECONDS,
    },
    apiRateLimitPerMinute: e.API_RATE_LIMIT_PER_MINUTE,
    devices: {
      offlineAfterSeconds: e.DEVICE_OFFLINE_AFTER_SECONDS,
      updatingTimeoutSeconds: e.DEVICE_UPDATING_TIMEOUT_SECONDS,
      commandTimeoutSeconds: e.DEVICE_COMMAND_TIMEOUT_SECONDS,
      heartbeatIntervalSeconds: e.AGENT_HEARTBEAT_INTERVAL_SECONDS,
    },
    agentReleases: {
      source: e.BINARY_SOURCE,
      autoPromote: e.AGENT_AUTO_PROMOTE,
      releasesApiUrl: (e.AGENT_RELEASES_API_URL ?? (e.AGENT_RELEASES_REPO ? `https://api.github.com/repos/${e.AGENT_RELEASES_REPO}` : null))?.replace(/\/+$/, '') ?? null,
      token: e.AGENT_RELEASES_TOKEN ?? null,
      binaryDir: path.resolve(e.AGENT_BINARY_DIR ?? path.join(dataDir, 'agent-binaries')),
    },
    patching: {
      vulnDbUrl: (e.VULN_DB_URL ?? 'https://api.osv.dev').replace(/\/+$/, ''),
      vulnDbCacheSeconds: e.VULN_DB_CACHE_SECONDS,
      thirdPartyTestDeviceId: e.THIRD_PARTY_TEST_DEVICE_ID?.toLowerCase() ?? null,
    },
    security: { scoreChangeThreshold: e.SECURITY_SCORE_CHANGE_THRESHOLD },
    policies: { evaluationIntervalMinutes: e.POLICY_EVALUATION_INTERVAL_MINUTES },
  };
}

/** A bare origin (or one ending in `/`) names PagerDuty's host: its Events API v2 path is added; any other path is the endpoint itself. */
function pagerdutyEventsUrl(raw: string): string {
  const url = new URL(raw);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v2/enqueue';
  return url.toString();
}

type SecretSpec = Record<string, { value: string | undefined; names: string }>;

function resolveSecrets<T extends SecretSpec>(spec: T, opts: { required: boolean; dataDir: string }): { [K in keyof T]: string } {
  const missing = Object.entries(spec).filter(([, s]) => !s.value);
  if (missing.length > 0 && opts.required) {
    throw new ConfigError(`Invalid configuration:\n${missing.map(([, s]) => `  ${s.names}: required when NODE_ENV=production`).join('\n')}`);
  }
  const file = path.join(opts.dataDir, 'secrets.json');
  let stored: Record<string, string> = {};
  if (missing.length > 0) {
    if (fs.existsSync(file)) stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    const absent = missing.filter(([key]) => !stored[key]);
    if (absent.length > 0) {
      for (const [key] of absent) stored[key] = crypto.randomBytes(32).toString('base64url');
      fs.mkdirSync(opts.dataDir, { recursive: true });
      fs.writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
    }
  }
  return Object.fromEntries(Object.entries(spec).map(([key, s]) => [key, s.value ?? stored[key]])) as { [K in keyof T]: string };
}
