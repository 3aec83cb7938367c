import type { AuditActionTable } from '../../events/types.js';

/** `security.score_changed`: a device's security score moved by at least `SECURITY_SCORE_CHANGE_THRESHOLD` points (a first score does not emit). */
export type SecurityScoreChangedEventData = { deviceId: string; previousScore: number; score: number };

/** Security audit actions, each with the event its mutation emits (null: recorded, not published). */
export const securityAuditActions = {
  // Threat actions and scans are audited, not published (the webhook catalog names no event of theirs).
  'security_threat.quarantine': null,
  'security_threat.remove': null,
  'security_threat.restore': null,
  'security_scan.create': null,
  // Policies and recommendations are audited, not published (the spec names no event of theirs).
  'security_policy.create': null,
  'security_policy.update': null,
  'security_recommendation.complete': null,
  'security_recommendation.dismiss': null,
} as const satisfies AuditActionTable;
type SecurityAuditActions = typeof securityAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'security.score_changed': SecurityScoreChangedEventData;
  }
  interface AuditActionMap extends SecurityAuditActions {}
}
