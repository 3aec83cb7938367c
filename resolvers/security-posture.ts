import { ID } from 'type-graphql';
import { arg, args, cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import type { RequestContext } from '../src/auth/context.js';
import * as posture from '../src/services/security/posture.js';
import * as recommendations from '../src/services/security/recommendations.js';
import * as policies from '../src/services/security/security-policies.js';
import { connectionOf, cursored } from './shared.js';

const deviceId = arg('deviceId', ID, { description: 'The device; NOT_FOUND when the caller may not see it.' });

/** A per-device list (by device id) as a connection: each item's position is its device's id. */
function byDevice<T extends { deviceId: string }>(list: (ctx: RequestContext, query: posture.DeviceListInput) => Promise<{ data: T[]; nextCursor: string | null }>) {
  return cursored(
    async (ctx: RequestContext, query: posture.DeviceListInput) => {
      const page = await list(ctx, query);
      return { data: page.data.map((item) => ({ ...item, id: item.deviceId })), nextCursor: page.nextCursor };
    },
    (item) => item.deviceId,
    posture.countSecurityDevices,
  );
}
const deviceListArgs = (name: string) => cursorArgs(name, posture.DeviceListQuery);

export const SecurityPostureResolver = operations({
  securityPolicies: query(connectionOf(policies.SecurityPolicyViewSchema), [cursorArgs('SecurityPolicyListArgs', policies.SecurityPolicyListQuery)], cursored(policies.listSecurityPolicies, (p) => p.createdAt, policies.countSecurityPolicies), {
    description: 'Security policies of the organizations the caller sees, newest first (as GET /security/policies)',
  }),
  createSecurityPolicy: mutation(policies.SecurityPolicyViewSchema, [input('CreateSecurityPolicyInput', policies.CreateSecurityPolicySchema)], policies.createSecurityPolicy, {
    description: 'Creates a security policy; its organization’s scores are recomputed',
  }),
  replaceSecurityPolicy: mutation(policies.SecurityPolicyViewSchema, [id, input('ReplaceSecurityPolicyInput', policies.ReplaceSecurityPolicySchema)], policies.replaceSecurityPolicy, {
    description: 'Replaces a security policy; its organization’s scores are recomputed',
  }),
  securityScoreBreakdown: query(posture.ScoreBreakdownSchema, [args('SecurityScoreBreakdownArgs', posture.ScoreBreakdownQuery)], posture.scoreBreakdown, { description: 'A device’s or an organization’s security score and its factors' }),
  securityTrends: query(posture.TrendsSchema, [args('SecurityTrendsArgs', posture.TrendsQuery)], posture.securityTrends, { description: 'How a device’s or an organization’s security score moved, oldest first' }),
  securityStatus: query(connectionOf(posture.DeviceSecurityStatusSchema), [deviceListArgs('SecurityStatusArgs')], byDevice(posture.listSecurityStatus), { description: 'The security status of each reported device the caller sees, by device id' }),
  deviceSecurityStatus: query(posture.DeviceSecurityStatusSchema, [deviceId], posture.getDeviceSecurityStatus, { description: 'One device’s security status' }),
  securityPosture: query(connectionOf(posture.DevicePostureSchema), [deviceListArgs('SecurityPostureArgs')], byDevice(posture.listSecurityPosture), { description: 'The security score and factors of each reported device the caller sees' }),
  deviceSecurityPosture: query(posture.DevicePostureSchema, [deviceId], posture.getDeviceSecurityPosture, { description: 'One device’s security score and factors' }),
  securityFirewall: query(connectionOf(posture.DeviceProtectionSchema), [deviceListArgs('SecurityFirewallArgs')], byDevice(posture.listFirewall), { description: 'Whether each device’s firewall is on' }),
  securityEncryption: query(connectionOf(posture.DeviceProtectionSchema), [deviceListArgs('SecurityEncryptionArgs')], byDevice(posture.listEncryption), { description: 'Whether each device’s disk is encrypted' }),
  securityPasswordPolicies: query(connectionOf(posture.DevicePasswordPolicySchema), [deviceListArgs('SecurityPasswordPolicyArgs')], byDevice(posture.listPasswordPolicies), {
    description: 'Each device’s password policy against its security policy',
  }),
  securityAdminAudit: query(connectionOf(posture.DeviceAdminAuditSchema), [deviceListArgs('SecurityAdminAuditArgs')], byDevice(posture.listAdminAudit), { description: 'Each device’s local administrators against its security policy' }),
  securityDashboard: query(posture.DashboardSchema, [args('SecurityDashboardArgs', posture.DashboardQuery)], posture.securityDashboard, { description: 'The security posture of the devices the caller sees' }),
  securityRecommendations: query(
    connectionOf(recommendations.RecommendationViewSchema),
    [cursorArgs('SecurityRecommendationListArgs', recommendations.RecommendationListQuery)],
    cursored(recommendations.listRecommendations, (r) => r.createdAt, recommendations.countRecommendations),
    { description: 'Security recommendations of the devices the caller sees, newest first' },
  ),
  completeSecurityRecommendation: mutation(recommendations.RecommendationViewSchema, [id], recommendations.completeRecommendation, { description: 'Completes an open security recommendation (CONFLICT otherwise)' }),
  dismissSecurityRecommendation: mutation(recommendations.RecommendationViewSchema, [id], recommendations.dismissRecommendation, { description: 'Dismisses an open security recommendation (CONFLICT otherwise)' }),
});
