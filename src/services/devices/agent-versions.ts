import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AGENT_COMPONENTS, AgentVersion, type AgentComponent } from '../../../entities/agent-version.js';
import type { Device, OsType } from '../../../entities/device.js';
import { WEEKDAYS, type AgentUpdateWindow } from '../../../entities/partner.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, skipAuthorization } from '../../auth/policy.js';
import type { Config } from '../../config.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, badRequest, forbidden, mfaRequired, notFound } from '../../errors.js';
import { createGuardedFetch, UnsafeUrlError } from '../../net/outbound-guard.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { onePer } from '../../memo.js';
import type { Runtime } from '../../runtime.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { OsTypeSchema } from './devices.js';
import { updatesDeferredDeviceIds } from '../maintenance/api.js';

// Agent releases (spec, Versioning 4–8): binaries registered from a GitHub-compatible releases API,
// promoted to upgrade targets, handed to agents on heartbeat (`upgradeTo`) and to installers.

// ── versions ────────────────────────────────────────────────────────────────────────────────────

const IDENT = String.raw`(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)`;
/** semver 2.0.0 (https://semver.org), without a leading `v` */
const SEMVER = new RegExp(String.raw`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-(${IDENT}(?:\.${IDENT})*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$`);

/** Numeric identifiers of any length, compared as numbers (semver forbids leading zeros). */
const compareDigits = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/**
 * Semver precedence of two versions: negative, 0 or positive; null when either is not a semantic
 * version (such a version is never "older", so it is never offered an upgrade). Build metadata is
 * ignored; a prerelease ranks below its release.
 */
function compareVersions(a: string, b: string): number | null {
  const [x, y] = [SEMVER.exec(a.replace(/^v/, '')), SEMVER.exec(b.replace(/^v/, ''))];
  if (!x || !y) return null;
  for (let i = 1; i <= 3; i += 1) {
    const order = compareDigits(x[i]!, y[i]!);
    if (order !== 0) return Math.sign(order);
  }
  if (x[4] === undefined || y[4] === undefined) return x[4] === y[4] ? 0 : x[4] === undefined ? 1 : -1;
  const [p, q] = [x[4].split('.'), y[4].split('.')];
  for (let i = 0; i < Math.min(p.length, q.length); i += 1) {
    const [m, n] = [p[i]!, q[i]!];
    const [mNum, nNum] = [/^\d+$/.test(m), /^\d+$/.test(n)];
    const order = mNum && nNum ? compareDigits(m, n) : mNum ? -1 : nNum ? 1 : m < n ? -1 : m > n ? 1 : 0;
    if (order !== 0) return Math.sign(order);
  }
  return Math.sign(p.length - q.length);
}

/** `1.4.0-rc.1` and the like (spec, Versioning 8). */
const isPrerelease = (version: string) => SEMVER.exec(version)?.[4] !== undefined;

/** A version as given (`v1.4.2` or `1.4.2`), kept without the `v`; idempotent, as adapters parse before services. */
const versionInput = () =>
  z
    .string()
    .trim()
    .transform((v) => v.replace(/^v/, ''))
    .pipe(z.string().max(50).regex(SEMVER, 'must be a semantic version such as 1.4.2'))
    .describe('A semantic version such as 1.4.2 (a leading v is dropped).');

const ARCH_ALIASES: Record<string, string> = { x86_64: 'amd64', x64: 'amd64', aarch64: 'arm64', i386: '386', i686: '386', x86: '386', armv7l: 'arm', armv7: 'arm', armhf: 'arm' };
/** What agents and `uname -m` call an architecture, as release assets name it (amd64, arm64, 386, arm). */
const normalizeArch = (arch: string) => {
  const lower = arch.trim().toLowerCase();
  return ARCH_ALIASES[lower] ?? lower;
};
const archInput = () =>
  z
    .string()
    .trim()
    .min(1)
    .max(20)
    .regex(/^[A-Za-z0-9_]+$/, 'must be an architecture such as amd64')
    .transform(normalizeArch)
    .describe('A CPU architecture as release assets name it (amd64, arm64, 386, arm); x86_64, aarch64 and the like are understood.');

/**
 * The asset naming convention: `rmm-<component>-<os>-<arch>[.exe]`, e.g. `rmm-agent-linux-amd64`,
 * `rmm-watchdog-windows-amd64.exe`, `rmm-helper-darwin-arm64` (`darwin` is `macos`). Checksums come
 * from a `checksums.txt` / `SHA256SUMS` asset in `sha256sum` format, else from the asset's `digest`.
 */
const ASSET_NAME = new RegExp(`^rmm-(${AGENT_COMPONENTS.join('|')})-(linux|windows|macos|darwin)-([a-z0-9_]{1,20})(?:\\.exe)?$`);
const CHECKSUM_FILE = /^(checksums\.txt|sha256sums(\.txt)?)$/i;

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const AgentComponentSchema = z
  .enum(AGENT_COMPONENTS)
  .meta({ title: 'AgentComponent', description: 'A binary of the agent release.' })
  .register(enumValues, { agent: 'The main agent.', watchdog: 'The service that keeps the agent running and reports when it goes quiet.', helper: 'The user-session helper (screens, notifications).' });

