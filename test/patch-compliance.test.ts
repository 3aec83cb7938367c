import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { parseCsv } from './support/csv.js';
import { auditOf, sql } from './support/db.js';
import { TestClock } from './support/clock.js';
import { eventually } from './support/eventually.js';
import { buildSite, buildUser, unique } from './support/factories.js';
import { patchedFleet, reportPatches } from './support/patches.js';

const clock = new TestClock();
let app: TestApp;
/** Report builds asked while held, released by the test: the queued state is read before any job runs. */
const held: (() => Promise<void>)[] = [];
let holding = false;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
  const { jobs } = app.server.runtime;
  const schedule = jobs.schedule.bind(jobs);
  jobs.schedule = async (name, data, when) => {
    if (holding && name === 'patch-reports.build') held.push(() => schedule(name, data, when));
    else await schedule(name, data, when);
  };
});
afterAll(async () => {
  await app.stop();
});

const DAY_MS = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString().slice(0, 10);
const patch = (fields: Record<string, unknown> = {}) => ({ source: 'microsoft', externalId: `KB${unique()}`, title: 'Cumulative update', status: 'missing', ...fields });

/**
 * Two devices: a misses a critical KB (released 10 days ago), has one installed and a Linux patch failed
 * (33.3 %); b has both KBs installed (100 %); a pending patch b misses counts nowhere.
 */
async function compliantFleet() {
  const f = await patchedFleet(app);
  const critical = patch({ severity: 'critical', releaseDate: daysAgo(10), title: '=HYPERLINK("http://evil.example","click")' });
  const installed = patch({ severity: 'important', title: 'Servicing stack, "quoted", with commas', status: 'installed' });
  const linux = patch({ source: 'linux', externalId: `openssl-${unique()}`, title: '@openssl', severity: 'important', status: 'failed' });
  const pending = patch({ title: 'Not approved yet' });
  await reportPatches(app, f.a, [critical, installed, linux]);
  await reportPatches(app, f.b, [{ ...critical, status: 'installed' }, installed, pending]);
  const ids = Object.fromEntries(((await f.api.get('/patches')).body.data as any[]).map((p) => [p.externalId, p.id]));
  const approved = await f.api.post('/patches/bulk-approve', { patchIds: [ids[critical.externalId], ids[installed.externalId], ids[linux.externalId]] });
  expect(approved.status).toBe(200);
  await sql(app, `update patch set cve_ids = '["CVE-2024-0001","CVE-2024-0002"]'::jsonb where id = ?`, [ids[critical.externalId]]);
  const [hostA, hostB] = [(await f.api.get(`/devices/${f.a.deviceId}`)).body.hostname as string, (await f.api.get(`/devices/${f.b.deviceId}`)).body.hostname as string];
  return { ...f, hostA, hostB, critical, installed, linux, pending };
}

const SUMMARY = { devices: 2, compliantDevices: 1, installed: 3, missing: 1, compliancePercent: 60, criticalMissing: 1, oldestMissingDays: 10 };

