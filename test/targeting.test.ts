import { createTestApp, type TestApp } from './support/app.js';
import { rest, type As } from './support/clients.js';
import { sql } from './support/db.js';
import { enroll, fleet } from './support/devices.js';
import { buildSite, buildUser, unique } from './support/factories.js';

// Every domain that targets devices decides its targets one way (src/services/devices/targeting.ts):
// a site, group or device the caller cannot see is 404 naming it, whether it is another
// organization's or outside the sites the caller is limited to.

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

type Kind = 'site' | 'group' | 'device';
const RESOURCE: Record<Kind, string> = { site: 'Site not found', group: 'Group not found', device: 'Device not found' };

/** A site, a group of that site and a device enrolled into it, made by `as` in its organization. */
async function siteWithDevices(as: As, orgId: string) {
  const site = await buildSite(app, orgId);
  const api = rest(app, as);
  const key = await api.post('/enrollment-keys', { name: `key-${unique()}`, siteId: site.id });
  expect(key.status).toBe(201);
  const device = await enroll(app, key.body.key);
  const group = await api.post('/groups', { name: `group-${unique()}`, type: 'static', siteId: site.id });
  expect(group.status).toBe(201);
  return { site: site.id, group: group.body.id as string, device: device.deviceId };
}

/** Each targeting domain's request aiming at one site, group or device, answered through REST. */
const domains: Record<string, (api: ReturnType<typeof rest>, kind: Kind, id: string, scriptId: string) => Promise<{ status: number; body: { id?: string; message?: string } }>> = {
  'alert rules': (api, kind, id) =>
    api.post('/alerts/rules', { name: `rule-${unique()}`, targetType: kind, targetId: id, conditions: [{ type: 'offline', durationSeconds: 60 }], severity: 'high' }),
  'alert policies': (api, kind, id) => api.post('/alerts/policies', { name: `policy-${unique()}`, severities: ['high'], targets: { [`${kind}Ids`]: [id] } }),
  automations: (api, kind, id) =>
    api.post('/automations', {
      name: `auto-${unique()}`,
      trigger: { type: 'manual' },
      target: kind === 'device' ? { type: 'devices', deviceIds: [id] } : { type: kind, [`${kind}Ids`]: [id] },
      steps: [{ type: 'command', commandType: 'refresh_inventory' }],
    }),
  'maintenance windows': (api, kind, id) =>
    api.post('/maintenance/windows', { name: `window-${unique()}`, timezone: 'UTC', startsAt: '2030-01-01T02:00:00', durationMinutes: 60, recurrence: { type: 'once' }, targets: { [`${kind}Ids`]: [id] } }),
  // Scripts run on devices and groups: there is no site target to aim at.
  'script executions': (api, kind, id, scriptId) => api.post(`/scripts/${scriptId}/execute`, kind === 'group' ? { groupId: id } : { deviceIds: [id] }),
};

test('a site-limited technician gets the same 404 for another organization’s site, group or device and for one outside their sites, in every targeting domain', async () => {
  const ours = await fleet(app);
  const theirs = await fleet(app);
  const [mine, outside, foreign] = [await siteWithDevices(ours.tech.as, ours.org.id), await siteWithDevices(ours.tech.as, ours.org.id), await siteWithDevices(theirs.tech.as, theirs.org.id)];
  const limited = await buildUser(app, { orgId: ours.org.id, role: 'Organization Technician' });
  await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([mine.site]), limited.membership.id]);
  const script = await ours.api.post('/scripts', { name: `script-${unique()}`, language: 'bash', content: 'echo hello' });
  expect(script.status).toBe(201);
  const api = rest(app, limited.as);

  const answers: string[] = [];
  for (const [domain, aim] of Object.entries(domains)) {
    for (const kind of ['site', 'group', 'device'] as const) {
      if (domain === 'script executions' && kind === 'site') continue;
      const own = await aim(api, kind, mine[kind], script.body.id);
      answers.push(`${domain} ${kind} own: ${own.status < 300 ? 'ok' : `${own.status} ${own.body.message}`}`);
      for (const [where, ids] of [['another organization', foreign], ['outside their sites', outside]] as const) {
        const res = await aim(api, kind, ids[kind], script.body.id);
        answers.push(`${domain} ${kind} ${where}: ${res.status} ${res.body.message}`);
      }
    }
  }
  const expected = Object.keys(domains).flatMap((domain) =>
    (['site', 'group', 'device'] as const)
      .filter((kind) => !(domain === 'script executions' && kind === 'site'))
      .flatMap((kind) => [`${domain} ${kind} own: ok`, `${domain} ${kind} another organization: 404 ${RESOURCE[kind]}`, `${domain} ${kind} outside their sites: 404 ${RESOURCE[kind]}`]),
  );
  expect(answers).toEqual(expected);
});

test('a target whose group was deleted since does not lock its owners out of changing it', async () => {
  const ours = await fleet(app);
  const { group } = await siteWithDevices(ours.tech.as, ours.org.id);
  const automation = await domains.automations(ours.api, 'group', group, '');
  const policy = await domains['alert policies'](ours.api, 'group', group, '');
  expect([automation.status, policy.status]).toEqual([201, 201]);
  expect((await ours.api.delete(`/groups/${group}`)).status).toBe(204);
  expect((await ours.api.patch(`/automations/${automation.body.id}`, { name: `renamed-${unique()}` })).status).toBe(200);
  expect((await ours.api.patch(`/alerts/policies/${policy.body.id}`, { name: `renamed-${unique()}` })).status).toBe(200);
});