export const AgentVersionViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    version: z.string().describe('The release’s semantic version.'),
    component: AgentComponentSchema.describe('Which binary.'),
    os: OsTypeSchema.describe('The operating system it runs on.'),
    arch: z.string().describe('The CPU architecture it runs on (amd64, arm64, 386, arm).'),
    assetName: z.string().describe('The release asset’s file name.'),
    url: z.string().describe('where the binary downloads from: the release asset (BINARY_SOURCE=github) or this server (local)'),
    checksum: z.string().describe('SHA-256 of the binary, hex'),
    size: z.number().int().nullable().describe('Size in bytes; null when the release did not say.'),
    prerelease: z.boolean().describe('never promoted nor latest'),
    publishedAt: timestamp().describe('When the release was published.'),
    promotedAt: timestamp().nullable().describe('when it last became an upgrade target; null: registered only'),
    createdAt: timestamp().describe('When it was registered here.'),
  })
  .meta({ title: 'AgentVersion', description: 'One registered agent binary: a component of a release for one platform.' });
export type AgentVersionView = z.output<typeof AgentVersionViewSchema>;
export const AgentVersionPageSchema = pageSchema(AgentVersionViewSchema, 'AgentVersionPage');
export const AgentVersionListSchema = z.object({ data: z.array(AgentVersionViewSchema) }).meta({ title: 'AgentVersionList' });

const apiUrl = (config: Config, pathAndQuery: string) => `${config.publicUrl}/api/v1${pathAndQuery}`;

