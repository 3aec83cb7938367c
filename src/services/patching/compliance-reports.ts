import PDFDocument from 'pdfkit';
import { z } from 'zod';
import { PatchReport } from '../../../entities/patch-report.js';
import type { RequestContext } from '../../auth/context.js';
import { loadOwned } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, conflict, notFound } from '../../errors.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { csvLine } from '../shared/csv.js';
import { siteNames } from '../tenancy/api.js';
import { complianceFilters, complianceScope, scopeCompliance, summarize, type ComplianceScope, type ScopeCompliance } from './patch-compliance.js';
import { approvalNow, PatchSeveritySchema, PatchSourceSchema } from './patches.js';

/*
 * Compliance reports: asked for (a row, queued), built by a job (BUILD_JOB) over the requester's scope as
 * it was when they asked, the file kept in the row, downloaded by the requester until it expires.
 */

export const BUILD_JOB = 'patch-reports.build';
export const BuildJobSchema = z.object({ reportId: z.uuid() });
const RESOURCE = 'Report';
const TTL_MS = 7 * 86_400_000;
/** A report larger than this fails (narrow its filters) rather than fill the table. */
export const MAX_REPORT_BYTES = 20 * 1024 * 1024;

const ReportFormatSchema = z
  .enum(['csv', 'pdf'])
  .meta({ title: 'PatchComplianceReportFormat', description: 'The report’s file format' })
  .register(enumValues, { csv: 'A row per device and patch it reports.', pdf: 'A summary, a chart per site and the devices.' });
const ReportStatusSchema = z
  .enum(['queued', 'running', 'completed', 'failed'])
  .meta({ title: 'PatchComplianceReportStatus', description: 'How far a report’s build is' })
  .register(enumValues, { queued: 'Waiting for its build.', running: 'Being built.', completed: 'Built: ready to download.', failed: 'Its build failed (`error` says why).' });

export const PatchComplianceReportQuery = z
  .strictObject({ ...complianceFilters, format: ReportFormatSchema.default('csv').describe('the file format (default csv)') })
  .describe('Which devices and patches a compliance report covers, and its format');
export type PatchComplianceReportInput = z.input<typeof PatchComplianceReportQuery>;

export const PatchComplianceReportSchema = z
  .object({
    id: uuid().describe('the report'),
    orgId: uuid().describe('the organization it covers'),
    format: ReportFormatSchema,
    status: ReportStatusSchema,
    siteId: uuid().nullable().describe('the site it was limited to; null for every site the requester saw'),
    deviceId: uuid().nullable().describe('the device it was limited to; null for all'),
    source: PatchSourceSchema.nullable().describe('the patch source it counts; null for all'),
    severity: PatchSeveritySchema.nullable().describe('the patch severity it counts; null for all'),
    error: z.string().nullable().describe('why it failed; null otherwise'),
    sizeBytes: z.number().int().nullable().describe('the file’s size once completed'),
    downloadUrl: z.string().nullable().describe('once completed: where to download it (REST path, under /api/v1)'),
    createdAt: timestamp().describe('when it was asked for'),
    startedAt: timestamp().nullable().describe('when its build started'),
    completedAt: timestamp().nullable().describe('when it completed or failed'),
    expiresAt: timestamp().describe('after this it is gone'),
  })
  .meta({ title: 'PatchComplianceReport', description: 'A patch compliance report (CSV or PDF) and how far its build is' });
export type PatchComplianceReportView = z.output<typeof PatchComplianceReportSchema>;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function reportView(r: PatchReport): PatchComplianceReportView {
  return {
    id: r.id,
    orgId: r.orgId,
    format: r.format as PatchComplianceReportView['format'],
    status: r.status as PatchComplianceReportView['status'],
    siteId: r.scope.siteId ?? null,
    deviceId: r.scope.deviceId ?? null,
    source: (r.scope.source ?? null) as PatchComplianceReportView['source'],
    severity: (r.scope.severity ?? null) as PatchComplianceReportView['severity'],
    error: r.error,
    sizeBytes: r.sizeBytes,
    downloadUrl: r.status === 'completed' ? `/api/v1/patches/compliance/report/${r.id}/download` : null,
    createdAt: r.createdAt.toISOString(),
    startedAt: iso(r.startedAt),
    completedAt: iso(r.completedAt),
    expiresAt: r.expiresAt.toISOString(),
  };
}