describe('patch compliance', () => {
  test('per device and over the fleet, over approved patches; filters narrow the patches and devices counted; REST and GraphQL agree', async () => {
    const { org, viewer, a, b, hostA, hostB } = await compliantFleet();
    const api = rest(app, viewer.as);
    const whole = await api.get('/patches/compliance');
    expect(whole.status).toBe(200);
    expect(whole.body).toEqual({
      summary: SUMMARY,
      devices: [
        { deviceId: a.deviceId, hostname: hostA, compliancePercent: 33.3, criticalMissing: 1 },
        { deviceId: b.deviceId, hostname: hostB, compliancePercent: 100, criticalMissing: 0 },
      ],
    });
    expect((await api.get(`/patches/compliance?orgId=${org.id}`)).body).toEqual(whole.body);

    const critical = (await api.get('/patches/compliance?severity=critical')).body;
    expect(critical.summary).toEqual({ devices: 2, compliantDevices: 1, installed: 1, missing: 1, compliancePercent: 50, criticalMissing: 1, oldestMissingDays: 10 });
    expect(critical.devices.map((d: any) => d.compliancePercent)).toEqual([0, 100]);
    const linux = (await api.get('/patches/compliance?source=linux')).body;
    expect(linux.summary).toEqual({ devices: 2, compliantDevices: 1, installed: 0, missing: 0, compliancePercent: 0, criticalMissing: 0, oldestMissingDays: null });
    const onlyB = (await api.get(`/patches/compliance?deviceId=${b.deviceId}`)).body;
    expect(onlyB).toEqual({ summary: { devices: 1, compliantDevices: 1, installed: 2, missing: 0, compliancePercent: 100, criticalMissing: 0, oldestMissingDays: null }, devices: [whole.body.devices[1]] });

    for (const query of ['severity=urgent', 'source=windows', 'deviceId=nope', 'color=red']) {
      const res = await api.get(`/patches/compliance?${query}`);
      expect([query, res.status, res.body.code]).toEqual([query, 400, 'VALIDATION_ERROR']);
    }

    const viaGraphql = await gql(
      app,
      viewer.as,
      `query($deviceId: ID) { patchCompliance(deviceId: $deviceId) { summary { devices compliantDevices installed missing compliancePercent criticalMissing oldestMissingDays }
        devices { deviceId hostname compliancePercent criticalMissing } } }`,
      {},
    );
    expect(viaGraphql.body.data?.patchCompliance).toEqual(whole.body);
  });

  test('a user limited to a site counts their site’s devices only; another site, another organization’s site or device is 404', async () => {
    const { org, a, b, hostB } = await compliantFleet();
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, b.deviceId]);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteB.id]), limited.membership.id]);
    const api = rest(app, limited.as);
    const seen = await api.get('/patches/compliance');
    expect(seen.body).toEqual({
      summary: { devices: 1, compliantDevices: 1, installed: 2, missing: 0, compliancePercent: 100, criticalMissing: 0, oldestMissingDays: null },
      devices: [{ deviceId: b.deviceId, hostname: hostB, compliancePercent: 100, criticalMissing: 0 }],
    });
    expect((await api.get(`/patches/compliance?siteId=${siteB.id}`)).body).toEqual(seen.body);

    const other = await compliantFleet();
    const otherSite = await buildSite(app, other.org.id);
    for (const query of [`siteId=${siteA.id}`, `siteId=${otherSite.id}`, `deviceId=${other.a.deviceId}`, `orgId=${other.org.id}`]) {
      const res = await api.get(`/patches/compliance?${query}`);
      expect([query, res.status, res.body.code]).toEqual([query, 404, 'NOT_FOUND']);
    }
    const viewerApi = rest(app, other.viewer.as);
    expect((await viewerApi.get(`/patches/compliance?siteId=${siteA.id}`)).body).toEqual({ code: 'NOT_FOUND', message: 'Site not found' });
    expect((await viewerApi.get(`/patches/compliance?deviceId=${b.deviceId}`)).body).toEqual({ code: 'NOT_FOUND', message: 'Device not found' });
    const viaGraphql = await gql(app, other.viewer.as, 'query($siteId: ID) { patchCompliance(siteId: $siteId) { summary { devices } } }', { siteId: siteA.id });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    // The site-limited requester's report covers their site only.
    const report = await requestReport(limited.as, 'format=csv', true);
    const csv = await download(limited.as, report.id, 'text/csv');
    expect(new Set(parseCsv(csv).slice(1).map((row) => row[0]))).toEqual(new Set([hostB]));
  });
});

/** Asks for a report, reads it queued (409 on download) while its build is held, then lets the build run; `waitForIt`: until completed. */
async function requestReport(as: As, query: string, waitForIt = false) {
  holding = true;
  const asked = await rest(app, as).get(`/patches/compliance/report?${query}`);
  holding = false;
  expect([asked.status, asked.body.status]).toEqual([202, 'queued']);
  const queued = await rest(app, as).get(`/patches/compliance/report/${asked.body.id}`);
  expect([queued.status, queued.body.status, queued.body.downloadUrl]).toEqual([200, 'queued', null]);
  const early = await rest(app, as).get(`/patches/compliance/report/${asked.body.id}/download`);
  expect([early.status, early.body]).toEqual([409, { code: 'REPORT_NOT_READY', message: 'The report is not ready yet' }]);
  for (const release of held.splice(0)) await release();
  if (waitForIt) await completed(as, asked.body.id);
  return asked.body as { id: string; status: string };
}

async function completed(as: As, id: string) {
  return eventually(async () => {
    const res = await rest(app, as).get(`/patches/compliance/report/${id}`);
    expect(res.body.status).not.toBe('failed');
    return res.body.status === 'completed' && res.body;
  }, 20_000, `report ${id} to complete`);
}

