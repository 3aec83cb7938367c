/** What other domains may use of the identity domain (the dependency check refuses any other way in). */
export { issueSession, passwordLoginPolicies, type SessionTokens } from './auth.js';
export { ScopeSchema, assertCanGrant } from './roles.js';
