import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AgentVersion, type AgentComponent } from '../../../entities/agent-version.js';
import type { OsType } from '../../../entities/device.js';
import type { RequestContext } from '../../auth/context.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, badRequest, notFound } from '../../errors.js';
import { createGuardedFetch, UnsafeUrlError } from '../../net/outbound-guard.js';
import { parseInput } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import {
  ASSET_NAME,
  CHECKSUM_FILE,
  SEMVER,
  announcePromotions,
  authorizePlatform,
  binaryFile,
  compareVersions,
  isPrerelease,
  loadTargets,
  normalizeArch,
  platformLabel,
  targetKey,
  versionInput,
  type Target,
} from './agent-versions.js';

// Agent releases synced from a GitHub-compatible releases API: the release's assets registered as
// agent versions, their binaries mirrored (agent-versions.ts promotes and hands them out).

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