/** Queues a report over the caller's devices as they see them now (a user limited to sites: those sites only). */
export async function requestComplianceReport(ctx: RequestContext, raw: PatchComplianceReportInput = {}): Promise<PatchComplianceReportView> {
  const { format, ...filters } = parseInput(PatchComplianceReportQuery, raw);
  const { orgId, ...scope } = await complianceScope(ctx, filters);
  // Each report is a job and up to 20 MiB kept for a week: a requester waits for theirs before asking for more.
  const unfinished = await ctx.em.count(PatchReport, { requestedBy: ctx.principal!.id, status: { $in: ['queued', 'running'] } });
  if (unfinished >= MAX_UNFINISHED) throw conflict(`${unfinished} of your reports are still being built; ask again once they are done`);
  const now = ctx.runtime.clock.now();
  const report = await withTransaction(ctx, async (tx) => {
    const row = tx.em.create(PatchReport, { orgId, requestedBy: ctx.principal!.id, format, scope, createdAt: now, expiresAt: new Date(now.getTime() + TTL_MS) });
    await tx.em.flush();
    await recordAudit(tx, { action: 'patch_compliance_report.request', resourceType: 'patch_report', resourceId: row.id, orgId, details: { format, ...scope } });
    tx.afterCommit(() => tx.runtime.jobs.schedule(BUILD_JOB, { reportId: row.id }));
    return row;
  });
  return reportView(report);
}

/** The caller's own report (another's, an expired one or another organization's is 404). */
async function requireReport(ctx: RequestContext, id: string): Promise<PatchReport> {
  const report = await loadOwned(ctx, PatchReport, id, 'patches:read', { resource: RESOURCE });
  if (report.requestedBy !== ctx.principal!.id || report.expiresAt <= ctx.runtime.clock.now()) throw notFound(RESOURCE);
  return report;
}

export async function getComplianceReport(ctx: RequestContext, id: string): Promise<PatchComplianceReportView> {
  return reportView(await requireReport(ctx, id));
}

export interface ReportFile {
  contentType: string;
  filename: string;
  body: Buffer;
}

/** The completed report's file; 409 REPORT_NOT_READY before. */
export async function downloadComplianceReport(ctx: RequestContext, id: string): Promise<ReportFile> {
  const report = await requireReport(ctx, id);
  if (report.status === 'failed') throw new AppError(409, 'REPORT_FAILED', `The report failed: ${report.error ?? 'unknown error'}`);
  if (report.status !== 'completed') throw new AppError(409, 'REPORT_NOT_READY', 'The report is not ready yet');
  await ctx.em.populate(report, ['content']);
  const day = report.createdAt.toISOString().slice(0, 10);
  return {
    contentType: report.format === 'pdf' ? 'application/pdf' : 'text/csv; charset=utf-8',
    filename: `patch-compliance-${day}-${report.id.slice(0, 8)}.${report.format}`,
    body: report.content!,
  };
}

// ── the build (BUILD_JOB) ─────────────────────────────────────────────────────────────────────────

class TooLarge extends Error {}

/** Reports one requester may have queued or running at once. */
const MAX_UNFINISHED = 5;

/** Builds a queued report (again, if a build died while running) with the system context of the job. */
export async function buildComplianceReport(ctx: RequestContext, reportId: string): Promise<void> {
  const now = ctx.runtime.clock.now();
  const claimed = await ctx.em.execute(
    `update patch_report set status = 'running', started_at = ?, attempts = attempts + 1 where id = ? and status in ('queued', 'running') and attempts < ? returning id`,
    [now, reportId, MAX_ATTEMPTS],
  );
  if (claimed.length === 0) return;
  const report = await ctx.em.findOneOrFail(PatchReport, reportId);
  try {
    const scope: ComplianceScope = { ...report.scope, orgId: report.orgId };
    const rows = await scopeCompliance(ctx, scope);
    const body = report.format === 'pdf' ? await renderPdf(rows, scope, now, await siteNames(ctx, rows.flatMap((r) => (r.device.siteId ? [r.device.siteId] : [])))) : await renderCsv(ctx, rows, scope);
    if (body.length > MAX_REPORT_BYTES) throw new TooLarge(`The report exceeds ${MAX_REPORT_BYTES / 1024 / 1024} MiB; narrow its filters`);
    await ctx.em.nativeUpdate(PatchReport, { id: reportId }, { status: 'completed', content: body, sizeBytes: body.length, completedAt: ctx.runtime.clock.now() });
  } catch (error) {
    ctx.runtime.log.warn({ reportId, err: (error as Error).message }, 'patch compliance report failed');
    // The requester reads `error`: only what is theirs to act on, never an internal message.
    const reason = error instanceof TooLarge ? error.message : 'The report could not be built';
    await ctx.em.nativeUpdate(PatchReport, { id: reportId }, { status: 'failed', error: reason, completedAt: ctx.runtime.clock.now() });
  }
}

