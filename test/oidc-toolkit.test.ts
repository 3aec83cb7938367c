import { createHash, randomUUID } from 'node:crypto';
import {
  buildAuthorizationUrl,
  completeAuthorization,
  createLoginSecrets,
  discoverOidcEndpoints,
  type OidcClientSettings,
  type OidcFetch,
} from '../src/auth/oidc-toolkit.js';
import { Browser, loginAtIdp } from './support/browser.js';
import { startOidcIdp, type TestOidcIdp } from './support/oidc-idp.js';

// Never served: the browser stops as soon as the IdP redirects here.
const REDIRECT_URI = 'https://app.example.test/callback';
const isCallback = (location: string) => location.startsWith(`${REDIRECT_URI}?`);

let idp: TestOidcIdp;

beforeAll(async () => {
  idp = await startOidcIdp();
  idp.setAccount('alice', {
    email: 'alice@example.test',
    email_verified: true,
    name: 'Alice Example',
    given_name: 'Alice',
    family_name: 'Example',
    groups: ['admins', 'ops'],
  });
});

afterAll(() => idp.close());

afterEach(() => idp.tamperIdToken(null));

/** A fresh client registered at the IdP, with settings discovered from it. */
async function registerClient(): Promise<OidcClientSettings> {
  const clientId = `client-${randomUUID()}`;
  const clientSecret = randomUUID();
  idp.addClient({ clientId, clientSecret, redirectUris: [REDIRECT_URI] });
  return { ...(await discoverOidcEndpoints(idp.issuer)), clientId, clientSecret, scopes: 'openid profile email groups' };
}

/** Runs the browser part of a login as `accountId`; returns the secrets and the callback URL the IdP produced. */
async function loginAs(settings: OidcClientSettings, accountId: string) {
  const secrets = createLoginSecrets();
  const authorizationUrl = buildAuthorizationUrl(settings, { redirectUri: REDIRECT_URI, ...secrets });
  const callbackUrl = await loginAtIdp(new Browser(), authorizationUrl, accountId, isCallback);
  const callbackInput = {
    callbackUrl,
    expectedState: secrets.state,
    expectedNonce: secrets.nonce,
    codeVerifier: secrets.codeVerifier,
    redirectUri: REDIRECT_URI,
  };
  return { secrets, callbackUrl, callbackInput };
}

/** Global fetch that records the URLs it was asked for, to prove requests go through the injected fetch. */
function recordingFetch(): { fetchImpl: OidcFetch; urls: string[] } {
  const urls: string[] = [];
  return { urls, fetchImpl: (url, init) => (urls.push(url), fetch(url, init)) };
}

describe('discoverOidcEndpoints', () => {
  test('fills the endpoints from the discovery document, through the injected fetch', async () => {
    const { fetchImpl, urls } = recordingFetch();
    const endpoints = await discoverOidcEndpoints(idp.issuer, fetchImpl);
    expect(endpoints).toEqual({
      issuer: idp.issuer,
      authorizationUrl: `${idp.issuer}/auth`,
      tokenUrl: `${idp.issuer}/token`,
      userInfoUrl: `${idp.issuer}/me`,
      jwksUrl: `${idp.issuer}/jwks`,
    });
    expect(urls).toEqual([`${idp.issuer}/.well-known/openid-configuration`]);
  });

  test('throws for an issuer without a discovery document', async () => {
    await expect(discoverOidcEndpoints(`${idp.issuer}/no-such-tenant`)).rejects.toThrow(/OIDC discovery failed/);
  });

  test('throws for an unreachable issuer', async () => {
    await expect(discoverOidcEndpoints('https://127.0.0.1:1')).rejects.toThrow(/OIDC discovery failed/);
  });
});

describe('login secrets and authorization URL', () => {
  test('createLoginSecrets returns fresh values with a matching S256 challenge', () => {
    const a = createLoginSecrets();
    const b = createLoginSecrets();
    expect(a.state).not.toBe(b.state);
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.codeVerifier).not.toBe(b.codeVerifier);
    expect(a.state.length).toBeLessThanOrEqual(64);
    expect(a.nonce.length).toBeLessThanOrEqual(64);
    expect(a.codeVerifier).toMatch(/^[A-Za-z0-9\-._~]{43,128}$/);
    expect(a.codeChallenge).toBe(createHash('sha256').update(a.codeVerifier).digest('base64url'));
  });

  test('buildAuthorizationUrl requests a PKCE code flow at the authorization endpoint', async () => {
    const settings = await registerClient();
    const secrets = createLoginSecrets();
    const url = new URL(buildAuthorizationUrl(settings, { redirectUri: REDIRECT_URI, ...secrets }));
    expect(`${url.origin}${url.pathname}`).toBe(settings.authorizationUrl);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: settings.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile email groups',
      state: secrets.state,
      nonce: secrets.nonce,
      code_challenge: secrets.codeChallenge,
      code_challenge_method: 'S256',
    });
  });
});

