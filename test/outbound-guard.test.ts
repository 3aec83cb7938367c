import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import {
  UnsafeUrlError,
  checkOutboundUrl,
  createGuardedFetch,
  guardedRequest,
  isUnsafeAddress,
  PinnedConnectionPool,
  type GuardOptions,
  type UnsafeUrlReason,
} from '../src/net/outbound-guard.js';
import { eventually } from './support/eventually.js';

const fixture = (name: string) => fs.readFileSync(new URL(`./fixtures/tls/${name}`, import.meta.url));

describe('isUnsafeAddress', () => {
  // [address, unsafe with the switch off, unsafe with the switch on]
  const table: Array<[string, boolean, boolean]> = [
    // public
    ['93.184.216.34', false, false],
    ['8.8.8.8', false, false],
    ['1.1.1.1', false, false],
    ['172.15.255.255', false, false],
    ['172.32.0.0', false, false],
    ['100.63.255.255', false, false],
    ['100.128.0.0', false, false],
    ['198.17.255.255', false, false],
    ['198.20.0.0', false, false],
    ['2606:4700::1111', false, false],
    ['2001:4860:4860::8888', false, false],
    ['2a00:1450:4001:82a::200e', false, false],
    // RFC 1918
    ['10.0.0.1', true, false],
    ['10.255.255.255', true, false],
    ['172.16.0.1', true, false],
    ['172.31.255.255', true, false],
    ['192.168.1.1', true, false],
    // loopback
    ['127.0.0.1', true, false],
    ['127.255.255.254', true, false],
    ['::1', true, false],
    ['0:0:0:0:0:0:0:1', true, false],
    ['[::1]', true, false],
    // link-local
    ['169.254.169.254', true, false],
    ['fe80::1', true, false],
    ['FE80::1', true, false],
    ['fe80::1%eth0', true, false],
    ['febf:ffff::1', true, false],
    // CGNAT
    ['100.64.0.1', true, false],
    ['100.127.255.255', true, false],
    // unique local
    ['fc00::1', true, false],
    ['fd12:3456:789a::1', true, false],
    // documentation
    ['192.0.2.1', true, true],
    ['198.51.100.7', true, true],
    ['203.0.113.9', true, true],
    ['2001:db8::1', true, true],
    // unspecified
    ['0.0.0.0', true, true],
    ['0.1.2.3', true, true],
    ['::', true, true],
    ['0:0:0:0:0:0:0:0', true, true],
    // multicast and broadcast
    ['224.0.0.1', true, true],
    ['239.255.255.250', true, true],
    ['ff02::1', true, true],
    ['ff05::1:3', true, true],
    ['255.255.255.255', true, true],
    // benchmarking, IETF protocol assignments, reserved
    ['198.18.0.1', true, true],
    ['198.19.255.255', true, true],
    ['192.0.0.8', true, true],
    ['240.0.0.1', true, true],
    ['250.1.2.3', true, true],
    // IPv4-mapped: the embedded address decides
    ['::ffff:127.0.0.1', true, false],
    ['::FFFF:7f00:1', true, false],
    ['0:0:0:0:0:ffff:192.168.0.1', true, false],
    ['::ffff:169.254.169.254', true, false],
    ['::ffff:0.0.0.0', true, true],
    ['::ffff:224.0.0.1', true, true],
    ['::ffff:8.8.8.8', false, false],
    // IPv4-translated (RFC 2765 ::ffff:0:a.b.c.d): the embedded address decides
    ['::ffff:0:7f00:1', true, false],
    ['::ffff:0:127.0.0.1', true, false],
    ['0:0:0:0:ffff:0:a00:1', true, false],
    ['::ffff:0:a9fe:a9fe', true, false],
    ['::ffff:0:0.0.0.0', true, true],
    ['::ffff:0:192.0.2.1', true, true],
    ['::ffff:0:8.8.8.8', false, false],
    // NAT64 well-known prefix: the embedded address decides; local-use prefix is always refused
    ['64:ff9b::127.0.0.1', true, false],
    ['64:ff9b::a00:1', true, false],
    ['64:ff9b::192.0.2.1', true, true],
    ['64:ff9b::8.8.8.8', false, false],
    ['64:ff9b::a9fe:a9fe', true, false],
    ['64:ff9b::192.168.0.1', true, false],
    ['64:ff9b::100.64.0.1', true, false],
    ['64:ff9b:1::8.8.8.8', true, true],
    // IPv4-compatible (deprecated)
    ['::127.0.0.1', true, true],
    ['::8.8.8.8', true, true],
    // 6to4: refused when the embedded address is
    ['2002:7f00:1::1', true, false],
    ['2002:a9fe:a9fe::', true, false],
    ['2002:c000:201::1', true, true],
    ['2002:808:808::1', false, false],
    // Teredo
    ['2001::1', true, true],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true, true],
    // not IP addresses at all
    ['', true, true],
    ['localhost', true, true],
    ['1.2.3', true, true],
    ['::ffff:1.2.3.256', true, true],
    ['1::2::3', true, true],
  ];

  test.each(table)('%s → unsafe=%s (switch off), unsafe=%s (switch on)', (address, unsafeWhenOff, unsafeWhenOn) => {
    expect(isUnsafeAddress(address, false)).toBe(unsafeWhenOff);
    expect(isUnsafeAddress(address, true)).toBe(unsafeWhenOn);
  });
});

