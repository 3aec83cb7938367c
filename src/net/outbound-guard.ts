/**
 * Shared SSRF guard for every server-side request to a user-supplied URL (webhooks, OIDC, SAML metadata).
 * A URL is accepted only if it is HTTPS and its host is, or resolves exclusively to, public unicast addresses;
 * the request then connects to exactly the addresses that were checked, so DNS rebinding cannot redirect it.
 */
import dns from 'node:dns';
import https from 'node:https';
import net from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

export interface GuardOptions {
  /** Lets private, loopback, link-local, ULA, CGNAT and localhost targets through (ALLOW_PRIVATE_NETWORK_TARGETS). */
  allowPrivateNetworkTargets: boolean;
  /** injectable DNS resolver for tests; default uses dns.promises.lookup(host, { all: true, verbatim: true }) */
  resolve?: (hostname: string) => Promise<string[]>;
}

export type UnsafeUrlReason = 'invalid_url' | 'not_https' | 'blocked_hostname' | 'blocked_address' | 'unresolvable';

export class UnsafeUrlError extends Error {
  constructor(
    readonly reason: UnsafeUrlReason,
    message: string,
  ) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

/**
 * 'private' targets are let through by allowPrivateNetworkTargets; 'forbidden' ones never are.
 */
type AddressClass = 'public' | 'private' | 'forbidden';

interface Rule<T> {
  base: T;
  mask: T;
  verdict: AddressClass;
}

function parseIPv4(ip: string): number | null {
  if (!net.isIPv4(ip)) return null;
  return ip.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

/** Expands any valid textual IPv6 form (compressed, dotted IPv4 tail) into a 128-bit integer. */
function parseIPv6(ip: string): bigint | null {
  if (!net.isIPv6(ip)) return null;
  let text = ip;
  const tailStart = text.lastIndexOf(':') + 1;
  const tail = parseIPv4(text.slice(tailStart));
  if (tail !== null) text = `${text.slice(0, tailStart)}${(tail >>> 16).toString(16)}:${(tail & 0xffff).toString(16)}`;
  const [head, rest] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const groups = [...headGroups, ...Array(8 - headGroups.length - restGroups.length).fill('0'), ...restGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function ipv4Rule(cidr: string, verdict: AddressClass): Rule<number> {
  const [address, bits] = cidr.split('/');
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return { base: (parseIPv4(address)! & mask) >>> 0, mask, verdict };
}

function ipv6Rule(cidr: string, verdict: AddressClass): Rule<bigint> {
  const [address, bits] = cidr.split('/');
  const mask = ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - Number(bits))) - 1n);
  return { base: parseIPv6(address)! & mask, mask, verdict };
}

const IPV4_RULES = [
  ipv4Rule('0.0.0.0/8', 'forbidden'), // unspecified / "this network"
  ipv4Rule('10.0.0.0/8', 'private'),
  ipv4Rule('100.64.0.0/10', 'private'), // CGNAT, RFC 6598
  ipv4Rule('127.0.0.0/8', 'private'), // loopback
  ipv4Rule('169.254.0.0/16', 'private'), // link-local, includes cloud metadata endpoints
  ipv4Rule('172.16.0.0/12', 'private'),
  ipv4Rule('192.0.0.0/24', 'forbidden'), // IETF protocol assignments
  ipv4Rule('192.0.2.0/24', 'forbidden'), // documentation, RFC 5737
  ipv4Rule('192.168.0.0/16', 'private'),
  ipv4Rule('198.18.0.0/15', 'forbidden'), // benchmarking
  ipv4Rule('198.51.100.0/24', 'forbidden'), // documentation
  ipv4Rule('203.0.113.0/24', 'forbidden'), // documentation
  ipv4Rule('224.0.0.0/4', 'forbidden'), // multicast
  ipv4Rule('240.0.0.0/4', 'forbidden'), // reserved, includes broadcast 255.255.255.255
];

const IPV6_RULES = [
  ipv6Rule('::/128', 'forbidden'), // unspecified
  ipv6Rule('::1/128', 'private'), // loopback
  ipv6Rule('::/96', 'forbidden'), // deprecated IPv4-compatible ::a.b.c.d; nothing legitimate lives here
  ipv6Rule('64:ff9b:1::/48', 'forbidden'), // NAT64 local-use
  ipv6Rule('2001::/32', 'forbidden'), // Teredo
  ipv6Rule('2001:db8::/32', 'forbidden'), // documentation
  ipv6Rule('fc00::/7', 'private'), // unique local
  ipv6Rule('fe80::/10', 'private'), // link-local
  ipv6Rule('ff00::/8', 'forbidden'), // multicast
];

// Prefixes that carry an IPv4 address the traffic ends up at, so the embedded address decides.
const IPV4_EMBEDDED_LOW32 = [
  ipv6Rule('::ffff:0:0/96', 'public'), // IPv4-mapped ::ffff:a.b.c.d
  ipv6Rule('::ffff:0:0:0/96', 'public'), // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT)
  ipv6Rule('64:ff9b::/96', 'public'), // NAT64 well-known prefix
];
const SIX_TO_FOUR = ipv6Rule('2002::/16', 'public');

function classifyIPv4(address: number): AddressClass {
  return IPV4_RULES.find((rule) => ((address & rule.mask) >>> 0) === rule.base)?.verdict ?? 'public';
}

function classifyIPv6(address: bigint): AddressClass {
  const matches = (rule: Rule<bigint>) => (address & rule.mask) === rule.base;
  if (IPV4_EMBEDDED_LOW32.some(matches)) return classifyIPv4(Number(address & 0xffffffffn));
  if (matches(SIX_TO_FOUR)) return classifyIPv4(Number((address >> 80n) & 0xffffffffn));
  return IPV6_RULES.find(matches)?.verdict ?? 'public';
}

function classifyAddress(ip: string): AddressClass {
  // Tolerate URL-style brackets and zone ids (fe80::1%eth0); the zone does not change where the address points.
  const bare = ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const v4 = parseIPv4(bare);
  if (v4 !== null) return classifyIPv4(v4);
  const v6 = parseIPv6(bare);
  if (v6 !== null) return classifyIPv6(v6);
  return 'forbidden'; // not an IP address at all: fail closed
}

/** True when `ip` must not be contacted. Anything that is not a valid IP address is unsafe. */
export function isUnsafeAddress(ip: string, allowPrivate: boolean): boolean {
  const verdict = classifyAddress(ip);
  return verdict === 'forbidden' || (verdict === 'private' && !allowPrivate);
}

function isLocalHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.local');
}