async function fetchDownload(as: As, id: string): Promise<Response> {
  return fetch(`${app.url}/api/v1/patches/compliance/report/${id}/download`, { headers: as && 'token' in as ? { authorization: `Bearer ${as.token}` } : {} });
}

async function download(as: As, id: string, contentType: string): Promise<string> {
  const res = await fetchDownload(as, id);
  expect([res.status, res.headers.get('content-type')?.split(';')[0]]).toEqual([200, contentType]);
  expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="patch-compliance-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}\.(csv|pdf)"$/);
  return contentType === 'application/pdf' ? Buffer.from(await res.arrayBuffer()).toString('base64') : res.text();
}

async function pdfText(base64: string): Promise<string> {
  const pdf = await getDocument({ data: new Uint8Array(Buffer.from(base64, 'base64')), useSystemFonts: true }).promise;
  const pages: string[] = [];
  for (let n = 1; n <= pdf.numPages; n++) {
    const content = await (await pdf.getPage(n)).getTextContent();
    pages.push(content.items.map((item: any) => item.str).join(' '));
  }
  await pdf.destroy();
  return pages.join('\n');
}

describe('compliance reports', () => {
  test('CSV: queued (409 REPORT_NOT_READY) until its job has built it, then a row per device and patch, cells escaped and formulas neutralised', async () => {
    const { viewer, a, b, hostA, hostB, critical, installed, linux, pending } = await compliantFleet();
    const report = await requestReport(viewer.as, '');
    const done = await completed(viewer.as, report.id);
    expect(done).toMatchObject({ id: report.id, format: 'csv', status: 'completed', siteId: null, source: null, downloadUrl: `/api/v1/patches/compliance/report/${report.id}/download` });
    expect(done.sizeBytes).toBeGreaterThan(0);
    const text = await download(viewer.as, report.id, 'text/csv');
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(['hostname', 'deviceId', 'siteId', 'source', 'externalId', 'title', 'severity', 'approvalStatus', 'status', 'releaseDate', 'cveIds', 'cvssScore']);
    const pick = (r: string[]) => [r[0], r[1], r[4], r[5], r[6], r[7], r[8], r[10]];
    expect(rows.map(pick).sort((x, y) => `${x[0]}${x[2]}`.localeCompare(`${y[0]}${y[2]}`))).toEqual(
      [
        [hostA, a.deviceId, critical.externalId, `'${critical.title}`, 'critical', 'approved', 'missing', 'CVE-2024-0001 CVE-2024-0002'],
        [hostA, a.deviceId, installed.externalId, installed.title, 'important', 'approved', 'installed', ''],
        [hostA, a.deviceId, linux.externalId, "'@openssl", 'important', 'approved', 'failed', ''],
        [hostB, b.deviceId, critical.externalId, `'${critical.title}`, 'critical', 'approved', 'installed', 'CVE-2024-0001 CVE-2024-0002'],
        [hostB, b.deviceId, installed.externalId, installed.title, 'important', 'approved', 'installed', ''],
        [hostB, b.deviceId, pending.externalId, pending.title, 'unknown', 'pending', 'missing', ''],
      ].sort((x, y) => `${x[0]}${x[2]}`.localeCompare(`${y[0]}${y[2]}`)),
    );
    // Escaped on the wire: quotes doubled in a quoted cell; the formula starts with a quote.
    expect(text).toContain('"Servicing stack, ""quoted"", with commas"');
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);

    // Filters reach the report: only Linux patches.
    const linuxReport = await requestReport(viewer.as, 'source=linux&format=csv', true);
    const linuxRows = parseCsv(await download(viewer.as, linuxReport.id, 'text/csv')).slice(1);
    expect(linuxRows.map((r) => [r[0], r[4]])).toEqual([[hostA, linux.externalId], [hostB, '']]);
  });

  test('PDF: a summary, a chart per site and the devices’ hostnames, read back; requested over GraphQL', async () => {
    const { org, a, viewer, hostA, hostB } = await compliantFleet();
    const site = await buildSite(app, org.id, { name: `Head office ${unique()}` });
    await sql(app, 'update device set site_id = ? where id = ?', [site.id, a.deviceId]);
    const asked = await gql(app, viewer.as, 'mutation { requestPatchComplianceReport(input: { format: pdf }) { id status format } }');
    expect(asked.body.data?.requestPatchComplianceReport).toEqual({ id: expect.any(String), status: 'queued', format: 'pdf' });
    const { id } = asked.body.data!.requestPatchComplianceReport;
    await eventually(async () => (await gql(app, viewer.as, 'query($id: ID!) { patchComplianceReport(id: $id) { status } }', { id })).body.data?.patchComplianceReport?.status === 'completed', 20_000, 'the PDF');
    const view = await gql(app, viewer.as, 'query($id: ID!) { patchComplianceReport(id: $id) { id format status downloadUrl } }', { id });
    expect(view.body.data?.patchComplianceReport).toEqual({ id, format: 'pdf', status: 'completed', downloadUrl: `/api/v1/patches/compliance/report/${id}/download` });
    const text = await pdfText(await download(viewer.as, id, 'application/pdf'));
    for (const expected of [hostA, hostB, 'Patch compliance report', `Compliance: ${SUMMARY.compliancePercent} %`, `Devices: ${SUMMARY.devices}`, `Critical missing: ${SUMMARY.criticalMissing}`, `${site.name} (1)`, 'No site (1)']) {
      expect(text).toContain(expected);
    }
  });

  test('asking is audited; a report whose build was lost is built by the due work ten minutes later', async () => {
    const { viewer } = await compliantFleet();
    holding = true;
    const asked = await rest(app, viewer.as).get('/patches/compliance/report?format=csv&source=microsoft');
    holding = false;
    // The build's job is never scheduled.
    held.splice(0);
    expect([asked.status, asked.body.status]).toEqual([202, 'queued']);
    expect(await auditOf(app, asked.body.id, ['action', 'actor_id', 'result'])).toEqual([{ action: 'patch_compliance_report.request', actor_id: viewer.user.id, result: 'success' }]);
    try {
      clock.set(new Date(Date.now() + 11 * 60_000));
      await eventually(async () => (await rest(app, viewer.as).get(`/patches/compliance/report/${asked.body.id}`)).body.status === 'completed', 30_000, 'the report built again');
    } finally {
      clock.set(new Date());
    }
  });

  test('a report whose build dies three times fails instead of being built again', async () => {
    const { viewer } = await compliantFleet();
    holding = true;
    const asked = (await rest(app, viewer.as).get('/patches/compliance/report?format=csv')).body.id;
    holding = false;
    held.splice(0);
    // Its third build died running (as if it took the process down).
    await sql(app, `update patch_report set status = 'running', attempts = 3, started_at = ? where id = ?`, [new Date(Date.now() - 60_000), asked]);
    try {
      clock.set(new Date(Date.now() + 11 * 60_000));
      await eventually(async () => (await rest(app, viewer.as).get(`/patches/compliance/report/${asked}`)).body.status === 'failed', 30_000, 'the report failed');
    } finally {
      clock.set(new Date());
    }
    const download = await rest(app, viewer.as).get(`/patches/compliance/report/${asked}/download`);
    expect([download.status, download.body.code, download.body.message]).toEqual([409, 'REPORT_FAILED', 'The report failed: The report could not be built']);
  });

  test('a report is its requester’s: another user of the organization or another organization gets 404; a bad format is 400', async () => {
    const { org, viewer } = await compliantFleet();
    const report = await requestReport(viewer.as, 'format=csv', true);
    const colleague = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const other = await patchedFleet(app);
    for (const as of [colleague.as, other.viewer.as]) {
      for (const path of [`/patches/compliance/report/${report.id}`, `/patches/compliance/report/${report.id}/download`]) {
        expect((await rest(app, as).get(path)).body).toEqual({ code: 'NOT_FOUND', message: 'Report not found' });
      }
      const viaGraphql = await gql(app, as, 'query($id: ID!) { patchComplianceReport(id: $id) { id } }', { id: report.id });
      expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await rest(app, viewer.as).get('/patches/compliance/report/not-a-uuid')).status).toBe(404);
    for (const query of ['format=xlsx', 'severity=urgent']) {
      const res = await rest(app, viewer.as).get(`/patches/compliance/report?${query}`);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    const badGraphql = await gql(app, viewer.as, 'mutation { requestPatchComplianceReport(input: { format: xlsx }) { id } }');
    expect(badGraphql.body.errors?.length).toBeGreaterThan(0);
    // Expired: gone.
    await sql(app, `update patch_report set expires_at = now() - interval '1 second' where id = ?`, [report.id]);
    expect((await rest(app, viewer.as).get(`/patches/compliance/report/${report.id}`)).status).toBe(404);
  });
});
