import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A GitHub-compatible releases API on loopback (HTTPS with the test certificate, which the server's
 * outbound guard requires), the way the agent-versions service reads it:
 *
 * - `GET <apiUrl>/releases/latest`: the most recently published release that is neither a draft nor
 *   a prerelease (404 when there is none);
 * - `GET <apiUrl>/releases/tags/<tag>`: that release (404 when unknown);
 * - each asset's `browser_download_url` on the API host answers 302 to a second host (the storage,
 *   another origin, as GitHub hands downloads to its object storage), which serves the bytes;
 * - a `checksums.txt` asset in `sha256sum` format, or the assets' `digest: "sha256:…"`.
 */

export const REPO = 'acme/rmm-agent';

export const sha256 = (content: Buffer | string) => crypto.createHash('sha256').update(content).digest('hex');

export interface FakeBinary {
  /** the asset's name, e.g. `rmm-agent-linux-amd64` */
  name: string;
  content: Buffer | string;
  /** the size the release announces, when it is not the content's */
  size?: number;
}

export interface FakeRelease {
  tag: string;
  prerelease?: boolean;
  draft?: boolean;
  binaries: FakeBinary[];
  /** how the checksums are published: a `checksums.txt` asset (default), each asset's `digest`, or not at all */
  checksums?: 'file' | 'digest' | 'none';
  /** binaries served with other bytes than those their published checksum was taken of */
  corrupt?: string[];
  /** assets that are not agent binaries (served, to be ignored) */
  extras?: string[];
  /** binaries whose `browser_download_url` the release names with plain http */
  plainHttp?: string[];
}

export interface RecordedRequest {
  host: 'api' | 'storage';
  path: string;
  authorization: string | undefined;
}

export interface ReleasesApi {
  /** what AGENT_RELEASES_API_URL names: `https://127.0.0.1:<port>/repos/acme/rmm-agent` */
  apiUrl: string;
  /** publishes a release (the latest stable one is the last published) */
  publish(release: FakeRelease): void;
  /** `up`; `error`: the API answers 503 to everything; `down`: both hosts drop every connection without an answer */
  mode: 'up' | 'error' | 'down';
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const fixture = (name: string) => fs.readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: https.Server; origin: string }> {
  const server = https.createServer({ cert: fixture('server.pem'), key: fixture('server.key') }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

export async function startReleasesApi(): Promise<ReleasesApi> {
  const releases: (FakeRelease & { publishedAt: string })[] = [];
  const requests: RecordedRequest[] = [];
  const state = { mode: 'up' as ReleasesApi['mode'] };

  /** What each asset serves: the binaries (corrupted ones altered), the checksums file, the extras. */
  const files = (release: FakeRelease): Map<string, Buffer> => {
    const served = new Map<string, Buffer>();
    for (const binary of release.binaries) {
      const bytes = Buffer.from(binary.content);
      served.set(binary.name, release.corrupt?.includes(binary.name) ? Buffer.concat([bytes, Buffer.from('\n# tampered\n')]) : bytes);
    }
    if ((release.checksums ?? 'file') === 'file') served.set('checksums.txt', Buffer.from(release.binaries.map((b) => `${sha256(b.content)}  ${b.name}\n`).join('')));
    for (const extra of release.extras ?? []) served.set(extra, Buffer.from(`${extra}\n`));
    return served;
  };

  const document = (release: FakeRelease & { publishedAt: string }, apiOrigin: string) => ({
    tag_name: release.tag,
    name: release.tag,
    draft: release.draft ?? false,
    prerelease: release.prerelease ?? false,
    published_at: release.publishedAt,
    assets: [...files(release)].map(([name, bytes]) => {
      const binary = release.binaries.find((b) => b.name === name);
      return {
        name,
        browser_download_url: `${release.plainHttp?.includes(name) ? apiOrigin.replace(/^https:/, 'http:') : apiOrigin}/${REPO}/releases/download/${encodeURIComponent(release.tag)}/${encodeURIComponent(name)}`,
        size: binary?.size ?? bytes.length,
        digest: release.checksums === 'digest' && binary ? `sha256:${sha256(binary.content)}` : null,
      };
    }),
  });

  const record = (host: RecordedRequest['host'], req: IncomingMessage) => {
    requests.push({ host, path: req.url ?? '/', authorization: req.headers.authorization });
    if (state.mode === 'down') {
      req.socket.destroy();
      return false;
    }
    return true;
  };

  const storage = await listen((req, res) => {
    if (!record('storage', req)) return;
    const match = /^\/objects\/([^/]+)\/([^/?]+)$/.exec(req.url ?? '');
    const release = match && releases.find((r) => r.tag === decodeURIComponent(match[1]!));
    const bytes = release && files(release).get(decodeURIComponent(match![2]!));
    if (!bytes) return json(res, 404, { message: 'Not Found' });
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length }).end(bytes);
  });

  const api = await listen((req, res) => {
    if (!record('api', req)) return;
    if (state.mode === 'error') return json(res, 503, { message: 'Service Unavailable' });
    const url = new URL(req.url ?? '/', api.origin);
    const prefix = `/repos/${REPO}/releases/`;
    if (url.pathname === `${prefix}latest`) {
      const latest = releases.filter((r) => !r.draft && !r.prerelease).at(-1);
      return latest ? json(res, 200, document(latest, api.origin)) : json(res, 404, { message: 'Not Found' });
    }
    if (url.pathname.startsWith(`${prefix}tags/`)) {
      const release = releases.find((r) => r.tag === decodeURIComponent(url.pathname.slice(`${prefix}tags/`.length)));
      return release ? json(res, 200, document(release, api.origin)) : json(res, 404, { message: 'Not Found' });
    }
    const download = new RegExp(`^/${REPO}/releases/download/([^/]+)/([^/]+)$`).exec(url.pathname);
    if (download) return res.writeHead(302, { location: `${storage.origin}/objects/${download[1]}/${download[2]}` }).end();
    json(res, 404, { message: 'Not Found' });
  });

  return {
    apiUrl: `${api.origin}/repos/${REPO}`,
    publish: (release) => void releases.push({ ...release, publishedAt: new Date(Date.now() + releases.length * 1000).toISOString() }),
    get mode() {
      return state.mode;
    },
    set mode(mode) {
      state.mode = mode;
    },
    requests,
    async close() {
      for (const { server } of [api, storage]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
