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
import { badRequest, forbidden, mfaRequired, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { onePer } from '../../memo.js';
import type { Runtime } from '../../runtime.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { OsTypeSchema } from './devices.js';
import { updatesDeferredDeviceIds } from '../maintenance/api.js';
import { SEMVER, agentBuilds, normalizeArch, targetKey, versionInput, type Target } from './agent-builds.js';

export { SEMVER, normalizeArch, targetKey, versionInput, type Target } from './agent-builds.js';

// Agent releases (spec, Versioning 4–8): binaries registered from a GitHub-compatible releases API
// (agent-releases.ts), promoted to upgrade targets, handed to agents on heartbeat (`upgradeTo`) and to installers.

// ── versions ────────────────────────────────────────────────────────────────────────────────────

/** Numeric identifiers of any length, compared as numbers (semver forbids leading zeros). */
const compareDigits = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/**
 * Semver precedence of two versions: negative, 0 or positive; null when either is not a semantic
 * version (such a version is never "older", so it is never offered an upgrade). Build metadata is
 * ignored; a prerelease ranks below its release.
 */
export function compareVersions(a: string, b: string): number | null {
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
export const isPrerelease = (version: string) => SEMVER.exec(version)?.[4] !== undefined;

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
export const ASSET_NAME = new RegExp(`^rmm-(${AGENT_COMPONENTS.join('|')})-(linux|windows|macos|darwin)-([a-z0-9_]{1,20})(?:\\.exe)?$`);
export const CHECKSUM_FILE = /^(checksums\.txt|sha256sums(\.txt)?)$/i;

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
export const platformLabel = (row: Pick<AgentVersion, 'component' | 'os' | 'arch'>) => `${row.component}:${row.os}/${row.arch}`;

// ── promoted targets, cached per instance ───────────────────────────────────────────────────────

export async function loadTargets(em: EntityManager): Promise<Map<string, Target>> {
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
export function announcePromotions(runtime: Runtime): void {
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
 * The heartbeat's `upgradeTo`: the build the device is pinned to (a staged rollout's) while it runs
 * another version, else the agent's promoted build for the device's platform when it is newer than
 * `reportedVersion` and the device updates itself (`autoUpdate`); either way only when it is not
 * updating already, its update window is open, and no maintenance occurrence defers its updates.
 * Usually no query at all: the targets are cached, only devices in maintenance ask about their
 * occurrences, and only pinned devices not yet on their version read their build.
 */
export async function upgradeFor(
  ctx: RequestContext,
  device: Pick<Device, 'id' | 'autoUpdate' | 'status' | 'osType' | 'architecture' | 'orgId' | 'pinnedAgentVersion'>,
  reportedVersion: string,
): Promise<UpgradeTo | null> {
  if (device.status === 'updating' || !device.osType || !device.architecture) return null;
  const arch = normalizeArch(device.architecture);
  const mayUpdate = async () =>
    updateWindowOpen(await effectiveUpdateWindow(ctx, device.orgId), ctx.runtime.clock.now()) && !(device.status === 'maintenance' && (await updatesDeferredDeviceIds(ctx, [device.id])).has(device.id));
  let target: Target | undefined;
  if (device.pinnedAgentVersion) {
    // A pin is an explicit order: it holds against autoUpdate and may go to an older version. Its
    // build is read only once the window lets the device update (a pinned device waiting asks no more).
    if (device.pinnedAgentVersion === reportedVersion || !(await mayUpdate())) return null;
    target = (await agentBuilds(ctx.em as EntityManager, device.pinnedAgentVersion)).get(targetKey('agent', device.osType, arch));
  } else {
    if (!device.autoUpdate) return null;
    target = (await promotedTargets(ctx.runtime).get()).get(targetKey('agent', device.osType, arch));
    if (!target || !((compareVersions(target.version, reportedVersion) ?? 0) > 0) || !(await mayUpdate())) return null;
  }
  if (!target) return null;
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
export function binaryFile(config: Config, version: string, assetName: string): string {
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
export async function authorizePlatform(ctx: RequestContext, mfa: boolean): Promise<void> {
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