function agentVersionView(config: Config, row: AgentVersion): AgentVersionView {
  return {
    id: row.id,
    version: row.version,
    component: row.component,
    os: row.os,
    arch: row.arch,
    assetName: row.assetName,
    url:
      config.agentReleases.source === 'github'
        ? row.url
        : apiUrl(config, `/agent-versions/${row.version}/download?${new URLSearchParams({ os: row.os, arch: row.arch, component: row.component })}`),
    checksum: row.checksum,
    size: row.size === null ? null : Number(row.size),
    prerelease: row.prerelease,
    publishedAt: row.publishedAt.toISOString(),
    promotedAt: row.promotedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

/** `<component>:<os>/<arch>`, as sync and promote answer. */
const platformLabel = (row: Pick<AgentVersion, 'component' | 'os' | 'arch'>) => `${row.component}:${row.os}/${row.arch}`;

// ── promoted targets, cached per instance ───────────────────────────────────────────────────────

/** What an agent is pointed at: the latest promotion of a component for one platform. */
interface Target {
  version: string;
  component: AgentComponent;
  os: OsType;
  arch: string;
  assetName: string;
  url: string;
  checksum: string;
}
const targetKey = (component: string, os: string, arch: string) => `${component}/${os}/${arch}`;

async function loadTargets(em: EntityManager): Promise<Map<string, Target>> {
  const rows = (await em.execute(
    `select distinct on (component, os, arch) version, component, os, arch, asset_name, url, checksum
       from agent_version where promoted_at is not null and prerelease = false
      order by component, os, arch, promoted_at desc, created_at desc`,
  )) as { version: string; component: AgentComponent; os: OsType; arch: string; asset_name: string; url: string; checksum: string }[];
  return new Map(rows.map((r) => [targetKey(r.component, r.os, r.arch), { version: r.version, component: r.component, os: r.os, arch: r.arch, assetName: r.asset_name, url: r.url, checksum: r.checksum }]));
}

/** Promotions reach every instance through this topic (PostgreSQL NOTIFY); each drops its cache. */
const PROMOTIONS_TOPIC = 'agent_versions.promoted';
/** A backstop for a notification lost while an instance's listener reconnected. */
const TARGETS_TTL_MS = 60_000;

/**
 * The few promoted targets, read on every heartbeat: kept in memory, reloaded after a promotion
 * (on any instance) or after TARGETS_TTL_MS. A load that started before an invalidation is not kept.
 */
class PromotedTargets {
  private generation = 0;
  private cached: { targets: Map<string, Target>; loadedAt: number } | null = null;
  private loading: { generation: number; promise: Promise<Map<string, Target>> } | null = null;

  constructor(private readonly runtime: Runtime) {
    runtime.pubsub.on(PROMOTIONS_TOPIC, () => this.invalidate());
  }

  invalidate(): void {
    this.generation += 1;
    this.cached = null;
    this.loading = null;
  }

  /** Concurrent callers share one load; it runs on its own EntityManager, not on any request's (nor inside its transaction). */
  async get(): Promise<Map<string, Target>> {
    const now = this.runtime.clock.now().getTime();
    // |age| so that a clock moved backwards cannot keep an entry forever.
    if (this.cached && Math.abs(now - this.cached.loadedAt) < TARGETS_TTL_MS) return this.cached.targets;
    if (this.loading?.generation === this.generation) return this.loading.promise;
    const generation = this.generation;
    const promise = loadTargets(this.runtime.orm.em.fork() as EntityManager).then((targets) => {
      if (generation === this.generation) this.cached = { targets, loadedAt: now };
      return targets;
    });
    const settled = () => {
      if (this.loading?.promise === promise) this.loading = null;
    };
    promise.then(settled, settled);
    this.loading = { generation, promise };
    return promise;
  }
}

const promotedTargets = onePer((runtime: Runtime) => new PromotedTargets(runtime));

/** After a commit that changed promotions: this instance forgets at once, the others on the NOTIFY. */
function announcePromotions(runtime: Runtime): void {
  promotedTargets(runtime).invalidate();
  runtime.pubsub.publish(PROMOTIONS_TOPIC, {});
}

// ── heartbeat: upgradeTo ────────────────────────────────────────────────────────────────────────

export const UpgradeToSchema = z.object({ version: z.string(), component: AgentComponentSchema, url: z.string(), checksum: z.string() }).meta({ title: 'AgentUpgrade' });
export type UpgradeTo = z.output<typeof UpgradeToSchema>;

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether agents may update at `now` (spec, Versioning 7). No window: always. An end before the
 * start runs past midnight and belongs to the day it starts on; equal times mean the whole day.
 */
function updateWindowOpen(window: AgentUpdateWindow | null | undefined, now: Date): boolean {
  if (!window) return true;
  const today = WEEKDAYS[(now.getUTCDay() + 6) % 7]!;
  const yesterday = WEEKDAYS[(now.getUTCDay() + 5) % 7]!;
  const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
  const [start, end] = [minutesOf(window.startUtc), minutesOf(window.endUtc)];
  if (start === end) return window.days.includes(today);
  if (start < end) return window.days.includes(today) && minute >= start && minute < end;
  return (window.days.includes(today) && minute >= start) || (window.days.includes(yesterday) && minute < end);
}

/** The organization's window, else its partner's (one indexed query, only when an upgrade is due). */
async function effectiveUpdateWindow(ctx: RequestContext, orgId: string): Promise<AgentUpdateWindow | null> {
  const [row] = (await ctx.em.execute(
    `select o.settings -> 'agentUpdateWindow' as org_window, p.settings -> 'agentUpdateWindow' as partner_window
       from organization o join partner p on p.id = o.partner_id where o.id = ?`,
    [orgId],
  )) as { org_window: AgentUpdateWindow | null; partner_window: AgentUpdateWindow | null }[];
  return row?.org_window ?? row?.partner_window ?? null;
}

/**
 * The heartbeat's `upgradeTo`: the agent's promoted build for the device's platform, when it is
 * newer than `reportedVersion`, the device updates itself (`autoUpdate`), is not updating already,
 * its update window is open, and no maintenance occurrence defers its updates. Usually no query at all:
 * the targets are cached, and only devices in maintenance ask about their occurrences.
 */
export async function upgradeFor(ctx: RequestContext, device: Pick<Device, 'id' | 'autoUpdate' | 'status' | 'osType' | 'architecture' | 'orgId'>, reportedVersion: string): Promise<UpgradeTo | null> {
  if (!device.autoUpdate || device.status === 'updating' || !device.osType || !device.architecture) return null;
  const targets = await promotedTargets(ctx.runtime).get();
  const target = targets.get(targetKey('agent', device.osType, normalizeArch(device.architecture)));
  if (!target || !((compareVersions(target.version, reportedVersion) ?? 0) > 0)) return null;
  if (!updateWindowOpen(await effectiveUpdateWindow(ctx, device.orgId), ctx.runtime.clock.now())) return null;
  if (device.status === 'maintenance' && (await updatesDeferredDeviceIds(ctx, [device.id])).has(device.id)) return null;
  return { version: target.version, component: target.component, url: agentDownloadUrl(ctx.runtime.config, target), checksum: target.checksum };
}

/** What an agent downloads a promoted build from, without user credentials. */
function agentDownloadUrl(config: Config, target: Target): string {
  if (config.agentReleases.source === 'github') return target.url;
  return apiUrl(config, `/agents/download/${target.os}/${target.arch}?${new URLSearchParams({ component: target.component, version: target.version })}`);
}

// ── reading and downloading ─────────────────────────────────────────────────────────────────────

export const AgentVersionListQuery = PageQuery.extend({
  version: versionInput().optional().describe('Only this version.'),
  component: AgentComponentSchema.optional().describe('Only this component.'),
  os: OsTypeSchema.optional().describe('Only binaries for this operating system.'),
  arch: archInput().optional().describe('Only binaries for this architecture.'),
  promoted: z.boolean().or(queryBoolean).optional().describe('true: promoted at least once; false: registered only'),
}).strict();
export type AgentVersionListInput = z.input<typeof AgentVersionListQuery>;

/** Registered binaries, newest release first. Any caller who may read devices may read them: they are no tenant's. */
export async function listAgentVersions(ctx: RequestContext, rawQuery: AgentVersionListInput): Promise<Page<AgentVersionView>> {
  const query = parseInput(AgentVersionListQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const where = {
    ...(query.version ? { version: query.version } : {}),
    ...(query.component ? { component: query.component } : {}),
    ...(query.os ? { os: query.os } : {}),
    ...(query.arch ? { arch: query.arch } : {}),
    ...(query.promoted === undefined ? {} : { promotedAt: query.promoted ? { $ne: null } : null }),
  };
  const [rows, total] = await ctx.em.findAndCount(AgentVersion, where, {
    orderBy: { publishedAt: 'desc', version: 'desc', component: 'asc', os: 'asc', arch: 'asc', id: 'asc' },
    ...pageOptions(query),
  });
  return toPage(
    rows.map((row) => agentVersionView(ctx.runtime.config, row)),
    total,
    query,
  );
}

export const LatestAgentVersionQuery = z.object({ component: AgentComponentSchema.optional().describe('Only this component.') }).strict();
export type LatestAgentVersionInput = z.input<typeof LatestAgentVersionQuery>;

/** The current upgrade targets: per component and platform, the latest promoted stable build. */
export async function latestAgentVersions(ctx: RequestContext, rawQuery: LatestAgentVersionInput): Promise<{ data: AgentVersionView[] }> {
  const query = parseInput(LatestAgentVersionQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const targets = [...(await loadTargets(ctx.em)).values()].filter((t) => !query.component || t.component === query.component);
  if (targets.length === 0) return { data: [] };
  const rows = await ctx.em.find(AgentVersion, { $or: targets.map((t) => ({ version: t.version, component: t.component, os: t.os, arch: t.arch })) }, { orderBy: { component: 'asc', os: 'asc', arch: 'asc' } });
  return { data: rows.map((row) => agentVersionView(ctx.runtime.config, row)) };
}

/** Where a binary is: a redirect to the release asset, or a file this server mirrored (BINARY_SOURCE=local). */
export type AgentBinary = { checksum: string } & ({ redirect: string } | { file: string; filename: string });

/** AGENT_BINARY_DIR/<version>/<asset>: both parts must pass the rules a sync applies (semver, the asset naming convention), so neither can climb out. */
function binaryFile(config: Config, version: string, assetName: string): string {
  if (!SEMVER.test(version) || !ASSET_NAME.test(assetName)) throw notFound('Agent binary');
  return path.join(config.agentReleases.binaryDir, version, assetName);
}

async function binaryOf(config: Config, row: Pick<AgentVersion, 'version' | 'assetName' | 'url' | 'checksum'>): Promise<AgentBinary> {
  if (config.agentReleases.source === 'github') return { redirect: row.url, checksum: row.checksum };
  const file = binaryFile(config, row.version, row.assetName);
  if (!(await fs.promises.stat(file).then((stat) => stat.isFile(), () => false))) throw notFound('Agent binary');
  return { file, filename: row.assetName, checksum: row.checksum };
}

export const AgentVersionDownloadQuery = z.object({ os: OsTypeSchema, arch: archInput(), component: AgentComponentSchema.default('agent') }).strict();
export type AgentVersionDownloadInput = z.input<typeof AgentVersionDownloadQuery>;

/** Any registered build (promoted or not) of `version` (`1.4.2` or `v1.4.2`). */
export async function downloadAgentVersion(ctx: RequestContext, rawVersion: string, rawQuery: AgentVersionDownloadInput): Promise<AgentBinary> {
  const query = parseInput(AgentVersionDownloadQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const version = versionInput().safeParse(rawVersion);
  const row = version.success ? await ctx.em.findOne(AgentVersion, { version: version.data, component: query.component, os: query.os, arch: query.arch }) : null;
  if (!row) throw notFound('Agent version');
  return binaryOf(ctx.runtime.config, row);
}

export const AgentDownloadQuery = z
  .object({ component: AgentComponentSchema.default('agent'), version: versionInput().optional().describe('a promoted version; the latest by default') })
  .strict();
export type AgentDownloadInput = z.input<typeof AgentDownloadQuery>;

/** No credentials (installers, self-updating agents): only promoted stable builds are served here. */
export async function downloadAgent(ctx: RequestContext, os: OsType, rawArch: string, rawQuery: AgentDownloadInput): Promise<AgentBinary> {
  skipAuthorization(ctx, 'agent binaries: public downloads of promoted builds');
  const query = parseInput(AgentDownloadQuery, rawQuery);
  const arch = normalizeArch(rawArch);
  const row = query.version
    ? await ctx.em.findOne(AgentVersion, { version: query.version, component: query.component, os, arch, promotedAt: { $ne: null }, prerelease: false })
    : (await promotedTargets(ctx.runtime).get()).get(targetKey(query.component, os, arch));
  if (!row) throw notFound('Agent binary');
  return binaryOf(ctx.runtime.config, row);
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The one-line installer (`curl -fsSL <server>/api/v1/agents/install.sh | sh -s -- --key <enrollment key>`):
 * picks the promoted agent build for `uname -s`/`uname -m`, downloads it from this server, checks
 * its SHA-256, installs it and enrolls it. The server address is PUBLIC_URL, never the request's Host.
 */
export async function installScript(ctx: RequestContext): Promise<string> {
  skipAuthorization(ctx, 'agent install script: public');
  const targets = [...(await promotedTargets(ctx.runtime).get()).values()].filter((t) => t.component === 'agent').sort((a, b) => targetKey(a.component, a.os, a.arch).localeCompare(targetKey(b.component, b.os, b.arch)));
  // Every value from the configuration or the database is quoted: the script never runs what they hold.
  const builds = targets.map((t) => `  ${shellQuote(`${t.os}/${t.arch}`)}) VERSION=${shellQuote(t.version)}; SHA256=${shellQuote(t.checksum)} ;;`);
  return `#!/bin/sh
# rmm agent installer. Usage:
#   curl -fsSL "$SERVER/api/v1/agents/install.sh" | sh -s -- --key <enrollment key>
# --install-dir <dir> (or RMM_INSTALL_DIR) picks where the binary goes, /usr/local/bin by default;
# sudo is used only when that directory is not writable.
set -eu

SERVER=${shellQuote(ctx.runtime.config.publicUrl)}
INSTALL_DIR=\${RMM_INSTALL_DIR:-/usr/local/bin}
KEY=''

usage() { echo 'usage: install.sh --key <enrollment key> [--install-dir <dir>]' >&2; exit 2; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    --key) [ "$#" -ge 2 ] || usage; KEY=$2; shift 2 ;;
    --key=*) KEY=\${1#--key=}; shift ;;
    --install-dir) [ "$#" -ge 2 ] || usage; INSTALL_DIR=$2; shift 2 ;;
    --install-dir=*) INSTALL_DIR=\${1#--install-dir=}; shift ;;
    *) usage ;;
  esac
done
[ -n "$KEY" ] || usage

case "$(uname -s)" in
  Linux) OS=linux ;;
  Darwin) OS=macos ;;
  *) echo "unsupported operating system: $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64|amd64) ARCH=amd64 ;;
  aarch64|arm64) ARCH=arm64 ;;
  armv7l|armv7|armhf) ARCH=arm ;;
  i386|i686) ARCH=386 ;;
  *) echo "unsupported architecture: $(uname -m)" >&2; exit 1 ;;
esac

# The promoted agent builds when this script was served.
case "$OS/$ARCH" in
${builds.join('\n')}${builds.length ? '\n' : ''}  *) echo "no agent release for $OS/$ARCH" >&2; exit 1 ;;
esac

URL="$SERVER/api/v1/agents/download/$OS/$ARCH?version=$VERSION"
TMP=$(mktemp "\${TMPDIR:-/tmp}/rmm-agent.XXXXXX")
trap 'rm -f "$TMP"' EXIT
trap 'exit 1' INT TERM
echo "downloading rmm-agent $VERSION for $OS/$ARCH"
if command -v curl >/dev/null 2>&1; then
  curl -fsSL -o "$TMP" "$URL"
elif command -v wget >/dev/null 2>&1; then
  wget -q -O "$TMP" "$URL"
else
  echo 'curl or wget is required' >&2; exit 1
fi

if command -v sha256sum >/dev/null 2>&1; then
  ACTUAL=$(sha256sum "$TMP" | cut -d ' ' -f 1)
elif command -v shasum >/dev/null 2>&1; then
  ACTUAL=$(shasum -a 256 "$TMP" | cut -d ' ' -f 1)
else
  echo 'sha256sum or shasum is required' >&2; exit 1
fi
if [ "$ACTUAL" != "$SHA256" ]; then
  echo "checksum mismatch: expected $SHA256, got $ACTUAL" >&2; exit 1
fi

SUDO=''
mkdir -p "$INSTALL_DIR" 2>/dev/null || true
if [ ! -w "$INSTALL_DIR" ] && [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "$INSTALL_DIR is not writable; run as root" >&2; exit 1; }
  SUDO=sudo
  $SUDO mkdir -p "$INSTALL_DIR"
fi
BIN="$INSTALL_DIR/rmm-agent"
$SUDO cp "$TMP" "$BIN.new"
$SUDO chmod 0755 "$BIN.new"
$SUDO mv -f "$BIN.new" "$BIN"

# stdin is this script when piped from curl: the agent must not read it.
$SUDO "$BIN" enroll --server "$SERVER" --key "$KEY" </dev/null
echo "rmm-agent $VERSION installed in $INSTALL_DIR and enrolled"
`;
}

// ── promoting ───────────────────────────────────────────────────────────────────────────────────

/**
 * Agent releases are the platform's: system-scope callers who may manage devices (there is no
 * agent-versions permission). Scope is checked before the second factor, so a tenant's admin is
 * told FORBIDDEN whether or not its session has MFA.
 */
async function authorizePlatform(ctx: RequestContext, mfa: boolean): Promise<void> {
  const principal = await authorize(ctx, 'devices:write');
  if (principal.scope !== 'system') throw forbidden('Only platform administrators can manage agent versions');
  if (mfa && !principal.mfa) {
    // Records the refusal as the policy does (access.denied, reason mfa_required).
    await authorize(ctx, 'devices:write', { mfa: true });
    throw mfaRequired();
  }
}

export const PromoteAgentVersionSchema = z
  .object({ version: versionInput(), component: AgentComponentSchema.optional().describe('only this component; every component of the version by default') })
  .strict().describe('Which version (and component) to make the upgrade target.');
export type PromoteAgentVersionInput = z.input<typeof PromoteAgentVersionSchema>;
export const AgentVersionPromotionSchema = z
  .object({ version: z.string().describe('The version promoted.'), promoted: z.array(z.string()).describe('`<component>:<os>/<arch>`') })
  .meta({ title: 'AgentVersionPromotion', description: 'What a promotion made the upgrade target.' });
export type AgentVersionPromotion = z.output<typeof AgentVersionPromotionSchema>;

/**
 * Makes a version (or one of its components) the upgrade target, also when an older one is
 * promoted again to roll back: the latest promotion wins, though agents never downgrade on their
 * own. Prereleases are never promoted (400).
 */
export async function promoteAgentVersion(ctx: RequestContext, rawInput: PromoteAgentVersionInput): Promise<AgentVersionPromotion> {
  const input = parseInput(PromoteAgentVersionSchema, rawInput);
  await authorizePlatform(ctx, true);
  return withTransaction(ctx, async (tx) => {
    const rows = await tx.em.find(AgentVersion, { version: input.version, ...(input.component ? { component: input.component } : {}) }, { orderBy: { component: 'asc', os: 'asc', arch: 'asc' } });
    if (rows.length === 0) throw notFound('Agent version');
    if (rows.some((row) => row.prerelease)) throw badRequest(`${input.version} is a prerelease: prereleases are never promoted`);
    const now = tx.runtime.clock.now();
    for (const row of rows) row.promotedAt = now;
    await tx.em.flush();
    const promoted = rows.map(platformLabel);
    const component = input.component ?? null;
    await recordChange(
      tx,
      { action: 'agent_version.promote', resourceType: 'agent_version', resourceId: input.version, details: { version: input.version, component, promoted } },
      { version: input.version, component, promoted },
    );
    tx.afterCommit(() => announcePromotions(tx.runtime));
    return { version: input.version, promoted };
  });
}

// ── syncing from the releases API ───────────────────────────────────────────────────────────────

const upstreamError = (message: string) => new AppError(502, 'UPSTREAM_ERROR', message);

const ReleaseDocument = z.object({
  tag_name: z.string(),
  draft: z.boolean().optional(),
  prerelease: z.boolean().optional(),
  published_at: z.string().nullable().optional(),
  assets: z.array(
    z.object({
      name: z.string(),
      browser_download_url: z.string(),
      // A size the column cannot hold is not known.
      size: z.number().int().nonnegative().max(2 ** 31 - 1).optional().catch(undefined),
      digest: z.string().nullable().optional(),
    }),
  ),
});
type Release = z.output<typeof ReleaseDocument>;

const API_TIMEOUT_MS = 30_000;
const BINARY_TIMEOUT_MS = 300_000;
const MAX_BINARY_BYTES = 512 * 1024 * 1024;
const MAX_REDIRECTS = 5;

/**
 * One GET through the SSRF guard (https only; loopback and private addresses only with
 * ALLOW_PRIVATE_NETWORK_TARGETS), following redirects (asset downloads redirect to a storage host)
 * with each hop checked again. The token goes to the releases API's own origin only.
 */
async function fetchOutbound(ctx: RequestContext, url: string, options: { accept: string; timeoutMs: number; maxBodyBytes: number }): Promise<Response> {
  const { allowPrivateNetworkTargets, agentReleases } = ctx.runtime.config;
  const guardedFetch = createGuardedFetch({ allowPrivateNetworkTargets, timeoutMs: options.timeoutMs, maxBodyBytes: options.maxBodyBytes });
  const apiOrigin = agentReleases.releasesApiUrl ? new URL(agentReleases.releasesApiUrl).origin : null;
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw upstreamError(`The release names an invalid URL: ${url.slice(0, 200)}`);
  }
  for (let hop = 0; hop <= MAX_REDIRECTS; hop += 1) {
    const headers: Record<string, string> = { accept: options.accept, 'user-agent': 'rmm-service', 'x-github-api-version': '2022-11-28' };
    if (agentReleases.token && current.origin === apiOrigin) headers.authorization = `Bearer ${agentReleases.token}`;
    let response: Response;
    try {
      response = await guardedFetch(current, { headers });
    } catch (error) {
      const reason = error instanceof UnsafeUrlError ? `refused by the outbound guard (${error.message})` : (error as Error).message;
      throw upstreamError(`GET ${current.origin}${current.pathname} failed: ${reason}`);
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) return response;
    try {
      current = new URL(location, current);
    } catch {
      throw upstreamError(`GET ${current.origin}${current.pathname} redirected to an invalid URL`);
    }
  }
  throw upstreamError(`GET ${url.slice(0, 200)} redirected more than ${MAX_REDIRECTS} times`);
}

/**
 * The release named `version` (tag `v<version>`, else `<version>`), or the latest stable one. A
 * release the API does not have is 404; the API failing or answering something else is 502.
 */
async function fetchRelease(ctx: RequestContext, apiRoot: string, version: string | undefined): Promise<Release> {
  const paths = version ? [`/releases/tags/v${version}`, `/releases/tags/${version}`] : ['/releases/latest'];
  for (const releasePath of paths) {
    const response = await fetchOutbound(ctx, `${apiRoot}${releasePath}`, { accept: 'application/vnd.github+json', timeoutMs: API_TIMEOUT_MS, maxBodyBytes: 8 * 1024 * 1024 });
    if (response.status === 404) continue;
    if (!response.ok) throw upstreamError(`The releases API answered HTTP ${response.status}`);
    const parsed = ReleaseDocument.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw upstreamError('The releases API answered something that is not a release');
    return parsed.data;
  }
  throw version ? notFound(`Release ${version}`) : notFound('Stable release');
}

interface ReleaseAsset extends Omit<Target, 'version'> {
  size: number | null;
}

/** `sha256sum` lines: `<hex>  <name>` (or ` *<name>` in binary mode). */
function parseChecksums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^([0-9a-fA-F]{64})\s+\*?(.+?)\s*$/.exec(line);
    if (match) sums.set(path.posix.basename(match[2]!), match[1]!.toLowerCase());
  }
  return sums;
}

/**
 * The release's agent binaries with their published SHA-256 (the checksums file, else the asset's
 * `digest`); one per component and platform, the first listed when two names mean the same one
 * (`x86_64` and `amd64`).
 */
async function releaseAssets(ctx: RequestContext, release: Release): Promise<ReleaseAsset[]> {
  const checksumFile = release.assets.find((asset) => CHECKSUM_FILE.test(asset.name));
  let sums = new Map<string, string>();
  if (checksumFile) {
    const response = await fetchOutbound(ctx, checksumFile.browser_download_url, { accept: 'application/octet-stream', timeoutMs: API_TIMEOUT_MS, maxBodyBytes: 1024 * 1024 });
    if (!response.ok) throw upstreamError(`Downloading ${checksumFile.name} answered HTTP ${response.status}`);
    sums = parseChecksums(await response.text());
  }
  const assets = new Map<string, ReleaseAsset>();
  for (const asset of release.assets) {
    const match = ASSET_NAME.exec(asset.name);
    if (!match) continue;
    const digest = asset.digest?.match(/^sha256:([0-9a-fA-F]{64})$/)?.[1]?.toLowerCase();
    const checksum = sums.get(asset.name) ?? digest;
    // An agent verifies what it downloads: a binary without a published checksum is not offered.
    if (!checksum) {
      ctx.log.warn({ asset: asset.name, release: release.tag_name }, 'agent release asset has no published SHA-256; skipped');
      continue;
    }
    // The URL is handed to agents and answered as a redirect: an https URL, never anything else.
    const url = URL.parse(asset.browser_download_url);
    if (url?.protocol !== 'https:') throw upstreamError(`Release asset ${asset.name} is not served over https`);
    const os = match[2] === 'darwin' ? 'macos' : (match[2] as OsType);
    const found: ReleaseAsset = { component: match[1] as AgentComponent, os, arch: normalizeArch(match[3]!), assetName: asset.name, url: url.href, checksum, size: asset.size ?? null };
    if (!assets.has(platformLabel(found))) assets.set(platformLabel(found), found);
  }
  return [...assets.values()];
}

const sha256 = (bytes: Buffer) => crypto.createHash('sha256').update(bytes).digest('hex');

/**
 * BINARY_SOURCE=local: copies the binaries to AGENT_BINARY_DIR/<version>/, each checked against its
 * published checksum before it is kept (a mismatch is 502 and leaves nothing behind). Files already
 * there with the right checksum are not downloaded again.
 */
async function mirrorBinaries(ctx: RequestContext, version: string, assets: ReleaseAsset[]): Promise<void> {
  const dir = path.join(ctx.runtime.config.agentReleases.binaryDir, version);
  await fs.promises.mkdir(dir, { recursive: true });
  for (const asset of assets) {
    const file = binaryFile(ctx.runtime.config, version, asset.assetName);
    const existing = await fs.promises.readFile(file).catch(() => null);
    if (existing && sha256(existing) === asset.checksum) continue;
    const response = await fetchOutbound(ctx, asset.url, { accept: 'application/octet-stream', timeoutMs: BINARY_TIMEOUT_MS, maxBodyBytes: MAX_BINARY_BYTES });
    if (!response.ok) throw upstreamError(`Downloading ${asset.assetName} answered HTTP ${response.status}`);
    const bytes = Buffer.from(await response.arrayBuffer());
    if (sha256(bytes) !== asset.checksum) throw upstreamError(`${asset.assetName} does not match its published SHA-256 checksum`);
    const partial = `${file}.${crypto.randomBytes(6).toString('hex')}.part`;
    try {
      await fs.promises.writeFile(partial, bytes, { mode: 0o644 });
      await fs.promises.rename(partial, file);
    } finally {
      await fs.promises.rm(partial, { force: true });
    }
  }
}

export const SyncAgentReleaseQuery = z.object({ version: versionInput().optional().describe('the latest stable release by default') }).strict();
export type SyncAgentReleaseInput = z.input<typeof SyncAgentReleaseQuery>;
export const AgentReleaseSyncSchema = z
  .object({
    version: z.string().describe('The release synced.'),
    prerelease: z.boolean().describe('Whether it is a prerelease (never promoted).'),
    synced: z.array(z.string()).describe('`<component>:<os>/<arch>` of every binary registered'),
    promoted: z.array(z.string()).describe('those this sync promoted (AGENT_AUTO_PROMOTE)'),
  })
  .meta({ title: 'AgentReleaseSync', description: 'What syncing a release from the releases API registered.' });
export type AgentReleaseSync = z.output<typeof AgentReleaseSyncSchema>;

const sameTime = (a: Date, b: Date) => a.getTime() === b.getTime();

/**
 * Registers a release's binaries from the releases API (again: a re-sync refreshes URLs and
 * checksums and keeps promotions; one that changes nothing writes no audit row). With
 * AGENT_AUTO_PROMOTE, a stable release becomes the upgrade target of each of its platforms, unless
 * a newer version is already promoted there (syncing an old release never rolls the fleet back;
 * `promote` does that on purpose). Prereleases are registered, never promoted.
 */
export async function syncAgentRelease(ctx: RequestContext, rawQuery: SyncAgentReleaseInput): Promise<AgentReleaseSync> {
  const query = parseInput(SyncAgentReleaseQuery, rawQuery);
  await authorizePlatform(ctx, false);
  const { releasesApiUrl, source, autoPromote } = ctx.runtime.config.agentReleases;
  if (!releasesApiUrl) throw badRequest('Agent releases are not configured: set AGENT_RELEASES_REPO or AGENT_RELEASES_API_URL');
  const release = await fetchRelease(ctx, releasesApiUrl, query.version);
  if (release.draft) throw upstreamError(`Release ${release.tag_name.slice(0, 60)} is a draft`);
  const version = release.tag_name.replace(/^v/, '');
  if (version.length > 50 || !SEMVER.test(version)) throw upstreamError(`Release tag ${release.tag_name.slice(0, 60)} is not a semantic version`);
  if (query.version && version !== query.version) throw upstreamError(`Asked for ${query.version}, the releases API answered ${release.tag_name.slice(0, 60)}`);
  const assets = await releaseAssets(ctx, release);
  if (assets.length === 0) throw upstreamError(`Release ${release.tag_name} has no agent binaries (assets named rmm-<component>-<os>-<arch>, with checksums)`);
  if (source === 'local') await mirrorBinaries(ctx, version, assets);
  const prerelease = release.prerelease === true || isPrerelease(version);
  const published = release.published_at ? new Date(release.published_at) : null;

  return withTransaction(ctx, async (tx) => {
    // Serializes syncs of one version, so two at once cannot both insert its rows.
    await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`agent-version-sync:${version}`]);
    const existing = new Map((await tx.em.find(AgentVersion, { version })).map((row) => [platformLabel(row), row]));
    const current = autoPromote && !prerelease ? await loadTargets(tx.em) : new Map<string, Target>();
    const now = tx.runtime.clock.now();
    const publishedAt = published && !Number.isNaN(published.getTime()) ? published : now;
    const synced: string[] = [];
    const changed: string[] = [];
    const promoted: string[] = [];
    for (const asset of assets) {
      const fields = { assetName: asset.assetName, url: asset.url, checksum: asset.checksum, size: asset.size, prerelease, publishedAt };
      let row = existing.get(platformLabel(asset));
      if (!row) {
        row = tx.em.create(AgentVersion, { version, component: asset.component, os: asset.os, arch: asset.arch, ...fields });
        changed.push(platformLabel(row));
      } else if (
        row.assetName !== fields.assetName ||
        row.url !== fields.url ||
        row.checksum !== fields.checksum ||
        (row.size === null ? null : Number(row.size)) !== fields.size ||
        row.prerelease !== fields.prerelease ||
        !sameTime(row.publishedAt, fields.publishedAt)
      ) {
        // A release republished with other binaries: the registered ones follow it.
        Object.assign(row, fields);
        changed.push(platformLabel(row));
      }
      synced.push(platformLabel(row));
      const target = current.get(targetKey(row.component, row.os, row.arch));
      if (autoPromote && !prerelease && !row.promotedAt && (!target || (compareVersions(version, target.version) ?? 1) >= 0)) {
        row.promotedAt = now;
        promoted.push(platformLabel(row));
      }
    }
    synced.sort();
    changed.sort();
    promoted.sort();
    // Idempotent: a sync that finds everything as registered is not a mutation (no audit row, no event).
    if (changed.length === 0 && promoted.length === 0) return { version, prerelease, synced, promoted };
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'agent_version.sync', resourceType: 'agent_version', resourceId: version, details: { version, tag: release.tag_name, prerelease, synced, changed, promoted } },
      { version, prerelease, changed, promoted },
    );
    // A promoted build's URL or checksum may have changed too.
    tx.afterCommit(() => announcePromotions(tx.runtime));
    return { version, prerelease, synced, promoted };
  });
}
