/**
 * The patching figures of `npm run bench` (section `patches`), each beside a ceiling measured in the
 * same run:
 *
 * - patch reports: BENCH_PATCH_DEVICES (default 200) enrolled devices in one organization (known agent
 *   tokens, as the heartbeats' devices), with one patch policy auto-approving critical Microsoft
 *   patches (installed on a weekly cron, so a report starts no install job). Each device sends
 *   `POST /api/v1/agents/:agentId/inventory {patches}` with the same BENCH_PATCH_REPORT_SIZE (default
 *   500) patches: Windows KBs and Debian packages, every severity and install status (a device's
 *   statuses its own, the same each time), release dates over the last four years. First one report
 *   per device at 4 connections (the organization's patches inserted, `patch.available` and approvals),
 *   then steady re-reports with nothing new at 1, 4 and 16 connections, BENCH_PATCH_SECONDS (default
 *   5) each after a 1 s warm-up. Ceiling: the statements one steady report sent (captured at the
 *   driver), replayed by a bare `pg` pool from as many closed loops with another device's ids: what
 *   PostgreSQL alone needs. Third-party patches are left out: a report of unenriched ones starts the
 *   enrichment job, which would ask VULN_DB_URL meanwhile.
 * - patch list: another organization with the same number of devices and BENCH_PATCH_LIST_PATCHES
 *   (default 5,000) patches (a tenth of them reported by each device), `GET /api/v1/patches?limit=100`
 *   as an Organization Viewer (signed in), the first page and the page after the middle row (its
 *   cursor the server's, reached by walking the list; checked to start at the row after),
 *   BENCH_PATCH_LIST_SAMPLES (default 200) requests one at a time. Ceiling: the list's SQL (the page's
 *   select and its counts) sent by a bare `pg` client. Plus `EXPLAIN ANALYZE` of the deep page's statements.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { RequestContext } from '../auth/context.js';
import { createPatchPolicy } from '../services/patching/patch-policies.js';
import type { RunningServer } from '../server.js';
import { percentiles, runLoad, type LoadRequest } from './bench-load.js';
import { replayStatements, seedAgents, typicalCapture, type SeededAgent } from './bench-devices.js';
import { Meter, benchOrg, bounded, captureQueries, cursorAfterRow, explain, failures, loadFigures, metered, portOf, print, request, serverQueries, signedInGetter, statementShapes, timeSql, withPool, type BenchSection, type Statement } from './bench-support.js';

const DEVICES = bounded('BENCH_PATCH_DEVICES', 200, 10_000);
const REPORT_SIZE = bounded('BENCH_PATCH_REPORT_SIZE', 500, 5000);
/** every device reports once at this many connections, then again and again at each of these */
const FIRST_CONNECTIONS = 4;
const STEADY_CONNECTIONS = [1, 4, 16];
const SECONDS = bounded('BENCH_PATCH_SECONDS', 5, 300);

const LIST_PATCHES = bounded('BENCH_PATCH_LIST_PATCHES', 5000, 200_000);
const PAGE = 100;
/** the deep page starts after the middle row */
const DEEP_ROW = Math.max(PAGE, Math.floor(LIST_PATCHES / 2));
const LIST_SAMPLES = bounded('BENCH_PATCH_LIST_SAMPLES', 200, 10_000);

export const runPatchSection: BenchSection = (server) =>
  withPool(server.runtime, async (pool) => {
    const reports = await patchReports(server, pool);
    return (await patchList(server, pool)) && reports;
  });

// ── patch reports ───────────────────────────────────────────────────────────────────────────────