describe('completeAuthorization', () => {
  test('a full login returns the subject, ID token and UserInfo claims, and tokens', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    const { fetchImpl, urls } = recordingFetch();

    const result = await completeAuthorization(settings, callbackInput, fetchImpl);

    expect(result.subject).toBe('alice');
    expect(result.idTokenClaims).toMatchObject({ sub: 'alice', iss: idp.issuer, aud: settings.clientId, nonce: callbackInput.expectedNonce });
    expect(result.userInfo).toEqual({
      sub: 'alice',
      email: 'alice@example.test',
      email_verified: true,
      name: 'Alice Example',
      given_name: 'Alice',
      family_name: 'Example',
      groups: ['admins', 'ops'],
    });
    expect(result.claims).toMatchObject({ ...result.idTokenClaims, ...result.userInfo });
    expect(result.tokens.accessToken).toEqual(expect.any(String));
    expect(result.tokens.refreshToken).toBeNull();
    expect(result.tokens.expiresAt!.getTime()).toBeGreaterThan(Date.now());
    // Token exchange, ID token keys and UserInfo all went through the injected fetch.
    expect(urls).toEqual(expect.arrayContaining([settings.tokenUrl, settings.jwksUrl, settings.userInfoUrl]));
  });

  test('without a UserInfo endpoint only the ID token claims are used', async () => {
    const settings = { ...(await registerClient()), userInfoUrl: null };
    const { callbackInput } = await loginAs(settings, 'alice');
    const result = await completeAuthorization(settings, callbackInput);
    expect(result.userInfo).toBeNull();
    expect(result.claims).toEqual(result.idTokenClaims);
    expect(result.subject).toBe('alice');
  });

  // The IdP checks PKCE and client authentication before consuming the code, so the same callback still
  // succeeds with the right value: that proves the wrong value alone caused the rejection.
  test('the PKCE verifier is checked by the IdP', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    await expect(completeAuthorization(settings, { ...callbackInput, codeVerifier: createLoginSecrets().codeVerifier }))
      .rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(completeAuthorization(settings, callbackInput)).resolves.toMatchObject({ subject: 'alice' });
  });

  test('a state mismatch is rejected', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    await expect(completeAuthorization(settings, { ...callbackInput, expectedState: createLoginSecrets().state }))
      .rejects.toMatchObject({ code: 'OAUTH_INVALID_RESPONSE', cause: { message: expect.stringMatching(/"state"/) } });
    await expect(completeAuthorization(settings, callbackInput)).resolves.toMatchObject({ subject: 'alice' });
  });

  test('an ID token with another nonce is rejected', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    idp.tamperIdToken('nonce');
    await expect(completeAuthorization(settings, callbackInput)).rejects.toMatchObject({
      code: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
      cause: { cause: { claim: 'nonce' } },
    });
  });

  test('an ID token for another audience is rejected', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    idp.tamperIdToken('audience');
    await expect(completeAuthorization(settings, callbackInput)).rejects.toMatchObject({
      code: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
      cause: { cause: { claim: 'aud' } },
    });
  });

  test('an ID token not signed by the IdP\'s keys is rejected', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    idp.tamperIdToken('signature');
    await expect(completeAuthorization(settings, callbackInput)).rejects.toMatchObject({
      code: 'OAUTH_INVALID_RESPONSE',
      cause: { message: 'JWT signature verification failed' },
    });
  });

  test('a wrong client secret is rejected by the IdP', async () => {
    const settings = await registerClient();
    const { callbackInput } = await loginAs(settings, 'alice');
    await expect(completeAuthorization({ ...settings, clientSecret: 'wrong-secret' }, callbackInput))
      .rejects.toMatchObject({ status: 401, cause: [{ parameters: { error: 'invalid_client' } }] });
    await expect(completeAuthorization(settings, callbackInput)).resolves.toMatchObject({ subject: 'alice' });
  });
});
