import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { raiseAlert } from './support/alert-events.js';
import { dispatched, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { buildSite, buildUser, permissionsOf, type BuiltUser } from './support/factories.js';

/**
 * REST and GraphQL are two doors to the same services: for the same caller, each REST read and its
 * GraphQL counterpart answer the same records (same ids, in the same order for lists) with the same
 * field values, dates equal as instants. GraphQL selections are made from introspection (every plain
 * field of the type, and of its nested objects), so a field added to one door and not the other fails.
 */

const resolve = async (host: string): Promise<string[]> => {
  if (host === 'hooks.example.com') return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: { tunables: { webhooks: { resolve } } } });
});
afterAll(async () => {
  await app.stop();
});

interface TypeRef {
  kind: string;
  name: string | null;
  ofType: TypeRef | null;
}
interface IntrospectedField {
  name: string;
  args: { name: string; type: TypeRef }[];
  type: TypeRef;
}
let types: Map<string, IntrospectedField[]>;

const named = (type: TypeRef): TypeRef => (type.ofType ? named(type.ofType) : type);

/** Relations and counts GraphQL resolves on a record; REST answers them at their own routes (`/orgs/organizations/:id`, `/roles/:id/effective-permissions`, `/alerts?deviceId=`). */
const RELATIONS: Record<string, string[]> = { Device: ['organization', 'site', 'openAlertsCount'], Site: ['organization'], Organization: ['partner'], Role: ['effectivePermissions'] };

/** Every field of `typeName` without arguments: leaves as they are, objects with their own fields (one level deeper). */
function selection(typeName: string, depth = 2, without: string[] = []): string {
  const fields = types.get(typeName);
  if (!fields) throw new Error(`no type ${typeName}`);
  return fields
    .filter((f) => f.args.length === 0 && !RELATIONS[typeName]?.includes(f.name) && !without.includes(f.name))
    .flatMap((f) => {
      const type = named(f.type);
      if (type.kind === 'SCALAR' || type.kind === 'ENUM') return [f.name];
      const inner = depth > 0 && type.kind === 'OBJECT' ? selection(type.name!, depth - 1) : '';
      return inner ? [`${f.name} { ${inner} }`] : [];
    })
    .join(' ');
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Where GraphQL's answer differs from REST's for the fields GraphQL selected (dates compared as instants).
 * A record's own fields are all in both answers; inside its nested objects (the flat type-plus-fields
 * objects of docs/decisions.md: conditions, triggers, targets, steps, channel configs, step results)
 * REST leaves out the fields that do not apply, which GraphQL answers null.
 */
function differences(fromRest: unknown, fromGraphql: unknown, at = '$', nested = false): string[] {
  if (typeof fromRest === 'string' && typeof fromGraphql === 'string' && ISO.test(fromRest) && ISO.test(fromGraphql)) {
    return Date.parse(fromRest) === Date.parse(fromGraphql) ? [] : [`${at}: REST ${fromRest}, GraphQL ${fromGraphql}`];
  }
  if (Array.isArray(fromGraphql)) {
    if (!Array.isArray(fromRest) || fromRest.length !== fromGraphql.length) return [`${at}: REST ${JSON.stringify(fromRest)}, GraphQL ${JSON.stringify(fromGraphql)}`];
    return fromGraphql.flatMap((item, i) => differences(fromRest[i], item, `${at}[${i}]`, nested));
  }
  if (fromGraphql && typeof fromGraphql === 'object') {
    if (!fromRest || typeof fromRest !== 'object') return [`${at}: REST ${JSON.stringify(fromRest)}, GraphQL an object`];
    return Object.entries(fromGraphql).flatMap(([key, value]) =>
      key in fromRest || (nested && value === null) ? differences((fromRest as Record<string, unknown>)[key], value, `${at}.${key}`, true) : [`${at}.${key}: not in the REST answer`],
    );
  }
  // JSON objects (JSONObject scalars) compare whole; REST leaves out what GraphQL shows as null.
  return JSON.stringify(fromRest ?? null) === JSON.stringify(fromGraphql ?? null) ? [] : [`${at}: REST ${JSON.stringify(fromRest)}, GraphQL ${JSON.stringify(fromGraphql)}`];
}

