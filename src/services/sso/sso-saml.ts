// SAML 2.0 login: signed AuthnRequest over HTTP-Redirect, responses at the ACS over HTTP-POST, SP metadata.
// Pending request ids and seen assertion ids live in the database, so every instance shares them.
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import selfsigned from 'selfsigned';
import { SamlRequest, SsoProvider } from '../../../entities/sso.js';
import type { RequestContext } from '../../auth/context.js';
import { isUuid, skipAuthorization } from '../../auth/policy.js';
import {
  buildAuthnRequestRedirect,
  generateSpMetadata,
  mapSamlAttributes,
  normalizeCertificate,
  validateSamlResponse,
  type SamlIdpSettings,
  type SamlReplayStore,
  type SamlRequestStore,
  type SamlSpSettings,
} from '../../auth/saml-toolkit.js';
import type { Config } from '../../config.js';
import { AppError, badRequest } from '../../errors.js';
import { randomToken, safeEqual } from '../../secrets.js';
import {
  LINK_START_TTL_MS,
  LOGIN_TTL_MS,
  SsoLoginError,
  failedLoginUrl,
  finishSsoLogin,
  publicPath,
  seal,
  unseal,
  type LoginCookie,
  type LoginRedirect,
} from './sso-accounts.js';
import { assertBrowserUrl, findActiveProvider } from './sso-idp.js';

export const ACS_PATH = '/api/v1/sso/saml/acs';
export const SAML_STATE_COOKIE = 'service_saml_state';
const RELAY_PURPOSE = 'saml-relay';

// ---------------------------------------------------------------------------------------------------------
// SP key and certificate

interface SpCredentials {
  privateKey: string;
  certificate: string;
}

const credentials = new WeakMap<Config, Promise<SpCredentials>>();

/** Loaded once per configuration; a failure is not cached, so fixing the files needs no restart. */
export function spCredentials(config: Config): Promise<SpCredentials> {
  let pending = credentials.get(config);
  if (!pending) {
    pending = loadSpCredentials(config);
    credentials.set(config, pending);
    pending.catch(() => credentials.delete(config));
  }
  return pending;
}

function spConfigError(message: string): AppError {
  return new AppError(500, 'INTERNAL_ERROR', `SAML service provider is not configured: ${message}`);
}

/**
 * SAML_SP_PRIVATE_KEY / SAML_SP_CERTIFICATE (PEM; `\n` escapes allowed) when set. Otherwise, outside
 * production only, a key pair generated once into DATA_DIR (saml-sp.key, saml-sp.crt, mode 600) and reused.
 */
async function loadSpCredentials(config: Config): Promise<SpCredentials> {
  const { privateKey, certificate } = config.saml;
  if (privateKey || certificate) {
    if (!privateKey || !certificate) throw spConfigError('set both SAML_SP_PRIVATE_KEY and SAML_SP_CERTIFICATE');
    return checkedCredentials(privateKey.replace(/\\n/g, '\n'), certificate.replace(/\\n/g, '\n'));
  }
  if (config.isProduction) throw spConfigError('SAML_SP_PRIVATE_KEY and SAML_SP_CERTIFICATE are required when NODE_ENV=production');
  const keyFile = path.join(config.dataDir, 'saml-sp.key');
  const certFile = path.join(config.dataDir, 'saml-sp.crt');
  if (!fs.existsSync(keyFile) || !fs.existsSync(certFile)) {
    const notAfterDate = new Date(Date.now() + 3650 * 24 * 3600_000);
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'rmm-service SAML SP' }], { keySize: 2048, notAfterDate, algorithm: 'sha256' });
    fs.mkdirSync(config.dataDir, { recursive: true });
    fs.writeFileSync(keyFile, pems.private, { mode: 0o600 });
    fs.writeFileSync(certFile, pems.cert, { mode: 0o600 });
  }
  return checkedCredentials(fs.readFileSync(keyFile, 'utf8'), fs.readFileSync(certFile, 'utf8'));
}

function checkedCredentials(privateKey: string, certificate: string): SpCredentials {
  try {
    createPrivateKey(privateKey);
  } catch {
    throw spConfigError('the SP private key is not a valid PEM private key');
  }
  try {
    return { privateKey, certificate: normalizeCertificate(certificate) };
  } catch (error) {
    throw spConfigError(`the SP certificate is invalid (${(error as Error).message})`);
  }
}

async function spSettings(config: Config, provider?: SsoProvider): Promise<SamlSpSettings> {
  return {
    entityId: config.saml.spEntityId,
    acsUrl: `${config.publicUrl}${ACS_PATH}`,
    ...(await spCredentials(config)),
    nameIdFormat: provider?.nameIdFormat ?? undefined,
    forceAuthn: provider?.forceAuthn ?? false,
  };
}