/** url.hostname keeps the brackets around IPv6 literals; sockets, TLS and DNS want them off. */
function bareHostname(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

async function defaultResolve(hostname: string): Promise<string[]> {
  const results = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return results.map((result) => result.address);
}

/** Parses and validates the URL, resolves the host, checks every address. Returns the pinned addresses. Throws UnsafeUrlError. */
export async function checkOutboundUrl(rawUrl: string, options: GuardOptions): Promise<{ url: URL; addresses: string[] }> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new UnsafeUrlError('invalid_url', 'URL is not valid');
  }
  if (url.protocol !== 'https:') throw new UnsafeUrlError('not_https', 'URL must use https');

  // The WHATWG parser has already turned numeric forms like 2130706433 or 0x7f.1 into dotted IPv4 here.
  const host = bareHostname(url);
  if (net.isIP(host)) {
    if (isUnsafeAddress(host, options.allowPrivateNetworkTargets)) {
      throw new UnsafeUrlError('blocked_address', `address ${host} is not allowed`);
    }
    return { url, addresses: [host] };
  }
  if (isLocalHostname(host) && !options.allowPrivateNetworkTargets) {
    throw new UnsafeUrlError('blocked_hostname', `host ${host} is not allowed`);
  }

  let addresses: string[];
  try {
    addresses = await (options.resolve ?? defaultResolve)(host);
  } catch {
    throw new UnsafeUrlError('unresolvable', `host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw new UnsafeUrlError('unresolvable', `host ${host} does not resolve`);
  const blocked = addresses.find((address) => isUnsafeAddress(address, options.allowPrivateNetworkTargets));
  if (blocked !== undefined) {
    throw new UnsafeUrlError('blocked_address', `host ${host} resolves to ${blocked}, which is not allowed`);
  }
  return { url, addresses };
}

export interface GuardedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** true when the body was cut off at maxBodyBytes */
  truncated: boolean;
  /** ms */
  elapsedMs: number;
}

export interface GuardedRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** default 1 MiB */
  maxBodyBytes?: number;
  /** aborts the request with the signal's reason */
  signal?: AbortSignal;
  /** keep-alive connections to reuse (per checked address set); default: a fresh connection per request */
  connections?: PinnedConnectionPool;
}

const FREE_SOCKET_IDLE_MS = 4000;

/** An agent's idle connections; those under way finish (and then idle out). */
function closeIdle(agent: https.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/**
 * Keep-alive connections for repeated requests to the same destinations (webhook deliveries): one
 * `https.Agent` per host, port and set of checked addresses. The URL is still checked before every
 * request, and a pooled socket is only reused by a request whose check approved exactly the
 * addresses that socket was opened to: DNS rebinding cannot redirect it, and a changed DNS answer
 * (or a destination that is no longer allowed) never rides on an old connection. TLS is verified
 * against the host (the agent's own socket key adds the servername). Beyond `maxAgents`, the least
 * recently used agent is dropped and its idle connections closed.
 */
export class PinnedConnectionPool {
  private readonly agents = new Map<string, https.Agent>();
  private closed = false;

  constructor(private readonly maxAgents = 256) {}

  agentFor(host: string, port: number, addresses: string[]): https.Agent | false {
    if (this.closed) return false;
    const key = `${host}\n${port}\n${[...addresses].sort().join(',')}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key); // re-inserted below: the map's order is the recency order
    } else {
      // LIFO hands out the most recently used socket, so spare ones idle out: after FREE_SOCKET_IDLE_MS, or sooner when
      // the receiver's Keep-Alive header says so, before a receiver would close them under a request.
      agent = new https.Agent({ keepAlive: true, scheduling: 'lifo', maxFreeSockets: 64, timeout: FREE_SOCKET_IDLE_MS });
      for (const [oldest, old] of this.agents) {
        if (this.agents.size < this.maxAgents) break;
        this.agents.delete(oldest);
        closeIdle(old);
      }
    }
    this.agents.set(key, agent);
    return agent;
  }

  /** Closes every pooled connection (requests under way too); later requests use a fresh connection each. */
  close(): void {
    this.closed = true;
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

interface RawResponse {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
}

function rejectOnAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function exchange(url: URL, addresses: string[], init: GuardedRequestInit, signal: AbortSignal): Promise<RawResponse> {
  const host = bareHostname(url);
  const maxBodyBytes = init.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // Hand the socket only the addresses checkOutboundUrl approved instead of letting it resolve the name again.
  const pinnedLookup: net.LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, addresses.map((address) => ({ address, family: net.isIP(address) })));
    else callback(null, addresses[0], net.isIP(addresses[0]));
  };
  // The Host header must name the checked host, so a caller-supplied one is dropped.
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'host'));

  return new Promise<RawResponse>((resolve, reject) => {
    const request = https.request({
      host,
      port: url.port ? Number(url.port) : 443,
      path: `${url.pathname}${url.search}`,
      method: init.method ?? 'GET',
      headers: { ...headers, host: url.host },
      lookup: pinnedLookup,
      // Certificates are checked against the URL's hostname; an empty servername sends no SNI for IP literals.
      servername: net.isIP(host) ? '' : host,
      rejectUnauthorized: true,
      // Without a pool, a fresh agent per request. A pool keys its agents by the addresses just checked, so a
      // reused socket is always connected to one of them.
      agent: init.connections ? init.connections.agentFor(host, url.port ? Number(url.port) : 443, addresses) : false,
    });
    const onAbort = () => {
      reject(signal.reason);
      request.destroy();
    };
    const settle = () => signal.removeEventListener('abort', onAbort);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    request.on('error', (error) => {
      settle();
      reject(error);
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let received = 0;
      const done = (truncated: boolean) => {
        settle();
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          headers: response.headers,
          body: Buffer.concat(chunks),
          truncated,
        });
      };
      response.on('data', (chunk: Buffer) => {
        const room = maxBodyBytes - received;
        if (chunk.length <= room) {
          chunks.push(chunk);
          received += chunk.length;
          return;
        }
        chunks.push(chunk.subarray(0, room));
        done(true);
        request.destroy();
      });
      response.on('end', () => done(false));
      response.on('close', () => {
        if (response.complete) return;
        settle();
        reject(new Error('Connection closed before the response was complete'));
      });
    });
    request.end(init.body);
  });
}