async function expectUnsafe(promise: Promise<unknown>, reason: UnsafeUrlReason): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UnsafeUrlError);
  expect((error as UnsafeUrlError).reason).toBe(reason);
}

function fixedResolver(addresses: string[]) {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    return addresses;
  };
  return { calls, resolve };
}

describe('checkOutboundUrl', () => {
  const strict = (resolve = fixedResolver(['93.184.216.34']).resolve): GuardOptions => ({ allowPrivateNetworkTargets: false, resolve });
  const relaxed = (resolve = fixedResolver(['127.0.0.1']).resolve): GuardOptions => ({ allowPrivateNetworkTargets: true, resolve });

  test('rejects malformed URLs', async () => {
    await expectUnsafe(checkOutboundUrl('not a url', strict()), 'invalid_url');
    await expectUnsafe(checkOutboundUrl('https://', strict()), 'invalid_url');
  });

  test.each(['http://example.com/', 'http://127.0.0.1/', 'ftp://example.com/', 'file:///etc/passwd', 'wss://example.com/'])(
    'rejects non-https %s even with private targets allowed',
    async (url) => {
      await expectUnsafe(checkOutboundUrl(url, strict()), 'not_https');
      await expectUnsafe(checkOutboundUrl(url, relaxed()), 'not_https');
    },
  );

  test.each(['https://localhost/', 'https://LocalHost./', 'https://app.localhost/', 'https://printer.local/', 'https://NAS.Local./x'])(
    'rejects local name %s without resolving it',
    async (url) => {
      const resolver = fixedResolver(['93.184.216.34']);
      await expectUnsafe(checkOutboundUrl(url, strict(resolver.resolve)), 'blocked_hostname');
      expect(resolver.calls).toEqual([]);
    },
  );

  test('local names are allowed with the switch on, but their addresses are still checked', async () => {
    await expect(checkOutboundUrl('https://localhost:8443/x', relaxed())).resolves.toMatchObject({ addresses: ['127.0.0.1'] });
    await expectUnsafe(checkOutboundUrl('https://localhost/', relaxed(fixedResolver(['0.0.0.0']).resolve)), 'blocked_address');
  });

  test.each([
    'https://127.0.0.1/',
    'https://10.1.2.3:8443/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::1]/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[::ffff:0:7f00:1]/',
    'https://[::ffff:0:169.254.169.254]/',
    'https://[64:ff9b::127.0.0.1]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://0x7f000001/',
    'https://0177.0.0.1/',
    'https://127.1/',
  ])('rejects literal address host %s without resolving it', async (url) => {
    const resolver = fixedResolver(['93.184.216.34']);
    await expectUnsafe(checkOutboundUrl(url, strict(resolver.resolve)), 'blocked_address');
    expect(resolver.calls).toEqual([]);
  });

  test.each(['https://0.0.0.0/', 'https://0/', 'https://[::]/', 'https://224.0.0.1/', 'https://255.255.255.255/', 'https://[ff02::1]/', 'https://192.0.2.10/'])(
    'still rejects %s with the switch on',
    async (url) => {
      await expectUnsafe(checkOutboundUrl(url, relaxed()), 'blocked_address');
    },
  );

  test('accepts public literal addresses and pins them', async () => {
    const resolver = fixedResolver([]);
    await expect(checkOutboundUrl('https://93.184.216.34/hook', strict(resolver.resolve))).resolves.toMatchObject({
      addresses: ['93.184.216.34'],
    });
    await expect(checkOutboundUrl('https://[2606:4700::1111]/', strict(resolver.resolve))).resolves.toMatchObject({
      addresses: ['2606:4700::1111'],
    });
    expect(resolver.calls).toEqual([]);
  });

  test('rejects a host when any one of its addresses is unsafe', async () => {
    await expectUnsafe(checkOutboundUrl('https://mixed.example/', strict(fixedResolver(['93.184.216.34', '10.0.0.5']).resolve)), 'blocked_address');
    await expectUnsafe(
      checkOutboundUrl('https://mixed.example/', strict(fixedResolver(['2606:4700::1111', '::ffff:127.0.0.1']).resolve)),
      'blocked_address',
    );
  });

  test('rejects hosts that do not resolve', async () => {
    const notFound = async (hostname: string): Promise<string[]> => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    await expectUnsafe(checkOutboundUrl('https://nowhere.example/', strict(notFound)), 'unresolvable');
    await expectUnsafe(checkOutboundUrl('https://nowhere.example/', strict(fixedResolver([]).resolve)), 'unresolvable');
    await expectUnsafe(checkOutboundUrl('https://nowhere.example/', relaxed(fixedResolver([]).resolve)), 'unresolvable');
  });

  test('accepts a public host and returns every resolved address', async () => {
    const resolver = fixedResolver(['93.184.216.34', '2606:4700::1111']);
    const result = await checkOutboundUrl('https://Example.COM/path?q=1', strict(resolver.resolve));
    expect(result.url.hostname).toBe('example.com');
    expect(result.addresses).toEqual(['93.184.216.34', '2606:4700::1111']);
    expect(resolver.calls).toEqual(['example.com']);
  });
});