/** `GET /sso/saml/metadata`: the SP EntityDescriptor an IdP imports. */
export async function samlMetadata(ctx: RequestContext): Promise<string> {
  skipAuthorization(ctx, 'SAML SP metadata is public by design');
  return generateSpMetadata(await spSettings(ctx.runtime.config));
}

// ---------------------------------------------------------------------------------------------------------
// Stores

/** Pending AuthnRequests; a request id is consumed only together with the RelayState it was sent with. */
function requestStore(em: EntityManager, binding: { providerId: string; relayKey: string; redirectPath: string }): SamlRequestStore {
  return {
    async save(requestId, expiresAt) {
      em.create(SamlRequest, { ...binding, requestId, expiresAt });
      await em.flush();
    },
    async consume(requestId) {
      const rows = await em.execute(`delete from saml_request where request_id = ? and relay_key = ? and provider_id = ? and expires_at > now() returning id`, [
        requestId,
        binding.relayKey,
        binding.providerId,
      ]);
      return rows.length === 1;
    },
  };
}

/** No request is pending for an IdP-initiated login, so an InResponseTo there is always refused. */
const noPendingRequests: SamlRequestStore = {
  save: () => Promise.reject(new Error('IdP-initiated logins send no AuthnRequest')),
  consume: async () => false,
};

