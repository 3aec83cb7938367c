import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Role } from './role.js';
import { User } from './user.js';

export type SsoProviderType = 'oidc' | 'saml';
export type SsoProviderStatus = 'inactive' | 'testing' | 'active';

/** Which IdP claim holds each user field (OIDC). */
export interface SsoAttributeMapping {
  email: string;
  name: string;
  firstName?: string;
  lastName?: string;
  groups?: string;
}

/**
 * An organization's identity provider. At most one per organization is `active` (partial unique index),
 * and only that one is used for login. `clientSecret` is encrypted at rest and never leaves the service.
 */
@Entity()
@Unique({ name: 'sso_provider_one_active_per_org', expression: `create unique index "sso_provider_one_active_per_org" on "sso_provider" ("org_id") where "status" = 'active'` })
export class SsoProvider extends BaseEntity<
  | 'status' | 'preset' | 'issuer' | 'clientId' | 'clientSecret' | 'authorizationUrl' | 'tokenUrl' | 'userInfoUrl' | 'jwksUrl'
  | 'scopes' | 'attributeMapping' | 'autoProvision' | 'defaultRoleId' | 'allowedDomains' | 'enforceSSO' | 'entityId' | 'ssoUrl'
  | 'certificate' | 'allowIdpInitiated' | 'forceAuthn' | 'nameIdFormat' | 'createdBy'
> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  @Index()
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 10 })
  type!: SsoProviderType;

  @Property({ type: 'string', length: 20 })
  status: SsoProviderStatus = 'inactive';

  @Property({ type: 'string', length: 50, nullable: true })
  preset: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  issuer: string | null = null;

  @Property({ type: 'string', length: 255, nullable: true })
  clientId: string | null = null;

  /** SecretBox ciphertext */
  @Property({ type: 'text', nullable: true, hidden: true })
  clientSecret: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  authorizationUrl: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  tokenUrl: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  userInfoUrl: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  jwksUrl: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  scopes: string | null = null;

  @Property({ type: 'json', nullable: true })
  attributeMapping: SsoAttributeMapping | null = null;

  @Property({ type: 'boolean' })
  autoProvision = true;

  @ManyToOne(() => Role, { mapToPk: true, fieldName: 'default_role_id', nullable: true, deleteRule: 'set null' })
  defaultRoleId: string | null = null;

  /** comma-separated email domains; null = every domain */
  @Property({ type: 'string', length: 1000, nullable: true })
  allowedDomains: string | null = null;

  @Property({ type: 'boolean', fieldName: 'enforce_sso' })
  enforceSSO = false;

  @Property({ type: 'string', length: 500, nullable: true })
  entityId: string | null = null;

  @Property({ type: 'string', length: 500, nullable: true })
  ssoUrl: string | null = null;

  /** IdP signing certificate, PEM */
  @Property({ type: 'text', nullable: true })
  certificate: string | null = null;

  @Property({ type: 'boolean' })
  allowIdpInitiated = false;

  @Property({ type: 'boolean' })
  forceAuthn = false;

  @Property({ type: 'string', length: 255, nullable: true })
  nameIdFormat: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/**
 * Links a local user to their identity at one provider; created on the first SSO login, refreshed on every one.
 * A login is matched by (provider, subject): one subject signs in one account, and an account has one subject per provider.
 */
@Entity()
@Unique({ properties: ['userId', 'providerId'] })
@Unique({ properties: ['providerId', 'externalId'] })
export class SsoIdentity extends BaseEntity<'profile' | 'accessToken' | 'refreshToken' | 'tokenExpiresAt' | 'lastLoginAt'> {
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id', deleteRule: 'cascade' })
  userId!: string;

  @ManyToOne(() => SsoProvider, { mapToPk: true, fieldName: 'provider_id', deleteRule: 'cascade' })
  @Index()
  providerId!: string;

  /** OIDC `sub` or SAML NameID */
  @Property({ type: 'string', length: 255 })
  externalId!: string;

  @Property({ type: 'string', length: 255 })
  email!: string;

  @Property({ type: 'json' })
  profile: Record<string, unknown> = {};

  /** IdP tokens, SecretBox ciphertext */
  @Property({ type: 'text', nullable: true, hidden: true })
  accessToken: string | null = null;

  @Property({ type: 'text', nullable: true, hidden: true })
  refreshToken: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  tokenExpiresAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastLoginAt: Date | null = null;
}

/** Server-side state of one OIDC login attempt; consumed (deleted) by the callback. */
@Entity()
export class SsoSession extends BaseEntity<'linkUserId'> {
  @ManyToOne(() => SsoProvider, { mapToPk: true, fieldName: 'provider_id', deleteRule: 'cascade' })
  @Index()
  providerId!: string;

  @Property({ type: 'string', length: 64 })
  @Unique()
  state!: string;

  @Property({ type: 'string', length: 64 })
  nonce!: string;

  @Property({ type: 'string', length: 128, hidden: true })
  codeVerifier!: string;

  @Property({ type: 'string', length: 500 })
  redirectPath!: string;

  /** A link the account's owner confirmed while signed in: the login links its subject to this user. */
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'link_user_id', nullable: true, deleteRule: 'cascade' })
  linkUserId: string | null = null;

  @Property({ type: 'timestamptz' })
  @Index()
  expiresAt!: Date;
}

/** One-time code handed to the browser after an SSO login; holds the issued tokens until redeemed. */
@Entity()
export class SsoExchangeCode extends BaseEntity {
  /** SHA-256 of the code; the code itself is never stored */
  @Property({ type: 'string', length: 64, hidden: true })
  @Unique()
  codeHash!: string;

  /** SecretBox ciphertext of `{accessToken, refreshToken}` */
  @Property({ type: 'text', hidden: true })
  tokens!: string;

  @Property({ type: 'timestamptz' })
  @Index()
  expiresAt!: Date;
}

/** A pending SAML AuthnRequest: its id (checked against InResponseTo) and the RelayState key it was sent with. */
@Entity()
export class SamlRequest extends BaseEntity<'linkUserId'> {
  @ManyToOne(() => SsoProvider, { mapToPk: true, fieldName: 'provider_id', deleteRule: 'cascade' })
  @Index()
  providerId!: string;

  @Property({ type: 'string', length: 100 })
  @Unique()
  requestId!: string;

  @Property({ type: 'string', length: 64 })
  @Unique()
  relayKey!: string;

  @Property({ type: 'string', length: 500 })
  redirectPath!: string;

  /** A link the account's owner confirmed while signed in: the login links its subject to this user. */
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'link_user_id', nullable: true, deleteRule: 'cascade' })
  linkUserId: string | null = null;

  @Property({ type: 'timestamptz' })
  @Index()
  expiresAt!: Date;
}

/** Assertion ids already accepted, kept until the assertion would have expired anyway (replay protection). */
@Entity()
@Unique({ properties: ['providerId', 'assertionId'] })
export class SamlAssertion extends BaseEntity {
  @ManyToOne(() => SsoProvider, { mapToPk: true, fieldName: 'provider_id', deleteRule: 'cascade' })
  providerId!: string;

  @Property({ type: 'string', length: 255 })
  assertionId!: string;

  @Property({ type: 'timestamptz' })
  @Index()
  expiresAt!: Date;
}
