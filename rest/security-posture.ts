import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as posture from '../src/services/security/posture.js';
import * as recommendations from '../src/services/security/recommendations.js';
import * as policies from '../src/services/security/security-policies.js';
import { call, pathId, RestRouter } from './router.js';

/** Security posture: policies, scores, trends, per-device protections, the dashboard and recommendations. */
export function securityPostureRouter(openapi: OpenApiRegistry): RestRouter {
  const policy = { id: pathId('Security policy') };
  const device = { deviceId: pathId('Device') };
  const recommendation = { id: pathId('Security recommendation') };
  const devices = posture.DeviceListQuery;
  return new RestRouter(openapi, 'Security posture')
    .get('/security/policies', { summary: 'Security policies of the organizations you see, newest first', query: policies.SecurityPolicyListQuery, response: policies.SecurityPolicyPageSchema }, call(policies.listSecurityPolicies))
    .post('/security/policies', { summary: 'Create a security policy (its organization’s scores are recomputed)', body: policies.CreateSecurityPolicySchema, status: 201, response: policies.SecurityPolicyViewSchema }, call(policies.createSecurityPolicy))
    .put('/security/policies/:id', { summary: 'Replace a security policy (its organization’s scores are recomputed)', params: policy, body: policies.ReplaceSecurityPolicySchema, response: policies.SecurityPolicyViewSchema }, call(policies.replaceSecurityPolicy))
    .get('/security/score-breakdown', { summary: 'A device’s or an organization’s security score and its factors', query: posture.ScoreBreakdownQuery, response: posture.ScoreBreakdownSchema }, call(posture.scoreBreakdown))
    .get('/security/trends', { summary: 'How a device’s or an organization’s security score moved, oldest first', query: posture.TrendsQuery, response: posture.TrendsSchema }, call(posture.securityTrends))
    .get('/security/status', { summary: 'The security status of each device you see that reported it', query: devices, response: posture.DeviceSecurityStatusPageSchema }, call(posture.listSecurityStatus))
    .get('/security/status/:deviceId', { summary: 'One device’s security status', params: device, response: posture.DeviceSecurityStatusSchema }, call(posture.getDeviceSecurityStatus))
    .get('/security/posture', { summary: 'The security score and factors of each device you see that reported its security', query: devices, response: posture.DevicePosturePageSchema }, call(posture.listSecurityPosture))
    .get('/security/posture/:deviceId', { summary: 'One device’s security score and factors', params: device, response: posture.DevicePostureSchema }, call(posture.getDeviceSecurityPosture))
    .get('/security/firewall', { summary: 'Whether each device’s firewall is on', query: devices, response: posture.DeviceProtectionPageSchema }, call(posture.listFirewall))
    .get('/security/encryption', { summary: 'Whether each device’s disk is encrypted', query: devices, response: posture.DeviceProtectionPageSchema }, call(posture.listEncryption))
    .get('/security/password-policy', { summary: 'Each device’s password policy against its security policy', query: devices, response: posture.DevicePasswordPolicyPageSchema }, call(posture.listPasswordPolicies))
    .get('/security/admin-audit', { summary: 'Each device’s local administrators against its security policy', query: devices, response: posture.DeviceAdminAuditPageSchema }, call(posture.listAdminAudit))
    .get('/security/dashboard', { summary: 'The security posture of the devices you see', query: posture.DashboardQuery, response: posture.DashboardSchema }, call(posture.securityDashboard))
    .get('/security/recommendations', { summary: 'Security recommendations of the devices you see, newest first', query: recommendations.RecommendationListQuery, response: recommendations.RecommendationPageSchema }, call(recommendations.listRecommendations))
    .post('/security/recommendations/:id/complete', { summary: 'Complete an open security recommendation', params: recommendation, response: recommendations.RecommendationViewSchema }, call(recommendations.completeRecommendation))
    .post('/security/recommendations/:id/dismiss', { summary: 'Dismiss an open security recommendation', params: recommendation, response: recommendations.RecommendationViewSchema }, call(recommendations.dismissRecommendation));
}