interface Pair {
  /** the REST read, and where its records are in the answer */
  rest: string;
  restItems?: (body: any) => unknown;
  /** the GraphQL counterpart: a field call (`organizations(first: 50)`) answering `type`, or a connection of it */
  graphql: string;
  type: string;
  connection?: boolean;
  /** the GraphQL counterpart answers a page (`{ data }`, page/limit lists and whole lists) of `type` */
  page?: boolean;
  /** a field of a parent record: the parent's call (`device(id: …)`) wrapping `graphql` */
  parent?: string;
  /** fields this REST answer leaves out (and another route answers) */
  without?: string[];
}

async function compare(caller: BuiltUser, pair: Pair): Promise<{ records: number; differences: string[] }> {
  const restAnswer = await rest(app, caller.as).get(pair.rest);
  expect([pair.rest, restAnswer.status]).toEqual([pair.rest, 200]);
  const fields = selection(pair.type, 2, pair.without);
  const field = pair.connection ? `${pair.graphql} { edges { node { ${fields} } } }` : pair.page ? `${pair.graphql} { data { ${fields} } }` : `${pair.graphql} { ${fields} }`;
  const res = await gql(app, caller.as, pair.parent ? `{ parent: ${pair.parent} { result: ${field} } }` : `{ result: ${field} }`);
  expect([pair.graphql, res.body.errors]).toEqual([pair.graphql, undefined]);
  const answer = pair.parent ? res.body.data.parent.result : res.body.data.result;
  const fromGraphql = pair.connection ? answer.edges.map((e: { node: unknown }) => e.node) : pair.page ? answer.data : answer;
  const fromRest = pair.restItems ? pair.restItems(restAnswer.body) : restAnswer.body;
  return { records: Array.isArray(fromGraphql) ? fromGraphql.length : 1, differences: differences(fromRest, fromGraphql) };
}

