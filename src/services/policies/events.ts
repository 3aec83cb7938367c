import type { PolicyViolation } from '../../../entities/configuration-policy.js';
import type { AuditActionTable } from '../../events/types.js';

/** `policy.evaluated`: an evaluation of a policy settled (every device it covered answered), with its counts. */
export type PolicyEvaluatedEventData = { policyId: string; evaluationId: string; compliant: number; nonCompliant: number; pending: number };
/** `policy.violation`: a device became `non_compliant` with a policy. */
export type PolicyViolationEventData = { policyId: string; deviceId: string; violations: PolicyViolation[] };
/** `policy.compliant`: a device that was `non_compliant` with a policy is `compliant` again. */
export type PolicyCompliantEventData = { policyId: string; deviceId: string };

/** Configuration policy audit actions (null: recorded, not published; the policy.* events follow evaluations, not edits). */
export const policiesAuditActions = {
  'configuration_policy.create': null,
  'configuration_policy.update': null,
  'configuration_policy.delete': null,
  'configuration_policy.activate': null,
  'configuration_policy.deactivate': null,
  'configuration_policy.evaluate': null,
  'configuration_policy.apply': null,
  'configuration_policy.remediate': null,
} as const satisfies AuditActionTable;
type PoliciesAuditActions = typeof policiesAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'policy.evaluated': PolicyEvaluatedEventData;
    'policy.violation': PolicyViolationEventData;
    'policy.compliant': PolicyCompliantEventData;
  }
  interface AuditActionMap extends PoliciesAuditActions {}
}
