// A real OpenID Provider (oidc-provider) for tests, over HTTPS with the fixture certificate. Login and
// consent are one scripted form: POST /interaction/:uid/login with `login=<accountId>` signs that account
// in and grants every requested scope.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type JWTHeaderParameters } from 'jose';
// @ts-expect-error -- oidc-provider ships no type declarations; the small part used here is typed below.
import Provider from 'oidc-provider';
// @ts-expect-error -- as above; the stock in-memory adapter is reused for everything except clients.
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

export interface TestOidcIdp {
  /** `https://localhost:<port>` */
  issuer: string;
  close(): Promise<void>;
  /** Registers a confidential client (client_secret_basic, authorization_code); usable immediately. */
  addClient(c: { clientId: string; clientSecret: string; redirectUris: string[] }): void;
  setAccount(accountId: string, claims: TestAccountClaims): void;
  /**
   * Tampers with the ID token of the next token responses: 'nonce' / 'audience' change that claim and re-sign
   * with the IdP's real key; 'signature' keeps the claims but signs with a foreign key under the IdP's `kid`.
   * null restores normal behaviour.
   */
  tamperIdToken(mode: IdTokenTamperMode | null): void;
}

export type IdTokenTamperMode = 'nonce' | 'audience' | 'signature';

export interface TestAccountClaims {
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
  groups?: string[];
}

// The slice of oidc-provider's (untyped) API this harness touches.
interface KoaContext {
  path: string;
  method: string;
  req: IncomingMessage;
  res: ServerResponse;
  status: number;
  type: string;
  body: unknown;
  redirect(url: string): void;
}
interface InteractionDetails {
  uid: string;
  params: { client_id: string; scope: string };
  session?: { accountId: string };
}
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionResult(req: IncomingMessage, res: ServerResponse, result: object, options: { mergeWithLastSubmission: boolean }): Promise<string>;
  Grant: new (init: { accountId: string; clientId: string }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
}

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/tls');

export async function startOidcIdp(): Promise<TestOidcIdp> {
  const clients = new Map<string, Record<string, unknown>>();
  const accounts = new Map<string, TestAccountClaims>();
  let tamperMode: IdTokenTamperMode | null = null;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const { privateKey: foreignKey } = await generateKeyPair('RS256');
  const signingJwk = { ...(await exportJWK(privateKey)), kid: 'test-idp-key', alg: 'RS256', use: 'sig' };

  // The issuer needs the port, so listen first and attach the provider's handler afterwards.
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  const server = createServer(
    { cert: readFileSync(path.join(tlsDir, 'server.pem')), key: readFileSync(path.join(tlsDir, 'server.key')) },
    (req, res) => handler(req, res),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const issuer = `https://localhost:${(server.address() as AddressInfo).port}`;

  const memoryAdapter = createMemoryAdapter();
  const provider: OidcProvider = new Provider(issuer, {
    // Static `clients` are fixed at construction; serving them from a map lets tests add clients any time.
    // Registration is disabled, so `find` is the only client adapter method oidc-provider calls.
    adapter: (model: string) => (model === 'Client' ? { find: async (id: string) => clients.get(id) } : memoryAdapter(model)),
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    features: { devInteractions: { enabled: false } },
    findAccount: async (_ctx: unknown, sub: string) => {
      const claims = accounts.get(sub);
      return claims && { accountId: sub, claims: async () => ({ sub, ...claims }) };
    },
    // Explicit TTLs keep oidc-provider from logging "you SHOULD change it" notices.
    ttl: { AccessToken: 3600, IdToken: 3600, Interaction: 600, Session: 3600, Grant: 3600 },
  });

  provider.use(async (ctx, next) => {
    const interaction = /^\/interaction\/[^/]+(\/login)?$/.exec(ctx.path);
    if (interaction) {
      await (interaction[1] ? finishLogin(ctx) : showLoginForm(ctx));
      return;
    }
    await next();
    if (ctx.path === '/token' && tamperMode) await tamperTokenResponse(ctx, tamperMode);
  });

  async function showLoginForm(ctx: KoaContext): Promise<void> {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    ctx.type = 'html';
    ctx.body = `<!DOCTYPE html><html><body><h1>Test IdP sign-in</h1>
<form method="post" action="/interaction/${details.uid}/login">
<input type="text" name="login" value="${escapeHtml(details.session?.accountId ?? '')}">
<button type="submit">Sign in</button>
</form></body></html>`;
  }

  async function finishLogin(ctx: KoaContext): Promise<void> {
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      return;
    }
    const accountId = (await readForm(ctx.req)).get('login') ?? '';
    if (!accounts.has(accountId)) {
      ctx.status = 400;
      ctx.type = 'html';
      ctx.body = `<p>Unknown account ${escapeHtml(accountId)}</p>`;
      return;
    }
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    // Consent is part of the login: grant everything the client asked for, so no consent prompt follows.
    const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    const grantId = await grant.save();
    const returnTo = await provider.interactionResult(
      ctx.req,
      ctx.res,
      { login: { accountId }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
    ctx.status = 303;
    ctx.redirect(returnTo);
  }

  async function tamperTokenResponse(ctx: KoaContext, mode: IdTokenTamperMode): Promise<void> {
    const body = ctx.body as { id_token?: string } | undefined;
    if (!body?.id_token) return;
    const claims = decodeJwt(body.id_token);
    if (mode === 'nonce') claims.nonce = 'tampered-nonce';
    if (mode === 'audience') claims.aud = 'some-other-client';
    const header = decodeProtectedHeader(body.id_token) as JWTHeaderParameters;
    body.id_token = await new SignJWT(claims)
      .setProtectedHeader(header)
      .sign(mode === 'signature' ? foreignKey : privateKey);
  }

  handler = provider.callback();

  return {
    issuer,
    addClient({ clientId, clientSecret, redirectUris }) {
      clients.set(clientId, {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      });
    },
    setAccount(accountId, claims) {
      accounts.set(accountId, claims);
    },
    tamperIdToken(mode) {
      tamperMode = mode;
    },
    async close() {
      // fetch keeps connections alive; drop them or close() waits for their idle timeout.
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