async function send(rawUrl: string, init: GuardedRequestInit, options: GuardOptions): Promise<RawResponse & { elapsedMs: number }> {
  const started = performance.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error(`Request timed out after ${init.timeoutMs} ms`)), init.timeoutMs);
  const signal = init.signal ? AbortSignal.any([deadline.signal, init.signal]) : deadline.signal;
  try {
    const { url, addresses } = await rejectOnAbort(checkOutboundUrl(rawUrl, options), signal);
    const response = await exchange(url, addresses, init, signal);
    return { ...response, elapsedMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Validates the URL, then performs one request to an address that was just checked, keeping the original hostname
 * for TLS verification and the Host header. Never follows redirects. The timeout covers DNS, connect and body.
 */
export async function guardedRequest(rawUrl: string, init: GuardedRequestInit, options: GuardOptions): Promise<GuardedResponse> {
  const response = await send(rawUrl, init, options);
  return {
    status: response.status,
    headers: response.headers,
    body: response.body.toString('utf8'),
    truncated: response.truncated,
    elapsedMs: response.elapsedMs,
  };
}

// Statuses for which the Response constructor refuses a body.
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A fetch-compatible function (openid-client's customFetch) built on the guard. Redirects are returned, never followed.
 * A body larger than maxBodyBytes is an error here, since a cut-off JSON document is useless to the caller.
 */
export function createGuardedFetch(
  options: GuardOptions & { timeoutMs?: number; maxBodyBytes?: number },
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return async (input, init) => {
    // Request normalizes headers, method and every body type (URLSearchParams, streams...) exactly as fetch would.
    const request = new Request(input, init);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const response = await send(
      request.url,
      { method: request.method, headers: Object.fromEntries(request.headers), body, timeoutMs, maxBodyBytes, signal: request.signal },
      options,
    );
    if (response.truncated) throw new Error(`Response body exceeded ${maxBodyBytes} bytes`);

    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
    }
    return new Response(NULL_BODY_STATUSES.has(response.status) ? null : response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
}
