import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';
import { useHttpsReceiver } from './support/https-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from './support/smtp-receiver.js';

const receiver = useHttpsReceiver();
let smtp: SmtpReceiver;
let app: TestApp;
let orgA: string;
let orgB: string;
let tech: BuiltUser;
let viewer: BuiltUser;
let outsider: BuiltUser;
let partnerTech: BuiltUser;

const SLACK_TOKEN = 'slack-secret-token-0001';
const TEAMS_TOKEN = 'teams-secret-token-0002';
const HOOK_TOKEN = 'hook-secret-token-0003';
const ROUTING_KEY = 'pd-routing-key-0123456789';
const SECRETS = new RegExp([SLACK_TOKEN, TEAMS_TOKEN, HOOK_TOKEN, ROUTING_KEY].join('|'));

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  app = await createTestApp({
    env: {
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      SMTP_URL: smtp.url,
      SMTP_FROM: 'alerts@rmm.test',
      PAGERDUTY_EVENTS_URL: receiver.url('/pagerduty/v2/enqueue'),
      SMS_API_URL: receiver.url('/sms/send'),
      SMS_API_KEY: 'sms-api-key',
    },
  });
  const a = await buildOrg(app);
  const b = await buildOrg(app);
  orgA = a.id;
  orgB = b.id;
  // Setting a channel's outbound URL also needs organizations:write (as webhooks do); a viewer holds alerts:read.
  tech = await buildUser(app, { orgId: orgA, can: ['alerts:read', 'alerts:write', 'organizations:write'] });
  viewer = await buildUser(app, { orgId: orgA, can: ['alerts:read'] });
  outsider = await buildUser(app, { orgId: orgB, can: ['alerts:read', 'alerts:write'] });
  partnerTech = await buildUser(app, { partnerId: b.partnerId, can: ['alerts:read', 'alerts:write'] });
});

afterAll(async () => {
  await app?.stop();
  await smtp?.close();
});

const create = (body: Record<string, unknown>, as = tech) => rest(app, as.as).post('/alerts/channels', body);
const json = (path: string) => JSON.parse(receiver.to(path).at(-1)!.body);

