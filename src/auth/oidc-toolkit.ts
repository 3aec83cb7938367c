// Protocol-only OpenID Connect relying-party helpers on top of openid-client 6: discovery, login secrets,
// authorization URL and the code exchange. No storage and no HTTP server here; every outbound request goes
// through the caller's fetch so production can route it through the SSRF guard.
import { createHash } from 'node:crypto';
import * as client from 'openid-client';

export interface OidcEndpoints {
  issuer: string;
  authorizationUrl: string;
  tokenUrl: string;
  userInfoUrl: string | null;
  jwksUrl: string;
}

export interface OidcClientSettings extends OidcEndpoints {
  clientId: string;
  clientSecret: string;
  /** Space separated, e.g. `openid profile email`. */
  scopes: string;
}

export type OidcFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface OidcLoginSecrets {
  state: string;
  nonce: string;
  codeVerifier: string;
  codeChallenge: string;
}

export interface OidcAuthorizationResult {
  subject: string;
  /** ID token claims overlaid by the UserInfo claims. */
  claims: Record<string, unknown>;
  idTokenClaims: Record<string, unknown>;
  userInfo: Record<string, unknown> | null;
  tokens: { accessToken: string; refreshToken: string | null; expiresAt: Date | null };
}

// Stored endpoints carry no `id_token_signing_alg_values_supported`, and openid-client would then accept
// RS256 only. Allow every asymmetric JWS algorithm it supports (never HS* or none) so IdPs signing with
// ES256/PS256/EdDSA keep working; the key itself still has to come from the IdP's JWKS.
const ID_TOKEN_SIGNING_ALGS = [
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'Ed25519', 'EdDSA',
];

/** Fetches `<issuer>/.well-known/openid-configuration`; throws on failure or an unusable document. */
export async function discoverOidcEndpoints(issuer: string, fetchImpl?: OidcFetch): Promise<OidcEndpoints> {
  let metadata: client.ServerMetadata;
  try {
    // discovery() also checks that the document's `issuer` equals the requested one. The client id is
    // required by the API but irrelevant here: only the server metadata is kept.
    const config = await client.discovery(new URL(issuer), 'discovery', undefined, undefined, {
      algorithm: 'oidc',
      ...(fetchImpl ? { [client.customFetch]: fetchImpl } : {}),
    });
    metadata = config.serverMetadata();
  } catch (error) {
    throw new Error(`OIDC discovery failed for ${issuer}: ${(error as Error).message}`, { cause: error });
  }
  const { authorization_endpoint, token_endpoint, userinfo_endpoint, jwks_uri } = metadata;
  if (!authorization_endpoint || !token_endpoint || !jwks_uri) {
    throw new Error(`OIDC discovery document of ${issuer} lacks authorization_endpoint, token_endpoint or jwks_uri`);
  }
  return {
    issuer: metadata.issuer,
    authorizationUrl: authorization_endpoint,
    tokenUrl: token_endpoint,
    userInfoUrl: userinfo_endpoint ?? null,
    jwksUrl: jwks_uri,
  };
}

/** Fresh per-login values: state (43 chars), nonce (43 chars), PKCE verifier (43 chars) and its S256 challenge. */
export function createLoginSecrets(): OidcLoginSecrets {
  const codeVerifier = client.randomPKCECodeVerifier();
  return { state: client.randomState(), nonce: client.randomNonce(), codeVerifier, codeChallenge: pkceChallenge(codeVerifier) };
}

/** The S256 challenge of a PKCE verifier. */
export function pkceChallenge(codeVerifier: string): string {
  // openid-client's calculatePKCECodeChallenge is async (WebCrypto); node:crypto keeps this synchronous.
  return createHash('sha256').update(codeVerifier).digest('base64url');
}

export function buildAuthorizationUrl(
  settings: OidcClientSettings,
  input: { redirectUri: string; state: string; nonce: string; codeChallenge: string },
): string {
  return client.buildAuthorizationUrl(createConfiguration(settings), {
    response_type: 'code',
    redirect_uri: input.redirectUri,
    scope: settings.scopes,
    state: input.state,
    nonce: input.nonce,
    code_challenge: input.codeChallenge,
    code_challenge_method: 'S256',
  }).href;
}

/**
 * Validates the callback (state, error responses), exchanges the code with the PKCE verifier, verifies the
 * ID token (signature via JWKS, issuer, audience, expiry, nonce) and, when a UserInfo endpoint is known,
 * fetches UserInfo and checks its `sub` matches the ID token. Throws on any failure.
 */
export async function completeAuthorization(
  settings: OidcClientSettings,
  input: { callbackUrl: string; expectedState: string; expectedNonce: string; codeVerifier: string; redirectUri: string },
  fetchImpl?: OidcFetch,
): Promise<OidcAuthorizationResult> {
  const config = createConfiguration(settings, fetchImpl);

  // openid-client sends the callback URL minus its query as `redirect_uri`. Rebuild it from the registered
  // redirect URI so a callback URL reconstructed behind a proxy (other host/scheme) cannot break the exchange.
  // (Consequently a redirect URI must not carry a query string of its own.)
  const currentUrl = new URL(input.redirectUri);
  currentUrl.search = new URL(input.callbackUrl).search;

  const response = await client.authorizationCodeGrant(config, currentUrl, {
    expectedState: input.expectedState,
    expectedNonce: input.expectedNonce,
    pkceCodeVerifier: input.codeVerifier,
    idTokenExpected: true,
  });
  const idToken = response.claims();
  if (!idToken) throw new Error('OIDC token response carried no ID token');
  const idTokenClaims: Record<string, unknown> = { ...idToken };

  const userInfo = settings.userInfoUrl
    ? { ...(await client.fetchUserInfo(config, response.access_token, idToken.sub)) }
    : null;

  return {
    subject: idToken.sub,
    claims: { ...idTokenClaims, ...userInfo },
    idTokenClaims,
    userInfo,
    tokens: {
      accessToken: response.access_token,
      refreshToken: response.refresh_token ?? null,
      expiresAt: response.expires_in === undefined ? null : new Date(Date.now() + response.expires_in * 1000),
    },
  };
}

// Built from the stored (possibly admin-edited) endpoints instead of re-discovering on every login.
// client_secret_basic is what oidc-provider (and most IdPs) register by default for confidential clients;
// openid-client would otherwise default to client_secret_post.
// openid-client trusts an ID token from the token endpoint on the strength of TLS alone. Because the token
// endpoint is stored (and editable) separately from the issuer, also verify the signature against the
// issuer's JWKS, so only tokens actually signed by the IdP are accepted.
function createConfiguration(settings: OidcClientSettings, fetchImpl?: OidcFetch): client.Configuration {
  const config = new client.Configuration(
    {
      issuer: settings.issuer,
      authorization_endpoint: settings.authorizationUrl,
      token_endpoint: settings.tokenUrl,
      userinfo_endpoint: settings.userInfoUrl ?? undefined,
      jwks_uri: settings.jwksUrl,
      id_token_signing_alg_values_supported: ID_TOKEN_SIGNING_ALGS,
    },
    settings.clientId,
    settings.clientSecret,
    client.ClientSecretBasic(settings.clientSecret),
  );
  client.enableNonRepudiationChecks(config);
  if (fetchImpl) config[client.customFetch] = fetchImpl;
  return config;
}