/** A build that never started (its job lost) or died running is queued again: these minutes after its request or start. */
const STALLED_MS = 10 * 60_000;

/** Builds a report gets: one that died this often (e.g. it exhausts the process) fails instead of taking the next build down too. */
const MAX_ATTEMPTS = 3;

/** Schedules the build of reports whose build stalled, and fails those out of attempts; answers how many were scheduled. */
export async function requeueStalledReports(ctx: RequestContext, now: Date): Promise<number> {
  const before = new Date(now.getTime() - STALLED_MS);
  const stalled = await ctx.em.find(PatchReport, { $or: [{ status: 'queued', createdAt: { $lte: before } }, { status: 'running', startedAt: { $lte: before } }], expiresAt: { $gt: now } }, { fields: ['id', 'attempts'], disableIdentityMap: true, limit: 100 });
  const spent = stalled.filter((report) => report.attempts >= MAX_ATTEMPTS).map((report) => report.id);
  if (spent.length > 0) await ctx.em.nativeUpdate(PatchReport, { id: { $in: spent }, status: { $in: ['queued', 'running'] } }, { status: 'failed', error: 'The report could not be built', completedAt: now });
  const retried = stalled.filter((report) => report.attempts < MAX_ATTEMPTS);
  for (const report of retried) await ctx.runtime.jobs.schedule(BUILD_JOB, { reportId: report.id });
  return retried.length;
}

/** Expired reports go, files and all. */
export async function deleteExpiredReports(ctx: RequestContext, now: Date): Promise<number> {
  return ctx.em.nativeDelete(PatchReport, { expiresAt: { $lte: now } });
}

/** Rows a CSV report holds at most (about the size cap at a hundred bytes a row). */
const MAX_CSV_ROWS = 200_000;

const CSV_COLUMNS = ['hostname', 'deviceId', 'siteId', 'source', 'externalId', 'title', 'severity', 'approvalStatus', 'status', 'releaseDate', 'cveIds', 'cvssScore'];

interface PatchRow {
  device_id: string;
  source: string;
  external_id: string;
  title: string;
  severity: string;
  approval_status: string;
  defer_until: Date | null;
  status: string;
  release_date: string | null;
  cve_ids: string[];
  cvss_score: number | null;
}

/** A row per device and patch it reports (every approval state; `approvalStatus` tells), devices by hostname; a device that reports none has one row without a patch. */
async function renderCsv(ctx: RequestContext, rows: ScopeCompliance, scope: ComplianceScope): Promise<Buffer> {
  const patchRows = (rows.length === 0
    ? []
    : await ctx.em.execute(
        `select s.device_id, p.source, p.external_id, p.title, p.severity, p.approval_status, p.defer_until, s.status,
            to_char(p.release_date, 'YYYY-MM-DD') as release_date, p.cve_ids, p.cvss_score
          from patch_device_status s join patch p on p.id = s.patch_id
          where s.device_id = any(?::uuid[]) and (?::text is null or p.source = ?) and (?::text is null or p.severity = ?)
          order by p.title, p.external_id limit ?`,
        [uuidArray(rows.map((r) => r.device.id)), scope.source ?? null, scope.source ?? null, scope.severity ?? null, scope.severity ?? null, MAX_CSV_ROWS + 1],
      )) as PatchRow[];
  // Refused before it is built in memory: a file this long would pass the size cap anyway.
  if (patchRows.length > MAX_CSV_ROWS) throw new TooLarge(`The report exceeds ${MAX_CSV_ROWS.toLocaleString('en')} rows; narrow its filters`);
  const byDevice = new Map<string, PatchRow[]>();
  for (const row of patchRows) {
    const own = byDevice.get(row.device_id);
    if (own) own.push(row);
    else byDevice.set(row.device_id, [row]);
  }
  const now = ctx.runtime.clock.now();
  const lines = [csvLine(CSV_COLUMNS)];
  for (const { device } of rows) {
    const own = byDevice.get(device.id);
    if (!own) lines.push(csvLine([device.hostname, device.id, device.siteId, ...CSV_COLUMNS.slice(3).map(() => null)]));
    for (const p of own ?? []) {
      const { approvalStatus } = approvalNow({ approvalStatus: p.approval_status, deferUntil: p.defer_until && new Date(p.defer_until) }, now);
      lines.push(csvLine([device.hostname, device.id, device.siteId, p.source, p.external_id, p.title, p.severity, approvalStatus, p.status, p.release_date, p.cve_ids.join(' '), p.cvss_score]));
    }
  }
  return Buffer.from(lines.join(''), 'utf8');
}