interface Received {
  method: string;
  url: string;
  /** the TLS server name (SNI) the client sent */
  servername: string | false | null;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('requests against a real HTTPS server', () => {
  const received: Received[] = [];
  let connections = 0;
  let port = 0;
  const server = https.createServer({ cert: fixture('server.pem'), key: fixture('server.key') }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', servername: (req.socket as TLSSocket).servername, headers: req.headers, body });
      switch (req.url) {
        case '/hook':
          res.writeHead(202, { 'content-type': 'text/plain', 'x-receiver': 'yes' }).end('accepted');
          break;
        case '/redirect':
          res.writeHead(302, { location: '/landing' }).end();
          break;
        case '/big':
          res.writeHead(200).end('a'.repeat(5000));
          break;
        case '/hang':
          break; // never answers
        case '/.well-known/openid-configuration':
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.end(JSON.stringify({ issuer: `https://idp.test:${port}` }));
          break;
        case '/token':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ contentType: req.headers['content-type'], body }));
          break;
        case '/empty':
          res.writeHead(204).end();
          break;
        default:
          res.writeHead(200).end('landed');
      }
    });
  });
  /** this test's connections, server side */
  let sockets: Duplex[] = [];
  server.on('connection', (socket) => {
    connections++;
    sockets.push(socket);
  });

  /** Resolves the test hostnames to the server; anything else would have to come from real DNS. */
  const toServer = fixedResolver(['127.0.0.1']);
  const allowPrivate: GuardOptions = { allowPrivateNetworkTargets: true, resolve: toServer.resolve };

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received.length = 0;
    connections = 0;
    sockets = [];
  });

  test('POST reaches the server with method, headers and body; Host is the URL host', async () => {
    const response = await guardedRequest(
      `https://receiver.test:${port}/hook`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': 'sha256=abc', Host: 'evil.example' },
        body: '{"event":"ping"}',
        timeoutMs: 5000,
      },
      allowPrivate,
    );
    expect(response).toMatchObject({ status: 202, body: 'accepted', truncated: false, elapsedMs: expect.any(Number) });
    expect(response.headers['x-receiver']).toBe('yes');
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: 'POST', url: '/hook', body: '{"event":"ping"}' });
    expect(received[0].headers).toMatchObject({
      host: `receiver.test:${port}`,
      'content-type': 'application/json',
      'x-signature': 'sha256=abc',
      'content-length': '16',
    });
  });

  test('an IP literal target verifies against the certificate IP SAN', async () => {
    const response = await guardedRequest(`https://127.0.0.1:${port}/hook`, { timeoutMs: 5000 }, allowPrivate);
    expect(response.status).toBe(202);
    expect(received[0]).toMatchObject({ method: 'GET', url: '/hook' });
  });

  test('TLS verification stays on: a name missing from the certificate fails', async () => {
    await expect(guardedRequest(`https://other.test:${port}/hook`, { timeoutMs: 5000 }, allowPrivate)).rejects.toMatchObject({
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    expect(received).toEqual([]);
  });

  test('a redirect is returned as-is and not followed', async () => {
    const response = await guardedRequest(`https://receiver.test:${port}/redirect`, { timeoutMs: 5000 }, allowPrivate);
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('/landing');
    expect(received.map((request) => request.url)).toEqual(['/redirect']);
  });

  test('a server that never answers triggers the timeout', async () => {
    await expect(guardedRequest(`https://receiver.test:${port}/hang`, { timeoutMs: 300 }, allowPrivate)).rejects.toThrow(
      'Request timed out after 300 ms',
    );
    // It timed out waiting for the answer, not for the connection.
    expect(received.map((request) => request.url)).toEqual(['/hang']);
  });

  test('the timeout also covers a DNS lookup that never finishes', async () => {
    const neverResolves = () => new Promise<string[]>(() => {});
    await expect(
      guardedRequest(`https://receiver.test:${port}/hook`, { timeoutMs: 300 }, { allowPrivateNetworkTargets: true, resolve: neverResolves }),
    ).rejects.toThrow('Request timed out after 300 ms');
    expect(connections).toBe(0);
  });

  test('the response body is capped at maxBodyBytes', async () => {
    const response = await guardedRequest(`https://receiver.test:${port}/big`, { timeoutMs: 5000, maxBodyBytes: 1000 }, allowPrivate);
    expect(response.body).toBe('a'.repeat(1000));
    expect(response.truncated).toBe(true);
  });

  test('DNS rebinding: the connection goes to the address that was checked, resolved once', async () => {
    const lookups: string[] = [];
    // The first answer passes the check; a second lookup would get an address where nothing listens.
    const rebinding = async (hostname: string) => {
      lookups.push(hostname);
      return lookups.length === 1 ? ['127.0.0.1'] : ['127.0.0.2'];
    };
    const response = await guardedRequest(
      `https://receiver.test:${port}/hook`,
      { method: 'POST', body: 'x', timeoutMs: 5000 },
      { allowPrivateNetworkTargets: true, resolve: rebinding },
    );
    expect(response.status).toBe(202);
    expect(lookups).toEqual(['receiver.test']);
    expect(received).toHaveLength(1);
    expect(received[0].headers.host).toBe(`receiver.test:${port}`);
  });

  test('a connection pool reuses a connection only for the host it was opened to, sends that host as SNI, and closes the idle connections of the agent it drops', async () => {
    const pool = new PinnedConnectionPool(1);
    const post = (host: string) => guardedRequest(`https://${host}:${port}/hook`, { method: 'POST', body: '{}', timeoutMs: 5000, connections: pool }, allowPrivate);
    try {
      for (let i = 0; i < 3; i++) expect((await post('receiver.test')).status).toBe(202);
      expect(connections).toBe(1);
      // The same address under another name: a connection of its own. The pool holds one agent, so the first one's is closed.
      expect((await post('idp.test')).status).toBe(202);
      expect(connections).toBe(2);
      // At once, not when it would idle out (4 s).
      await eventually(() => sockets[0]!.closed, 1000, 'the dropped agent’s idle connection to close');
      expect(sockets[1]!.closed).toBe(false);
      expect((await post('receiver.test')).status).toBe(202);
      expect(connections).toBe(3);
      expect(received.map((request) => request.servername)).toEqual(['receiver.test', 'receiver.test', 'receiver.test', 'idp.test', 'receiver.test']);
    } finally {
      pool.close();
    }
  });

  test('with the switch off the same request is refused before any connection', async () => {
    const lookups: string[] = [];
    const rebinding = async (hostname: string) => {
      lookups.push(hostname);
      return lookups.length === 1 ? ['127.0.0.1'] : ['93.184.216.34'];
    };
    await expectUnsafe(
      guardedRequest(`https://receiver.test:${port}/hook`, { method: 'POST', body: 'x', timeoutMs: 5000 }, { allowPrivateNetworkTargets: false, resolve: rebinding }),
      'blocked_address',
    );
    await expectUnsafe(guardedRequest(`https://127.0.0.1:${port}/hook`, { timeoutMs: 5000 }, { allowPrivateNetworkTargets: false }), 'blocked_address');
    await expectUnsafe(guardedRequest(`http://receiver.test:${port}/hook`, { timeoutMs: 5000 }, allowPrivate), 'not_https');
    expect(connections).toBe(0);
    expect(received).toEqual([]);
  });

  describe('createGuardedFetch', () => {
    const guardedFetch = createGuardedFetch({ ...allowPrivate, timeoutMs: 5000 });

    test('works like fetch for a JSON document', async () => {
      const response = await guardedFetch(`https://idp.test:${port}/.well-known/openid-configuration`, {
        method: 'GET',
        headers: { accept: 'application/json' },
        redirect: 'manual',
      });
      expect(response).toBeInstanceOf(Response);
      expect(response.status).toBe(200);
      expect(response.ok).toBe(true);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('Cache-Control')).toBe('no-store');
      expect(await response.json()).toEqual({ issuer: `https://idp.test:${port}` });
      expect(received[0].headers).toMatchObject({ host: `idp.test:${port}`, accept: 'application/json' });
    });

    test('sends a URLSearchParams body form-encoded, as fetch does', async () => {
      const response = await guardedFetch(new URL(`https://idp.test:${port}/token`), {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', code: 'a b' }),
      });
      expect(await response.json()).toEqual({
        contentType: 'application/x-www-form-urlencoded;charset=UTF-8',
        body: 'grant_type=authorization_code&code=a+b',
      });
    });

    test('returns redirects and empty responses without following them', async () => {
      const redirect = await guardedFetch(`https://idp.test:${port}/redirect`, { redirect: 'follow' });
      expect(redirect.status).toBe(302);
      expect(redirect.headers.get('location')).toBe('/landing');
      const empty = await guardedFetch(`https://idp.test:${port}/empty`);
      expect(empty.status).toBe(204);
      expect(received.map((request) => request.url)).toEqual(['/redirect', '/empty']);
    });

    test('respects an abort signal', async () => {
      const controller = new AbortController();
      const pending = guardedFetch(`https://idp.test:${port}/hang`, { signal: controller.signal });
      // Aborted while waiting for the answer (the 5 s timeout is far off): the caller's reason comes back.
      await eventually(() => received.length === 1, 5000, 'the request to reach the server');
      controller.abort(new Error('caller gave up'));
      await expect(pending).rejects.toThrow('caller gave up');
    });

    test('refuses unsafe targets', async () => {
      const strictFetch = createGuardedFetch({ allowPrivateNetworkTargets: false, resolve: toServer.resolve });
      await expectUnsafe(strictFetch(`https://idp.test:${port}/.well-known/openid-configuration`), 'blocked_address');
      expect(connections).toBe(0);
    });
  });
});
