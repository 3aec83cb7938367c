import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { AuditLog } from '../../../entities/audit-log.js';
import type { RequestContext } from '../../auth/context.js';
import { parseInput } from '../../validation.js';
import { csvLine } from '../shared/csv.js';
import { AuditFilters, auditLogView, auditWhere, authorizeRead, plain, recordRead, type AuditLogView, type ParsedFilters } from './audit-log.js';

const ExportFormat = z.enum(['csv', 'json']);
export const AuditExportInput = z.object({ format: ExportFormat.default('csv'), filters: AuditFilters.default({}) }).strict();
export type AuditExportInput = z.input<typeof AuditExportInput>;
/** `GET /audit/export`: the format and the filters side by side in the query string */
export const AuditExportQuery = AuditFilters.extend({ format: ExportFormat.default('csv') }).strict();

export interface AuditExport {
  contentType: string;
  filename: string;
  /** the file, produced page by page as the client reads it */
  body: AsyncIterable<string>;
}

const EXPORT_PAGE_SIZE = 500;
const CSV_COLUMNS: (keyof AuditLogView)[] = [
  'id',
  'seq',
  'createdAt',
  'actorType',
  'actorId',
  'actorEmail',
  'action',
  'resourceType',
  'resourceId',
  'orgId',
  'partnerId',
  'ip',
  'userAgent',
  'result',
  'changes',
  'details',
  'prevHash',
  'hash',
];

/**
 * Authorizes and records the export at once; the rows are then read in keyset pages while the body
 * is consumed. The export is a snapshot up to the last entry that existed when it was asked for.
 */
export async function exportAuditLog(ctx: RequestContext, rawInput: AuditExportInput): Promise<AuditExport> {
  const input = parseInput(AuditExportInput, rawInput);
  const tenant = await authorizeRead(ctx, 'audit:export', input.filters.orgId);
  const [last] = (await ctx.em.execute(`select coalesce(max(seq), 0)::text as seq from audit_log`)) as { seq: string }[];
  await recordRead(ctx, 'audit.export', { format: input.format, filters: plain(input.filters) }, input.filters.orgId);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return {
    contentType: input.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    filename: `audit-log-${stamp}.${input.format}`,
    body: exportRows(ctx, tenant, input.filters, input.format, last!.seq),
  };
}

async function* exportRows(ctx: RequestContext, tenant: FilterQuery<AuditLog>, filters: ParsedFilters, format: 'csv' | 'json', upTo: string): AsyncIterable<string> {
  yield format === 'csv' ? csvLine(CSV_COLUMNS) : '[';
  let separator = '\n';
  let bound: { $lte: string } | { $lt: string } = { $lte: upTo };
  for (;;) {
    const rows: AuditLog[] = await ctx.em.find(
      AuditLog,
      { $and: [auditWhere(tenant, filters), { seq: bound }] },
      { orderBy: { seq: 'desc' }, limit: EXPORT_PAGE_SIZE, disableIdentityMap: true },
    );
    if (rows.length === 0) break;
    const lines = rows.map((row) => auditLogView(row));
    if (format === 'csv') {
      yield lines.map((view) => csvLine(CSV_COLUMNS.map((column) => view[column]))).join('');
    } else {
      yield separator + lines.map((view) => JSON.stringify(view)).join(',\n');
      separator = ',\n';
    }
    if (rows.length < EXPORT_PAGE_SIZE) break;
    bound = { $lt: String(rows[rows.length - 1]!.seq) };
  }
  if (format === 'json') yield separator === '\n' ? ']' : '\n]';
}