async function patchReports(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const { runtime } = server;
  const port = portOf(server);
  const orgId = await benchOrg(runtime, 'Bench patch reports');
  const agents = await seedAgents(pool, orgId, DEVICES);
  await createPatchPolicy(RequestContext.system(runtime, 'bench'), {
    orgId,
    name: 'Critical Windows updates',
    targets: {},
    autoApprove: [{ sources: ['microsoft'], severities: ['critical'] }],
    schedule: { type: 'cron', cron: '0 3 * * 6', timezone: 'UTC' },
    rebootBehavior: 'if_required',
  });
  const catalog = reportedCatalog(REPORT_SIZE);
  const requests = agents.map((agent) => reportRequest(agent, catalog));
  console.log(
    `bench: patches — ${DEVICES} devices, reports of ${REPORT_SIZE} patches (${Math.round(Buffer.byteLength(requests[0]!.body!) / 1024)} KiB); first reports at ${FIRST_CONNECTIONS} connections, then steady ones at ${STEADY_CONNECTIONS.join(', ')} connections, ${SECONDS} s each after a 1 s warm-up`,
  );

  // First reports: every device once, closed loops in this process (the generator would wrap around and send some twice).
  const latencies: number[] = [];
  let firstFailure: string | null = null;
  const meter = new Meter(pool);
  await meter.open();
  const started = performance.now();
  let next = 0;
  const { queries: firstQueries } = await captureQueries(
    () =>
      Promise.all(
        Array.from({ length: FIRST_CONNECTIONS }, async () => {
          for (let i = next++; i < requests.length; i = next++) {
            const sentAt = performance.now();
            const answer = await request(port, requests[i]!);
            latencies.push(performance.now() - sentAt);
            if (answer.status !== 200) firstFailure ??= `${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
          }
        }),
      ),
    pool,
  );
  const firstMs = performance.now() - started;
  await meter.close();
  const { rows } = await pool.query(`select count(*)::int as patches, count(*) filter (where approval_status = 'approved')::int as approved from patch where org_id = $1`, [orgId]);

  // The statements of 20 steady reports, each captured on its own; the typical one is the replay's template.
  const sample = agents.slice(0, 20);
  const captured: Statement[][] = [];
  for (const agent of sample) captured.push((await captureQueries(() => request(port, reportRequest(agent, catalog)), pool)).queries);
  const shapes = statementShapes(captured.flat(), sample.length);
  const template = typicalCapture(sample, captured);

  let ok = firstFailure === null;
  const steady: Record<string, unknown> = {};
  for (const connections of STEADY_CONNECTIONS) {
    const measured = await metered(pool, (onWindow) => runLoad({ port, requests, connections, warmupMs: 1000, durationMs: SECONDS * 1000 }, onWindow));
    ok &&= failures(measured.result) === 0 && measured.result.latencyMs.samples > 0;
    steady[`${connections} connection${connections > 1 ? 's' : ''}`] = {
      route: { ...loadFigures(measured.result), ...measured.usage },
      ceilingBarePgStatements: await replayStatements(pool, template, agents, connections, SECONDS * 1000),
    };
  }

  print({
    patchReports: {
      devices: DEVICES,
      patchesPerReport: REPORT_SIZE,
      firstReports: {
        connections: FIRST_CONNECTIONS,
        perSecond: Math.round((latencies.length / firstMs) * 10_000) / 10,
        ...percentiles(latencies),
        ...meter.perRequest(latencies.length),
        ...(firstFailure ? { firstFailure } : {}),
        statementsPerReport: statementShapes(firstQueries, latencies.length).perUnit,
        organizationPatches: rows[0].patches,
        approvedByPolicy: rows[0].approved,
      },
      steadyReports: steady,
      statementsPerSteadyReport: shapes.perUnit,
      statements: shapes.list,
    },
  });
  return ok;
}

interface CatalogPatch {
  source: 'microsoft' | 'linux';
  externalId: string;
  title: string;
  severity: string;
  kbNumber?: string;
  packageName?: string;
  version?: string;
  vendor: string;
  releaseDate: string | null;
}

const SEVERITIES = ['critical', 'important', 'important', 'moderate', 'moderate', 'low', 'unknown'];
const WINDOWS_UPDATES = [
  'Cumulative Update for Windows 11 Version 24H2 for x64-based Systems',
  'Security Update for Microsoft Office 2016 (64-bit edition)',
  'Cumulative Update for .NET Framework 3.5 and 4.8.1 for Windows 11',
  'Servicing Stack Update for Windows Server 2022',
  'Security Intelligence Update for Microsoft Defender Antivirus',
  'Windows Malicious Software Removal Tool x64',
];
const DEBIAN_PACKAGES = ['openssl', 'libssl3', 'linux-image-amd64', 'curl', 'libcurl4', 'openssh-server', 'openssh-client', 'sudo', 'systemd', 'libc6', 'tzdata', 'python3.11', 'libxml2', 'git', 'vim', 'nginx', 'postgresql-15', 'libsqlite3-0', 'ca-certificates', 'bind9-host'];
const DAY_MS = 86_400_000;

/** What an organization's devices report: 40 % Windows KBs, 60 % Debian packages (one in seven without a release date). */
function reportedCatalog(size: number): CatalogPatch[] {
  return Array.from({ length: size }, (_, j) => {
    const released = new Date(Date.now() - (5 + ((j * 37) % 1460)) * DAY_MS).toISOString().slice(0, 10);
    const severity = SEVERITIES[j % SEVERITIES.length]!;
    if (j % 5 < 2) {
      const kb = `KB50${String(30_000 + j).padStart(5, '0')}`;
      return { source: 'microsoft', externalId: kb, title: `${released.slice(0, 7)} ${WINDOWS_UPDATES[j % WINDOWS_UPDATES.length]} (${kb})`, severity, kbNumber: kb, vendor: 'Microsoft', releaseDate: released };
    }
    const name = DEBIAN_PACKAGES[j % DEBIAN_PACKAGES.length]!;
    const version = `${1 + (j % 9)}.${j % 13}.${j}-1+deb12u${1 + (j % 4)}`;
    return { source: 'linux', externalId: `${name}_${version}`, title: `${name} ${version}`, severity, packageName: name, version, vendor: 'Debian', releaseDate: j % 7 === 0 ? null : released };
  });
}

const INSTALL_STATUSES = ['installed', 'missing', 'failed', 'pending_reboot'];

/** A device's report: the catalog, each patch with the device's status of it (mostly installed; the same every time). */
function reportRequest(agent: SeededAgent, catalog: CatalogPatch[]): LoadRequest {
  const patches = catalog.map((patch, j) => {
    const n = (j * 7 + agent.index * 3) % 20;
    return { ...patch, status: INSTALL_STATUSES[n < 14 ? 0 : n < 18 ? 1 : n === 18 ? 2 : 3] };
  });
  return { method: 'POST', path: `/api/v1/agents/${agent.agentId}/inventory`, headers: { authorization: `Bearer ${agent.token}` }, body: JSON.stringify({ patches }) };
}

// ── patch list ──────────────────────────────────────────────────────────────────────────────────

/** The list's own statements: the page's select of patches and its counts of device statuses. */
const PATCH_LIST_SQL = /\bfrom "?patch(_device_status)?"?(\s|$)/i;

type PatchPage = { data: { id: string }[]; nextCursor: string | null };

async function patchList(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const port = portOf(server);
  const orgId = await benchOrg(server.runtime, 'Bench patch list');
  const { headers, get } = await signedInGetter(server.runtime, port, orgId, 'Organization Viewer');
  const seedStarted = performance.now();
  await seedAgents(pool, orgId, DEVICES);
  const statuses = await seedPatches(pool, orgId, LIST_PATCHES);
  console.log(
    `bench: patches — list: ${LIST_PATCHES} patches and ${statuses} device statuses seeded and analyzed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${LIST_SAMPLES} requests per figure, one at a time`,
  );

  const base = `/api/v1/patches?limit=${PAGE}`;
  // the largest page the list answers
  const cursor = await cursorAfterRow(get<PatchPage>, '/api/v1/patches', DEEP_ROW, 500, (page) => page.data);
  const deep = `${base}&cursor=${encodeURIComponent(cursor)}`;
  const { rows } = await pool.query(`select id from patch where org_id = $1 order by created_at desc, id desc offset $2 limit 1`, [orgId, DEEP_ROW]);
  const expected = (rows[0] as { id: string } | undefined)?.id;
  const firstOfDeep = (await get<PatchPage>(deep)).data[0]?.id;
  let ok = firstOfDeep === expected;
  if (!ok) console.error(`bench: the patch page after row ${DEEP_ROW} starts at ${firstOfDeep}, not at row ${DEEP_ROW + 1} (${expected})`);

  const firstSql = await serverQueries(pool, port, base, headers, PATCH_LIST_SQL);
  const deepSql = await serverQueries(pool, port, deep, headers, PATCH_LIST_SQL);
  const one = { port, connections: 1, warmupMs: 300, durationMs: 60_000, maxCount: LIST_SAMPLES };
  const first = await runLoad({ ...one, requests: [{ method: 'GET', path: base, headers }] });
  const deepPage = await runLoad({ ...one, requests: [{ method: 'GET', path: deep, headers }] });
  ok &&= failures(first) === 0 && failures(deepPage) === 0;
  // What one list request sends to PostgreSQL (the first page, 20 times).
  const { queries } = await captureQueries(async () => {
    for (let i = 0; i < 20; i++) await get(base);
  }, pool);
  const shapes = statementShapes(queries, 20);
  const plans = [];
  for (const statement of deepSql) plans.push(await explain(pool, statement));

  print({
    patchList: {
      devices: DEVICES,
      patches: LIST_PATCHES,
      deviceStatuses: statuses,
      limit: PAGE,
      firstPage: { ...loadFigures(first, false), ceilingBareSql: await timeSql(pool, firstSql, LIST_SAMPLES) },
      [`pageAfterRow${DEEP_ROW}`]: { ...loadFigures(deepPage, false), ceilingBareSql: await timeSql(pool, deepSql, LIST_SAMPLES) },
      statementsPerRequest: shapes.perUnit,
      statements: shapes.list,
      explainPageAfterRow: { row: DEEP_ROW, plans },
    },
  });
  return ok;
}

/**
 * `count` patches of the organization as reports leave them (Windows KBs, Debian packages, enriched
 * third-party updates; first reported over the last two years; approvals of every kind), each reported
 * by a tenth of its devices (mostly installed); answers how many statuses.
 */
async function seedPatches(pool: pg.Pool, orgId: string, count: number): Promise<number> {
  await pool.query(
    `insert into patch (id, org_id, source, external_id, title, severity, kb_number, package_name, version, vendor, release_date, cve_ids, cvss_score, enriched_at,
                        approval_status, defer_until, created_at, updated_at)
     select gen_random_uuid(), $1::uuid, source,
            case source when 'microsoft' then 'KB5' || lpad(i::text, 6, '0') else pkg || '_' || ver end,
            case source when 'microsoft' then 'Cumulative Update for Windows 11 (KB5' || lpad(i::text, 6, '0') || ')' else pkg || ' ' || ver end,
            (array['critical', 'important', 'moderate', 'low', 'unknown'])[1 + i % 5],
            case source when 'microsoft' then 'KB5' || lpad(i::text, 6, '0') end,
            case when source <> 'microsoft' then pkg end, case when source <> 'microsoft' then ver end,
            case source when 'microsoft' then 'Microsoft' when 'linux' then 'Debian' else 'Mozilla' end,
            (t - interval '3 days')::date,
            case source when 'third_party' then jsonb_build_array('CVE-2026-' || (10000 + i)) else '[]'::jsonb end,
            case source when 'third_party' then 7.5 end, case source when 'third_party' then t end,
            case when i % 10 < 5 then 'approved' when i % 10 < 8 then 'pending' when i % 10 = 8 then 'declined' else 'deferred' end,
            case when i % 10 = 9 then now() + interval '7 days' end, t, t
       from generate_series(1, $2::int) as i,
            lateral (select case when i % 10 < 4 then 'microsoft' when i % 10 < 9 then 'linux' else 'third_party' end as source,
                            (array['openssl', 'curl', 'openssh-server', 'systemd', 'libc6', 'firefox-esr', 'nginx', 'sudo'])[1 + i % 8] as pkg,
                            (1 + i % 9) || '.' || (i % 13) || '.' || i || '-1' as ver,
                            date_trunc('milliseconds', now() - (($2::int - i) * interval '730 days' / $2::int)) as t) as p`,
    [orgId, count],
  );
  const { rowCount } = await pool.query(
    `insert into patch_device_status (id, patch_id, device_id, status, reported_at)
     select gen_random_uuid(), p.id, d.id, (array['installed', 'installed', 'installed', 'installed', 'installed', 'installed', 'missing', 'missing', 'failed', 'pending_reboot'])[1 + ((p.n / 10 + d.n / 10) % 10)::int], now()
       from (select id, row_number() over (order by created_at, id) as n from patch where org_id = $1) as p
       join (select id, row_number() over (order by id) as n from device where org_id = $1) as d on p.n % 10 = d.n % 10`,
    [orgId],
  );
  await pool.query('analyze patch, patch_device_status');
  return rowCount ?? 0;
}
