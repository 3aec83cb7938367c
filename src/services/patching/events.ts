import type { AuditActionTable } from '../../events/types.js';

/** `patch.available`: a patch an organization's agents reported for the first time. */
export type PatchAvailableEventData = { patchId: string };
/** `patch.approved`: a patch approved, by hand (`policyId` null) or by a patch policy. */
export type PatchApprovedEventData = { patchId: string; policyId: string | null };
/** `patch.installed` / `patch.failed`: a device's agent reported the outcome of installing a patch an install job sent it (`installed` or `pending_reboot` / `failed`). */
export type PatchInstallEventData = { patchId: string; deviceId: string; jobId: string };
/** `patch.rollback`: a device's agent reported it rolled a patch back (the device reports it missing again). */
export type PatchRollbackEventData = { patchId: string; deviceId: string };

/** Patching audit actions, each with the event its mutation emits (null: recorded, not published). */
export const patchingAuditActions = {
  'patch.approve': 'patch.approved',
  'patch.decline': null,
  'patch.defer': null,
  // Patch policies are audited, not published (the spec names no event of theirs).
  'patch_policy.create': null,
  'patch_policy.update': null,
  'patch_policy.delete': null,
  // Scans and rollbacks queue commands; patch.rollback is published when an agent reports one done, not when it is asked for.
  // A compliance report is audited when asked for (no event: it belongs to whoever asked).
  'patch_compliance_report.request': null,
  'patch.scan': null,
  'patch.rollback': null,
  // The third-party catalog is the platform's: audited in the system chain, not published.
  'third_party_catalog.create': null,
  'third_party_catalog.update': null,
  'third_party_catalog.delete': null,
  'third_party_catalog.test': null,
} as const satisfies AuditActionTable;
type PatchingAuditActions = typeof patchingAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'patch.available': PatchAvailableEventData;
    'patch.approved': PatchApprovedEventData;
    'patch.installed': PatchInstallEventData;
    'patch.failed': PatchInstallEventData;
    'patch.rollback': PatchRollbackEventData;
  }
  interface AuditActionMap extends PatchingAuditActions {}
}