test('each REST read and its GraphQL counterpart answer the same records with the same values', async () => {
  const introspection = await gql(app, null, '{ __schema { types { name fields { name args { name type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }');
  types = new Map((introspection.body.data.__schema.types as { name: string; fields: IntrospectedField[] | null }[]).filter((t) => t.fields).map((t) => [t.name, t.fields!]));

  // An organization with a bit of everything, and its administrator as the caller (with MFA, as key and role work needs).
  const { org, api, keyId, key } = await fleet(app, { user: { role: 'Organization Admin' } });
  const site = await buildSite(app, org.id, { name: 'Head office' });
  await buildSite(app, org.id, { name: 'Branch' });
  const agent = await enroll(app, key, 'parity-host');
  expect((await api.patch(`/devices/${agent.deviceId}`, { siteId: site.id, tags: ['prod', 'db'] })).status).toBe(200);
  await enroll(app, key, 'parity-other');
  const group = await api.post('/groups', { name: 'Databases', type: 'static' });
  expect(group.status).toBe(201);
  expect((await api.post(`/groups/${group.body.id}/devices`, { deviceIds: [agent.deviceId] })).status).toBe(200);
  expect((await api.post(`/devices/${agent.deviceId}/commands`, { type: 'collect_logs', payload: { since: 'today' } })).status).toBe(201);
  const webhook = await api.post('/webhooks', { name: 'Ops', url: 'https://hooks.example.com/in', events: ['device.offline'], secret: 'signing-secret' });
  expect([webhook.status, webhook.body.message]).toEqual([201, undefined]);
  const admin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });
  expect((await rest(app, admin.as).post('/api-keys', { name: 'ci', scopes: ['devices:read'] })).status).toBe(201);
  const custom = await rest(app, admin.as).post('/roles', { name: 'Auditor', scope: 'organization', permissions: ['audit:read'] });
  expect(custom.status).toBe(201);
  const bystander = await buildUser(app, { orgId: org.id, can: permissionsOf('Organization Viewer') });
  const auditEntry = (await rest(app, admin.as).get(`/audit/logs?resourceType=webhook&limit=1`)).body.data[0];

  // Alerting: a rule, a template, a channel, a policy notifying the caller, and an alert it is notified of.
  const created = async (path: string, body: Record<string, unknown>, status = 201) => {
    const res = await api.post(path, body);
    expect([path, res.status, res.body.message]).toEqual([path, status, undefined]);
    return res.body as { id: string; [field: string]: any };
  };
  const hot = [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 95 }];
  const rule = await created('/alerts/rules', { name: 'Hot CPU', targetType: 'organization', targetId: org.id, conditions: hot, severity: 'high' });
  await created('/alert-templates/templates', { name: 'Hot', conditions: hot, severity: 'high' });
  const channel = await created('/alerts/channels', { name: 'Ops mail', type: 'email', config: { to: ['ops@example.test'] } });
  await created('/alerts/policies', { name: 'High to the admin', severities: ['high'], channelIds: [channel.id], notifyUserIds: [admin.user.id] });
  const raised = await raiseAlert(app, { orgId: org.id, deviceId: agent.deviceId, severity: 'high' });
  await dispatched(app, raised.eventId!);
  // The channel's delivery retries (no mail server here) and each attempt moves `lastDelivery`: both doors read it once it has settled.
  const settled = async () => (await sql(app, `select count(*)::int as n from alert_channel_delivery where channel_id = ? and status not in ('delivered', 'failed')`, [channel.id]))[0].n === 0;
  await eventually(settled, 30_000, 'the channel delivery to settle');
  const window = await created('/maintenance/windows', {
    name: 'Patch night',
    timezone: 'UTC',
    startsAt: new Date(Date.now() + 86_400_000).toISOString().slice(0, 19),
    durationMinutes: 60,
    recurrence: { type: 'once' },
    suppressAlerts: true,
  });

  // Scripts: one in a category, run on the device, which reports its outcome.
  await created('/script-library/categories', { name: 'Diagnostics' });
  const script = await created('/scripts', { name: 'Uptime', language: 'bash', content: 'uptime', category: 'Diagnostics' });
  const execution = (await created(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] }, 202)).executions[0];
  const commands = (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands as { id: string; payload: { executionId?: string } }[];
  const runScript = commands.find((c) => c.payload.executionId === execution.id)!;
  expect((await agentCall(app, agent, `/commands/${runScript.id}/result`, { status: 'completed', exitCode: 0, stdout: 'up 3 days' })).status).toBe(200);

  // Automations: one started by hand.
  const automation = await created('/automations', { name: 'Collect logs', trigger: { type: 'manual' }, target: { type: 'organization' }, steps: [{ type: 'command', commandType: 'collect_logs' }] });
  await created(`/automations/${automation.id}/run`, {}, 202);

  // Patching: the device reports two patches, one of them approved.
  const reported = [
    { source: 'microsoft', externalId: 'KB5030211', kbNumber: 'KB5030211', title: 'Cumulative update', severity: 'critical', releaseDate: '2024-03-12', status: 'missing' },
    { source: 'linux', externalId: 'curl-8.5.0', title: 'curl', packageName: 'curl', version: '8.5.0', status: 'installed' },
  ];
  expect((await agentCall(app, agent, '/inventory', { patches: reported })).status).toBe(200);
  const patchId = (await api.get('/patches')).body.data[0].id as string;
  expect((await api.post(`/patches/${patchId}/approve`, { note: 'pilot ring done' })).status).toBe(200);

  const pairs: Pair[] = [
    { rest: '/orgs/organizations?limit=50', restItems: (b) => b.data, graphql: 'organizations(first: 50)', type: 'Organization', connection: true },
    { rest: `/orgs/organizations/${org.id}`, graphql: `organization(id: "${org.id}")`, type: 'Organization' },
    { rest: '/orgs/sites?limit=50', restItems: (b) => b.data, graphql: 'sites(first: 50)', type: 'Site', connection: true },
    { rest: `/orgs/sites/${site.id}`, graphql: `site(id: "${site.id}")`, type: 'Site' },
    { rest: '/users/me', graphql: 'me', type: 'Me' },
    { rest: '/users?limit=50', restItems: (b) => b.data, graphql: 'users(first: 50)', type: 'User', connection: true },
    { rest: `/users/${bystander.user.id}`, graphql: `user(id: "${bystander.user.id}")`, type: 'User' },
    { rest: '/roles?limit=50', restItems: (b) => b.data, graphql: 'roles(first: 50)', type: 'Role', connection: true },
    { rest: `/roles/${custom.body.id}`, graphql: `role(id: "${custom.body.id}")`, type: 'Role' },
    { rest: '/devices?limit=50', restItems: (b) => b.devices, graphql: 'devices(first: 50)', type: 'Device', connection: true },
    { rest: `/devices/${agent.deviceId}`, graphql: `device(id: "${agent.deviceId}")`, type: 'Device' },
    { rest: `/devices/${agent.deviceId}/commands?limit=50`, restItems: (b) => b.data, parent: `device(id: "${agent.deviceId}")`, graphql: 'commands(first: 50)', type: 'DeviceCommand', connection: true },
    { rest: '/groups?limit=50', restItems: (b) => b.data, graphql: 'groups(first: 50)', type: 'DeviceGroup', connection: true },
    { rest: `/groups/${group.body.id}`, graphql: `group(id: "${group.body.id}")`, type: 'DeviceGroup' },
    { rest: `/groups/${group.body.id}/devices?limit=50`, restItems: (b) => b.data, graphql: `groupDevices(id: "${group.body.id}", first: 50)`, type: 'Device', connection: true },
    { rest: `/groups/${group.body.id}/membership-log?limit=50`, restItems: (b) => b.data, graphql: `groupMembershipLog(id: "${group.body.id}", first: 50)`, type: 'GroupMembershipLogEntry', connection: true },
    { rest: '/tags?limit=50', restItems: (b) => b.data, graphql: 'tags(first: 50)', type: 'Tag', connection: true },
    // The REST list leaves out each webhook's delivery statistics; `GET /webhooks/:id` answers them.
    { rest: '/webhooks?limit=50', restItems: (b) => b.data, graphql: 'webhooks(first: 50)', type: 'Webhook', connection: true, without: ['deliveryStats'] },
    { rest: `/webhooks/${webhook.body.id}`, graphql: `webhook(id: "${webhook.body.id}")`, type: 'Webhook' },
    { rest: '/api-keys?limit=50', restItems: (b) => b.data, graphql: 'apiKeys(first: 50)', type: 'ApiKey', connection: true },
    { rest: '/enrollment-keys?limit=50', restItems: (b) => b.data, graphql: 'enrollmentKeys(first: 50)', type: 'EnrollmentKey', connection: true },
    { rest: `/enrollment-keys/${keyId}`, graphql: `enrollmentKey(id: "${keyId}")`, type: 'EnrollmentKey' },
    // Reading the log writes an `audit.read` entry: the lists compare entries about webhooks only.
    { rest: '/audit/logs?resourceType=webhook&limit=50', restItems: (b) => b.data, graphql: 'auditLogs(first: 50, filters: { resourceType: "webhook" })', type: 'AuditLog', connection: true },
    { rest: `/audit/logs/${auditEntry.id}`, graphql: `auditLog(id: "${auditEntry.id}")`, type: 'AuditLog' },
    // The lists below hold a few records each: pages of 10 keep their full selections under the query cost limit.
    { rest: '/alerts?limit=10', restItems: (b) => b.data, graphql: 'alerts(first: 10)', type: 'Alert', connection: true },
    { rest: `/alerts/${raised.alertId}`, graphql: `alert(id: "${raised.alertId}")`, type: 'Alert' },
    { rest: '/alerts/summary', graphql: 'alertSummary', type: 'AlertSummary' },
    { rest: '/alerts/rules?limit=10', restItems: (b) => b.data, graphql: 'alertRules(limit: 10)', type: 'AlertRule', page: true },
    { rest: `/alerts/rules/${rule.id}`, graphql: `alertRule(id: "${rule.id}")`, type: 'AlertRule' },
    { rest: '/alert-templates/templates?limit=10', restItems: (b) => b.data, graphql: 'alertTemplates(limit: 10)', type: 'AlertTemplate', page: true },
    { rest: '/alerts/channels?limit=10', restItems: (b) => b.data, graphql: 'alertChannels(limit: 10)', type: 'AlertChannel', page: true },
    { rest: '/alerts/policies?limit=10', restItems: (b) => b.data, graphql: 'alertPolicies(limit: 10)', type: 'AlertPolicy', page: true },
    { rest: '/notifications?limit=10', restItems: (b) => b.data, graphql: 'notifications(limit: 10)', type: 'Notification', page: true },
    { rest: '/maintenance/windows?limit=10', restItems: (b) => b.data, graphql: 'maintenanceWindows(first: 10)', type: 'MaintenanceWindow', connection: true },
    { rest: `/maintenance/windows/${window.id}`, graphql: `maintenanceWindow(id: "${window.id}")`, type: 'MaintenanceWindow' },
    { rest: `/maintenance/windows/${window.id}/occurrences`, restItems: (b) => b.data, graphql: `maintenanceWindowOccurrences(id: "${window.id}")`, type: 'MaintenanceOccurrence', page: true },
    { rest: '/scripts?limit=10', restItems: (b) => b.data, graphql: 'scripts(limit: 10)', type: 'Script', page: true },
    { rest: `/scripts/${script.id}`, graphql: `script(id: "${script.id}")`, type: 'Script' },
    { rest: `/scripts/${script.id}/executions?limit=10`, restItems: (b) => b.data, graphql: `scriptExecutions(scriptId: "${script.id}", first: 10)`, type: 'ScriptExecution', connection: true },
    { rest: `/scripts/executions/${execution.id}`, graphql: `scriptExecution(id: "${execution.id}")`, type: 'ScriptExecution' },
    { rest: '/script-library/categories?limit=10', restItems: (b) => b.data, graphql: 'scriptCategories(limit: 10)', type: 'ScriptCategory', page: true },
    { rest: '/automations?limit=10', restItems: (b) => b.data, graphql: 'automations(limit: 10)', type: 'Automation', page: true },
    { rest: `/automations/${automation.id}`, graphql: `automation(id: "${automation.id}")`, type: 'Automation' },
    { rest: `/automations/${automation.id}/runs?limit=10`, restItems: (b) => b.data, graphql: `automationRuns(automationId: "${automation.id}", first: 10)`, type: 'AutomationRun', connection: true },
    // `deviceStatus` is answered (REST) or not null (GraphQL) only when the list is filtered by a device.
    { rest: '/patches?limit=10', restItems: (b) => b.data, graphql: 'patches(first: 10)', type: 'Patch', connection: true, without: ['deviceStatus'] },
    { rest: `/patches?limit=10&deviceId=${agent.deviceId}`, restItems: (b) => b.data, graphql: `patches(first: 10, deviceId: "${agent.deviceId}")`, type: 'Patch', connection: true },
    { rest: `/patches/${patchId}`, graphql: `patch(id: "${patchId}")`, type: 'PatchDetail' },
    { rest: '/patches/sources', graphql: 'patchSources', type: 'PatchSourceList' },
    { rest: '/patches/approvals?limit=10', restItems: (b) => b.data, graphql: 'patchApprovals(first: 10)', type: 'PatchApproval', connection: true },
    { rest: '/patches/compliance', graphql: 'patchCompliance', type: 'PatchCompliance' },
  ];

  const outcomes: Record<string, { records: number; differences: string[] }> = {};
  for (const pair of pairs) outcomes[pair.rest] = await compare(admin, pair);

  expect(Object.fromEntries(Object.entries(outcomes).map(([route, o]) => [route, o.differences]))).toEqual(Object.fromEntries(pairs.map((p) => [p.rest, []])));
  // Each list held something to compare.
  for (const [route, outcome] of Object.entries(outcomes)) expect([route, outcome.records > 0]).toEqual([route, true]);
});