describe('channels over REST', () => {
  test('every type is created with its config; secrets are sealed at rest, shown as masked hints, never returned', async () => {
    const created = {
      email: await create({ name: 'On-call mail', type: 'email', config: { to: ['ops@example.test', 'lead@example.test'] } }),
      slack: await create({ name: 'Slack', type: 'slack', config: { url: receiver.url(`/slack/${SLACK_TOKEN}`) } }),
      teams: await create({ name: 'Teams', type: 'teams', config: { url: receiver.url(`/teams/${TEAMS_TOKEN}`) } }),
      webhook: await create({ name: 'Hook', type: 'webhook', config: { url: receiver.url(`/hook/${HOOK_TOKEN}`) } }),
      pagerduty: await create({ name: 'Paging', type: 'pagerduty', config: { routingKey: ROUTING_KEY } }),
      sms: await create({ name: 'SMS', type: 'sms', config: { to: ['+15550001111'] } }),
    };
    for (const response of Object.values(created)) expect(response.status).toBe(201);
    expect(created.email.body).toEqual({
      id: expect.any(String),
      orgId: orgA,
      name: 'On-call mail',
      type: 'email',
      config: { to: ['ops@example.test', 'lead@example.test'] },
      enabled: true,
      lastDelivery: null,
      createdBy: tech.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(created.slack.body.config).toEqual({ url: `https://127.0.0.1:${receiver.port}/••••0001` });
    expect(created.pagerduty.body.config).toEqual({ routingKey: '••••6789' });
    expect(created.sms.body.config).toEqual({ to: ['+15550001111'] });

    const list = await rest(app, viewer.as).get('/alerts/channels');
    expect(list.status).toBe(200);
    expect(list.body.pagination).toMatchObject({ page: 1, total: expect.any(Number) });
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual(expect.arrayContaining(Object.values(created).map((r) => r.body.id)));
    expect((await rest(app, viewer.as).get('/alerts/channels?type=sms')).body.data.every((c: { type: string }) => c.type === 'sms')).toBe(true);

    for (const response of [...Object.values(created), list]) expect(JSON.stringify(response.body)).not.toMatch(SECRETS);
    const rows = await sql(app, `select secret, config::text as config from alert_channel where org_id = ?`, [orgA]);
    expect(JSON.stringify(rows)).not.toMatch(SECRETS);
    const graph = await gql(app, viewer.as, `{ alertChannels { data { id type config { to url routingKey } } } }`);
    expect(graph.body.errors).toBeUndefined();
    expect(JSON.stringify(graph.body)).not.toMatch(SECRETS);

    expect((await auditOf(app, created.slack.body.id, ['action'])).map((e) => e.action)).toEqual(['alert_channel.create']);
  });

  test('test sends each type’s own format and answers the outcome, which the channel shows', async () => {
    const slack = await create({ name: 'Slack test', type: 'slack', config: { url: receiver.url(`/slack-t/${SLACK_TOKEN}`) } });
    const result = await rest(app, tech.as).post(`/alerts/channels/${slack.body.id}/test`);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ success: true, status: 'delivered', error: null, responseStatus: 200, deliveryId: expect.any(String) });
    expect(json(`/slack-t/${SLACK_TOKEN}`)).toMatchObject({ text: expect.stringContaining('Test'), blocks: expect.any(Array) });

    const teams = await create({ name: 'Teams test', type: 'teams', config: { url: receiver.url(`/teams-t/${TEAMS_TOKEN}`) } });
    expect((await rest(app, tech.as).post(`/alerts/channels/${teams.body.id}/test`)).body.success).toBe(true);
    expect(json(`/teams-t/${TEAMS_TOKEN}`)).toMatchObject({ '@type': 'MessageCard', summary: expect.any(String), title: expect.any(String), sections: expect.any(Array) });

    const hook = await create({ name: 'Hook test', type: 'webhook', config: { url: receiver.url(`/hook-t/${HOOK_TOKEN}`) } });
    expect((await rest(app, tech.as).post(`/alerts/channels/${hook.body.id}/test`)).body.success).toBe(true);
    const hookRequest = receiver.to(`/hook-t/${HOOK_TOKEN}`).at(-1)!;
    expect(hookRequest.headers['content-type']).toBe('application/json');
    expect(JSON.parse(hookRequest.body)).toMatchObject({ event: 'alert.test', orgId: orgA, alert: { severity: 'info' } });

    const pager = await create({ name: 'PD test', type: 'pagerduty', config: { routingKey: ROUTING_KEY } });
    expect((await rest(app, tech.as).post(`/alerts/channels/${pager.body.id}/test`)).body.success).toBe(true);
    expect(json('/pagerduty/v2/enqueue')).toMatchObject({ routing_key: ROUTING_KEY, event_action: 'trigger', dedup_key: expect.any(String), payload: { summary: expect.any(String), severity: 'info', source: expect.any(String) } });

    const sms = await create({ name: 'SMS test', type: 'sms', config: { to: ['+15550002222'] } });
    expect((await rest(app, tech.as).post(`/alerts/channels/${sms.body.id}/test`)).body.success).toBe(true);
    const smsRequest = receiver.to('/sms/send').at(-1)!;
    expect(smsRequest.headers.authorization).toBe('Bearer sms-api-key');
    expect(JSON.parse(smsRequest.body)).toEqual({ to: '+15550002222', message: expect.stringContaining('Test') });

    const email = await create({ name: 'Mail test', type: 'email', config: { to: ['oncall@example.test'] } });
    expect((await rest(app, tech.as).post(`/alerts/channels/${email.body.id}/test`)).body).toMatchObject({ success: true, responseStatus: null });
    const mail = smtp.mails.at(-1)!;
    expect(mail.to).toEqual(['oncall@example.test']);
    expect(mail.from).toBe('alerts@rmm.test');
    expect(mail.data).toContain('Test message for channel "Mail test"');

    receiver.script('/slack-fail/x', [{ status: 500, body: 'boom' }]);
    const failing = await create({ name: 'Failing', type: 'slack', config: { url: receiver.url('/slack-fail/x') } });
    const failed = await rest(app, tech.as).post(`/alerts/channels/${failing.body.id}/test`);
    expect(failed.body).toMatchObject({ success: false, status: 'retrying', responseStatus: 500, error: expect.stringContaining('HTTP 500') });
    const shown = async (id: string) => (await rest(app, viewer.as).get(`/alerts/channels/${id}`)).body.lastDelivery;
    expect(await shown(failing.body.id)).toEqual({ status: 'retrying', error: expect.stringContaining('HTTP 500'), at: expect.any(String) });
    expect(await shown(slack.body.id)).toMatchObject({ status: 'delivered', error: null });
    // A failed test is retried like any delivery, until its attempts run out.
    await eventually(async () => (await shown(failing.body.id)).status === 'failed', 20_000, 'the retries to run out');
    expect(receiver.to('/slack-fail/x')).toHaveLength(4);
    const [delivery] = (await rest(app, viewer.as).get(`/alerts/channels/${failing.body.id}/deliveries`)).body.data;
    expect(delivery).toMatchObject({ id: failed.body.deliveryId, kind: 'test', status: 'failed', attempt: 4, responseStatus: 500 });
  });

  test('update replaces the config (re-sealed), enables and disables; delete removes it', async () => {
    const channel = await create({ name: 'Mutable', type: 'webhook', config: { url: receiver.url('/old/aaaaaaaaaaaaaaaa') } });
    const api = rest(app, tech.as);
    const updated = await api.patch(`/alerts/channels/${channel.body.id}`, { name: 'Renamed', enabled: false, config: { url: receiver.url('/new/bbbbbbbbbbbbbbbbzzzz') } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Renamed', enabled: false, config: { url: `https://127.0.0.1:${receiver.port}/••••zzzz` } });
    // A disabled channel receives no alerts, but can still be tried before it is enabled again.
    expect((await api.post(`/alerts/channels/${channel.body.id}/test`)).body).toMatchObject({ success: true });
    expect(receiver.to('/new/bbbbbbbbbbbbbbbbzzzz')).toHaveLength(1);
    expect((await api.patch(`/alerts/channels/${channel.body.id}`, {})).status).toBe(400);
    expect((await api.delete(`/alerts/channels/${channel.body.id}`)).status).toBe(204);
    expect((await api.patch(`/alerts/channels/${channel.body.id}`, { name: 'x' })).status).toBe(404);
    expect((await auditOf(app, channel.body.id, ['action'])).map((e) => e.action)).toEqual(['alert_channel.create', 'alert_channel.update', 'alert_channel.test', 'alert_channel.delete']);
  });

  test('validation: type, per-type config, https and addresses, unknown fields', async () => {
    const cases: Record<string, unknown>[] = [
      { name: 'x', type: 'carrier-pigeon', config: {} },
      { name: 'x', type: 'email', config: {} },
      { name: 'x', type: 'email', config: { to: ['not-an-address'] } },
      { name: 'x', type: 'slack', config: { url: 'http://hooks.example.com/x' } },
      { name: 'x', type: 'slack', config: { url: 'https://169.254.169.254.nip.invalid/x' } },
      { name: 'x', type: 'webhook', config: { url: 'https://0.0.0.0/x' } },
      { name: 'x', type: 'pagerduty', config: { routingKey: '' } },
      { name: 'x', type: 'sms', config: { to: ['555-1234'] } },
      { name: 'x', type: 'sms', config: { to: ['+15550001111'], extra: true } },
      { name: '', type: 'email', config: { to: ['a@example.test'] } },
      { name: 'x', type: 'email', config: { to: ['a@example.test'] }, secret: 'nope' },
    ];
    for (const body of cases) {
      const response = await create(body);
      expect([JSON.stringify(body), response.status, response.body.code]).toEqual([JSON.stringify(body), 400, 'VALIDATION_ERROR']);
    }
    expect((await create({ name: 'x', type: 'email', config: {} })).body.message).toMatch(/^config\.to/);
  });
});

describe('access', () => {
  test('read needs alerts:read, changes alerts:write; another organization’s channel is 404 on every route', async () => {
    const channel = await create({ name: 'Private', type: 'email', config: { to: ['a@example.test'] } });
    const id = channel.body.id as string;
    const denied = await rest(app, viewer.as).post('/alerts/channels', { name: 'x', type: 'email', config: { to: ['a@example.test'] } });
    expect([denied.status, denied.body.code]).toEqual([403, 'FORBIDDEN']);
    expect((await rest(app, viewer.as).patch(`/alerts/channels/${id}`, { name: 'x' })).status).toBe(403);
    expect((await rest(app, viewer.as).post(`/alerts/channels/${id}/test`)).status).toBe(403);

    expect((await rest(app, viewer.as).get(`/alerts/channels/${id}`)).body).toMatchObject({ id, name: 'Private' });
    expect((await rest(app, viewer.as).get(`/alerts/channels/${id}/deliveries`)).body.data).toEqual([]);
    for (const caller of [outsider, partnerTech]) {
      const api = rest(app, caller.as);
      expect((await api.get(`/alerts/channels/${id}`)).status).toBe(404);
      expect((await api.get(`/alerts/channels/${id}/deliveries`)).status).toBe(404);
      expect((await api.patch(`/alerts/channels/${id}`, { name: 'stolen' })).status).toBe(404);
      expect((await api.post(`/alerts/channels/${id}/test`)).status).toBe(404);
      expect((await api.delete(`/alerts/channels/${id}`)).status).toBe(404);
      expect((await api.get(`/alerts/channels?orgId=${orgA}`)).status).toBe(404);
      expect((await api.post('/alerts/channels', { orgId: orgA, name: 'x', type: 'email', config: { to: ['a@example.test'] } })).status).toBe(404);
    }
    expect((await rest(app, outsider.as).get('/alerts/channels')).body.data.map((c: { id: string }) => c.id)).not.toContain(id);
    expect((await rest(app, partnerTech.as).get(`/alerts/channels?orgId=${orgB}`)).status).toBe(200);
    expect((await rest(app, partnerTech.as).get('/alerts/channels')).status).toBe(400);

    const graph = await gql(app, outsider.as, `mutation($id: ID!) { updateAlertChannel(id: $id, input: { name: "stolen" }) { id } }`, { id });
    expect(graph.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const read = await gql(app, outsider.as, `query($id: ID!) { alertChannel(id: $id) { id } }`, { id });
    expect(read.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gql(app, outsider.as, `mutation($id: ID!) { testAlertChannel(id: $id) { success } }`, { id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gql(app, outsider.as, `mutation($id: ID!) { deleteAlertChannel(id: $id) }`, { id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gql(app, outsider.as, `query($id: ID!) { alertChannelDeliveries(id: $id) { data { id } } }`, { id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gql(app, outsider.as, `query($orgId: ID) { alertChannels(orgId: $orgId) { data { id } } }`, { orgId: orgA })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const planted = await gql(app, outsider.as, `mutation($input: CreateAlertChannelInput!) { createAlertChannel(input: $input) { id } }`, {
      input: { orgId: orgA, name: 'Planted', type: 'email', config: { to: ['spy@example.test'] } },
    });
    expect(planted.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await rest(app, tech.as).get(`/alerts/channels`)).body.data.map((c: { id: string }) => c.id)).toContain(id);
  });

  test('an outbound URL is set only with organizations:write, as a webhook’s; alerts:write alone edits the rest', async () => {
    // An Organization Technician: alerts:write with MFA, no organizations:write.
    const technician = await buildUser(app, { orgId: orgA, role: 'Organization Technician' });
    const api = rest(app, technician.as);
    const hook = await create({ name: 'Ops hook', type: 'webhook', config: { url: receiver.url('/ops-hook') } });
    for (const type of ['webhook', 'slack', 'teams']) {
      const refused = await api.post('/alerts/channels', { name: `Exfil ${type}`, type, config: { url: receiver.url('/attacker') } });
      expect([type, refused.status, refused.body.code]).toEqual([type, 403, 'FORBIDDEN']);
    }
    const repointed = await api.patch(`/alerts/channels/${hook.body.id}`, { config: { url: receiver.url('/attacker') } });
    expect([repointed.status, repointed.body.code]).toEqual([403, 'FORBIDDEN']);
    const graph = await gql(app, technician.as, `mutation($id: ID!, $input: UpdateAlertChannelInput!) { updateAlertChannel(id: $id, input: $input) { id } }`, { id: hook.body.id, input: { config: { url: receiver.url('/attacker') } } });
    expect(graph.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await rest(app, viewer.as).get(`/alerts/channels/${hook.body.id}`)).body.config.url).not.toContain('attacker');
    // Renaming, disabling, testing and deleting a URL channel, and channels without a URL, stay theirs.
    expect((await api.patch(`/alerts/channels/${hook.body.id}`, { name: 'Ops', enabled: false })).body).toMatchObject({ name: 'Ops', enabled: false });
    expect((await api.post('/alerts/channels', { name: 'Mail', type: 'email', config: { to: ['ops@example.test'] } })).status).toBe(201);
    expect((await api.post('/alerts/channels', { name: 'Paging', type: 'pagerduty', config: { routingKey: ROUTING_KEY } })).status).toBe(201);
    expect((await api.delete(`/alerts/channels/${hook.body.id}`)).status).toBe(204);
  });

  test('users limited to a site change and delete only channels that just policies within their sites use', async () => {
    const [siteA, siteB] = [await buildSite(app, orgA), await buildSite(app, orgA)];
    const limited = await buildUser(app, { orgId: orgA, can: ['alerts:read', 'alerts:write'] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const api = rest(app, limited.as);
    const hook = (name: string) => ({ name, type: 'webhook', config: { url: receiver.url(`/${name}`) } });
    const [wide, other, mine, unused] = await Promise.all(['wide', 'other', 'mine', 'unused'].map(async (name) => (await create(hook(name))).body.id as string));
    const policy = (channelIds: string[], targets?: unknown) => rest(app, tech.as).post('/alerts/policies', { name: 'P', severities: ['low'], channelIds, targets });
    expect((await policy([wide])).status).toBe(201);
    expect((await policy([], { siteIds: [siteB.id] })).status).toBe(201);
    const escalating = await rest(app, tech.as).post('/alerts/policies', { name: 'E', severities: ['low'], targets: { siteIds: [siteB.id] }, escalationSteps: [{ afterMinutes: 5, channelIds: [other] }] });
    expect(escalating.status).toBe(201);
    expect((await policy([mine], { siteIds: [siteA.id] })).status).toBe(201);
    // A policy of the whole organization is 403 to them, one of another site's 404 (as that site is).
    for (const [id, status] of [[wide, 403], [other, 404]] as const) {
      expect((await api.patch(`/alerts/channels/${id}`, { config: { url: receiver.url('/theirs') } })).status).toBe(status);
      expect((await api.delete(`/alerts/channels/${id}`)).status).toBe(status);
    }
    expect((await api.patch(`/alerts/channels/${mine}`, { name: 'Mine' })).body.name).toBe('Mine');
    expect((await api.delete(`/alerts/channels/${unused}`)).status).toBe(204);
    expect((await rest(app, tech.as).get(`/alerts/channels/${wide}`)).body.config.url).not.toContain('theirs');
  });

  test('GraphQL creates, tests and deletes a channel', async () => {
    const created = await gql(
      app,
      tech.as,
      `mutation($input: CreateAlertChannelInput!) { createAlertChannel(input: $input) { id type enabled config { url } lastDelivery { status } } }`,
      { input: { name: 'GraphQL hook', type: 'webhook', config: { url: receiver.url(`/gql/${HOOK_TOKEN}`) } } },
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createAlertChannel.id;
    const tested = await gql(app, tech.as, `mutation($id: ID!) { testAlertChannel(id: $id) { success status responseStatus } }`, { id });
    expect(tested.body.data.testAlertChannel).toEqual({ success: true, status: 'delivered', responseStatus: 200 });
    await eventually(() => receiver.to(`/gql/${HOOK_TOKEN}`).length === 1);
    expect((await gql(app, tech.as, `mutation($id: ID!) { deleteAlertChannel(id: $id) }`, { id })).body.data.deleteAlertChannel).toBe(true);
  });
});