/** A summary, a bar per site (its devices' compliance, drawn as vector shapes), then the devices. */
function renderPdf(rows: ScopeCompliance, scope: ComplianceScope, now: Date, sites: ReadonlyMap<string, string>): Promise<Buffer> {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: 'Patch compliance report' } });
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  const summary = summarize(rows, now);
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;
  const bottom = () => doc.page.height - doc.page.margins.bottom;

  doc.fontSize(18).text('Patch compliance report');
  doc.fontSize(9).fillColor('#555555').text(`Generated ${now.toISOString()} - organization ${scope.orgId}`);
  const filters = [scope.siteId && `site ${scope.siteId}`, scope.deviceId && `device ${scope.deviceId}`, scope.source && `source ${scope.source}`, scope.severity && `severity ${scope.severity}`].filter(Boolean);
  if (filters.length > 0) doc.text(`Filters: ${filters.join(', ')}`);
  doc.moveDown().fillColor('#000000').fontSize(13).text('Summary');
  doc.fontSize(10);
  for (const [label, value] of [
    ['Devices', summary.devices],
    ['Compliant devices', summary.compliantDevices],
    ['Compliance', `${summary.compliancePercent} %`],
    ['Installed', summary.installed],
    ['Missing', summary.missing],
    ['Critical missing', summary.criticalMissing],
    ['Oldest missing (days)', summary.oldestMissingDays ?? 'none'],
  ] as const) {
    doc.text(`${label}: ${value}`);
  }

  doc.moveDown().fontSize(13).text('Compliance per site');
  doc.fontSize(9);
  const bySite = new Map<string, ScopeCompliance>();
  for (const row of rows) {
    const key = row.device.siteId ?? '';
    const site = bySite.get(key);
    if (site) site.push(row);
    else bySite.set(key, [row]);
  }
  const labelWidth = 150;
  const barWidth = width - labelWidth - 50;
  for (const [siteId, siteRows] of bySite) {
    const percent = summarize(siteRows, now).compliancePercent;
    if (doc.y + 18 > bottom()) doc.addPage();
    const y = doc.y + 4;
    doc.fillColor('#000000').text(siteId ? `${sites.get(siteId) ?? 'Site'} (${siteRows.length})` : `No site (${siteRows.length})`, left, y, { width: labelWidth - 5, lineBreak: false });
    doc.rect(left + labelWidth, y, barWidth, 10).fill('#e5e7eb');
    if (percent > 0) doc.rect(left + labelWidth, y, (barWidth * percent) / 100, 10).fill(percent === 100 ? '#16a34a' : percent >= 80 ? '#ca8a04' : '#dc2626');
    doc.fillColor('#000000').text(`${percent} %`, left + labelWidth + barWidth + 5, y, { lineBreak: false });
    doc.x = left;
    doc.y = y + 14;
  }

  doc.moveDown().fontSize(13).text('Devices', left);
  doc.fontSize(9);
  for (const { device, compliance } of rows) doc.text(`${device.hostname}    ${compliance.compliancePercent} %    ${compliance.criticalMissing} critical missing`, left);
  doc.end();
  return done;
}