function replayStore(em: EntityManager, providerId: string): SamlReplayStore {
  return {
    async remember(assertionId, expiresAt) {
      const rows = await em.execute(
        `insert into saml_assertion (id, provider_id, assertion_id, expires_at, created_at, updated_at)
         values (gen_random_uuid(), ?, ?, ?, now(), now()) on conflict (provider_id, assertion_id) do nothing returning id`,
        [providerId, assertionId, expiresAt],
      );
      return rows.length === 1;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Login

function idpSettings(config: Config, provider: SsoProvider): SamlIdpSettings {
  const missing = (['entityId', 'ssoUrl', 'certificate'] as const).filter((k) => !provider[k]);
  if (missing.length) throw badRequest('Provider is not fully configured', { missing });
  assertBrowserUrl(config, 'ssoUrl', provider.ssoUrl);
  return { entityId: provider.entityId!, ssoUrl: provider.ssoUrl!, certificate: provider.certificate!, allowIdpInitiated: provider.allowIdpInitiated };
}

/**
 * The browser binding needs a cookie the IdP's cross-site form POST carries: SameSite=None, which browsers
 * accept only with Secure. So it exists when PUBLIC_URL is https; on a plain-http development URL the
 * signed RelayState and the single-use request id remain.
 */
function bindsBrowser(config: Config): boolean {
  return config.publicUrl.startsWith('https://');
}

function bindingCookie(ctx: RequestContext, value: string | null): LoginCookie | null {
  if (!bindsBrowser(ctx.runtime.config)) return null;
  return { name: SAML_STATE_COOKIE, value, path: publicPath(ctx, ACS_PATH), maxAgeMs: LOGIN_TTL_MS, secure: true, sameSite: 'none' };
}

/** `GET /sso/login/:orgId` for a SAML provider: a pending request row, then the signed HTTP-Redirect AuthnRequest. */
export async function startSamlLogin(ctx: RequestContext, provider: SsoProvider, redirectPath: string): Promise<LoginRedirect> {
  const idp = idpSettings(ctx.runtime.config, provider);
  // RelayState may carry only 80 bytes: a random key (22) and its signature (43); the rest stays in the row.
  const relayKey = randomToken(16);
  const relayState = seal(ctx, RELAY_PURPOSE, relayKey);
  const { url } = await buildAuthnRequestRedirect(await spSettings(ctx.runtime.config, provider), idp, {
    relayState,
    requestStore: requestStore(ctx.em, { providerId: provider.id, relayKey, redirectPath }),
    ttlMs: LOGIN_TTL_MS,
  });
  return { url, cookie: bindingCookie(ctx, relayState) };
}

/**
 * A login bound to a signed-in user who confirms a link (`POST /sso/link/:orgId`): a pending request row whose
 * request id is a placeholder, good for a short while, until the browser opens the link. Returns the placeholder.
 */
export async function prepareSamlLink(ctx: RequestContext, provider: SsoProvider, redirectPath: string, userId: string): Promise<string> {
  idpSettings(ctx.runtime.config, provider);
  const placeholder = `_link-${randomToken(32)}`;
  ctx.em.create(SamlRequest, {
    providerId: provider.id,
    requestId: placeholder,
    relayKey: randomToken(16),
    redirectPath,
    linkUserId: userId,
    expiresAt: new Date(Date.now() + LINK_START_TTL_MS),
  });
  await ctx.em.flush();
  return placeholder;
}

/**
 * `GET /sso/link` in the browser: the AuthnRequest's id replaces the placeholder in one conditional update, so
 * one link starts one login; null when the placeholder is unknown, spent or expired.
 */
export async function openSamlLink(ctx: RequestContext, placeholder: string): Promise<LoginRedirect | null> {
  const pending = await ctx.em.findOne(SamlRequest, { requestId: placeholder, linkUserId: { $ne: null }, expiresAt: { $gt: new Date() } });
  if (!pending) return null;
  const provider = await ctx.em.findOne(SsoProvider, { id: pending.providerId, type: 'saml', status: 'active' });
  if (!provider) throw new Error('provider is no longer active');
  const relayState = seal(ctx, RELAY_PURPOSE, pending.relayKey);
  let opened = false;
  const { url } = await buildAuthnRequestRedirect(await spSettings(ctx.runtime.config, provider), idpSettings(ctx.runtime.config, provider), {
    relayState,
    // Building the AuthnRequest only saves its id: here by claiming the placeholder.
    requestStore: {
      ...noPendingRequests,
      async save(requestId, expiresAt) {
        const rows = await ctx.em.execute(`update saml_request set request_id = ?, expires_at = ? where request_id = ? and expires_at > now() returning id`, [
          requestId,
          expiresAt,
          placeholder,
        ]);
        opened = rows.length === 1;
      },
    },
    ttlMs: LOGIN_TTL_MS,
  });
  return opened ? { url, cookie: bindingCookie(ctx, relayState) } : null;
}

/**
 * `POST /sso/saml/acs`: where to send the browser (the binding cookie is deleted); never throws. SP-initiated
 * responses carry our signed RelayState, which names the pending request; an IdP-initiated one (only for
 * providers that allow it) carries the organization id as RelayState, as configured at the IdP.
 */
export async function completeSamlLogin(ctx: RequestContext, input: SamlPost): Promise<LoginRedirect> {
  skipAuthorization(ctx, 'SAML ACS: the signed assertion is the credential');
  return { url: await acsTarget(ctx, input), cookie: bindingCookie(ctx, null) };
}

interface SamlPost {
  samlResponse?: string;
  relayState?: string;
  cookie?: string;
}

async function acsTarget(ctx: RequestContext, input: SamlPost): Promise<string> {
  const { config } = ctx.runtime;
  let provider: SsoProvider | null = null;
  try {
    const relayKey = unseal(ctx, RELAY_PURPOSE, input.relayState);
    let redirectPath = '/';
    let linkUserId: string | null = null;
    let requests = noPendingRequests;
    if (relayKey) {
      if (bindsBrowser(config) && !(input.cookie && safeEqual(input.cookie, input.relayState!))) {
        throw new SsoLoginError('session_expired', 'RelayState does not match the cookie');
      }
      const pending = await ctx.em.findOne(SamlRequest, { relayKey, expiresAt: { $gt: new Date() } });
      if (!pending) throw new SsoLoginError('session_expired');
      provider = await ctx.em.findOne(SsoProvider, { id: pending.providerId, type: 'saml', status: 'active' });
      if (!provider) throw new Error('provider is no longer active');
      redirectPath = pending.redirectPath;
      linkUserId = pending.linkUserId;
      requests = requestStore(ctx.em, { providerId: provider.id, relayKey, redirectPath });
    } else {
      const candidate = input.relayState && isUuid(input.relayState) ? await findActiveProvider(ctx.em, input.relayState) : null;
      if (candidate?.type !== 'saml' || !candidate.allowIdpInitiated) throw new Error('unsolicited response without a provider that allows IdP-initiated login');
      provider = candidate;
    }
    if (!input.samlResponse) throw new Error('no SAMLResponse');

    const result = await validateSamlResponse(await spSettings(config, provider), idpSettings(config, provider), input.samlResponse, {
      requestStore: requests,
      replayStore: replayStore(ctx.em, provider.id),
    });
    if (relayKey && result.inResponseTo === null) throw new Error('unsolicited response sent with the RelayState of a pending request');

    const mapped = mapSamlAttributes(result);
    const { nameId, nameIdFormat, sessionIndex, attributes } = result;
    return await finishSsoLogin(
      ctx,
      provider,
      { ...mapped, externalId: nameId, emailVerified: null, profile: { nameId, nameIdFormat, sessionIndex, attributes }, idpTokens: null },
      { redirectPath, linkUserId },
    );
  } catch (error) {
    return failedLoginUrl(ctx, error, provider);
  }
}
