import type { TestApp } from './app.js';

/** How a test calls the API: as nobody, with a Bearer token, or with an API key. */
export type As = { token: string } | { apiKey: string } | null;

export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

function authHeaders(as: As): Record<string, string> {
  if (!as) return {};
  return 'token' in as ? { authorization: `Bearer ${as.token}` } : { 'x-api-key': as.apiKey };
}

/** REST client for /api/v1 over real HTTP. */
export function rest(app: TestApp, as: As = null) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> => {
    const res = await fetch(`${app.url}/api/v1${path}`, {
      method,
      redirect: 'manual',
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...authHeaders(as), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    get: (path: string, headers?: Record<string, string>) => call('GET', path, undefined, headers),
    post: (path: string, body: unknown = {}, headers?: Record<string, string>) => call('POST', path, body, headers),
    put: (path: string, body: unknown = {}, headers?: Record<string, string>) => call('PUT', path, body, headers),
    patch: (path: string, body: unknown = {}, headers?: Record<string, string>) => call('PATCH', path, body, headers),
    delete: (path: string, headers?: Record<string, string>) => call('DELETE', path, undefined, headers),
  };
}

/** GraphQL over HTTP POST /graphql. */
export async function gql<T = any>(app: TestApp, as: As, query: string, variables?: Record<string, unknown>): Promise<HttpResult<{ data?: T; errors?: { message: string; extensions?: { code?: string } }[] }>> {
  const res = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authHeaders(as) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as never, headers: res.headers };
}

/** The one-time token in an invitation link. */
export const inviteToken = (inviteUrl: string): string => new URL(inviteUrl).searchParams.get('token')!;

/** A password login that must succeed; answers the session. */
export async function loginOk(app: TestApp, email: string, password: string, headers?: Record<string, string>) {
  const res = await rest(app).post('/auth/login', { email, password }, headers);
  expect(res.status).toBe(200);
  return res.body as { accessToken: string; refreshToken: string; expiresIn: number; user: any };
}
