import { z } from 'zod';
import type { RequestContext } from '../../auth/context.js';
import { authorize, permits, targetOrgId, tenantSql } from '../../auth/policy.js';
import { requestRows, statement } from '../../db/prepared.js';
import { shownWhen } from '../../events/sight.js';
import { notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, decodeCursor, finishCursorPage } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { findDevices, siteLimitedDevicesSql } from '../devices/api.js';
import { ACTIVE_THREAT_STATUSES, FACTOR_WEIGHTS, SECURITY_FACTORS, SecurityFactorViewSchema, oneDecimal, type SecurityFactorKey } from './security-factors.js';

/*
 * Reads of the security posture, over the devices the caller sees (tenant and site limits): each
 * reported device's protections, score and factors, per-protection lists, organization means, trends
 * and the dashboard. A device that never reported its security part has no score (null) and is in no
 * list; an organization's score is the mean of its scored devices'.
 */

const ACTIVE = `{${ACTIVE_THREAT_STATUSES.join(',')}}`;
const iso = (value: Date | string) => new Date(value).toISOString();

/**
 * The caller's rows as SQL: their organizations (narrowed to `orgId`, 404 when it is not theirs) and,
 * for users limited to some sites, those sites' devices.
 */
export async function visibleRowsSql(ctx: RequestContext, columns: { org: string; device: string }, orgId?: string): Promise<{ sql: string; params: unknown[] }> {
  await authorize(ctx, 'security:read');
  if (orgId) await authorize(ctx, 'security:read', { orgId, resource: 'Organization' });
  const clauses = [await tenantSql(ctx, { org: columns.org, requestedOrgId: orgId }), siteLimitedDevicesSql(ctx, columns.device)].filter((c) => c !== null);
  return { sql: clauses.length ? clauses.map((c) => c.sql).join(' and ') : 'true', params: clauses.flatMap((c) => c.params) };
}

/** A device the caller may read the security of (404 `Device` otherwise). */
async function readableDevice(ctx: RequestContext, deviceId: string): Promise<{ id: string; orgId: string; hostname: string }> {
  await authorize(ctx, 'security:read');
  const [device] = await findDevices(ctx, { ids: [deviceId] }, { fields: ['orgId', 'hostname'] });
  if (!device) throw notFound('Device');
  await authorize(ctx, 'security:read', { orgId: device.orgId, resource: 'Device' });
  return device;
}

// ── per-device rows ─────────────────────────────────────────────────────────────────────────────

interface PostureRow {
  id: string;
  antivirus: { product: string; enabled: boolean; upToDate: boolean } | null;
  firewall_enabled: boolean | null;
  encryption_enabled: boolean | null;
  password_policy: { minLength: number; complexity: boolean } | null;
  local_admins: string[];
  reported_at: string;
  score: number | null;
  factors: { key: string; weight: number; earned: number }[] | null;
  active_threats: number;
}
type DeviceRow = PostureRow & { hostname: string };

const ROW_COLUMNS = `s.device_id as id, s.antivirus, s.firewall_enabled, s.encryption_enabled, s.password_policy, s.local_admins, s.reported_at, sc.score, sc.factors,
    (select count(*)::int from security_threat t where t.device_id = s.device_id and t.status = any(?::text[])) as active_threats
  from device_security_state s left join device_security_score sc on sc.device_id = s.device_id`;

export const DeviceListQuery = z.strictObject({ orgId: uuid().optional().describe('only this organization’s devices'), ...cursorListFields });
export type DeviceListInput = z.input<typeof DeviceListQuery>;

/** A page of the reported devices the caller sees, by device id, with their hostnames (two statements). */
async function devicePage(ctx: RequestContext, raw: DeviceListInput): Promise<{ rows: DeviceRow[]; nextCursor: string | null }> {
  const query = parseInput(DeviceListQuery, raw);
  const where = await visibleRowsSql(ctx, { org: 's.org_id', device: 's.device_id' }, query.orgId);
  const after = query.cursor ? decodeCursor(query.cursor, 'uuid').id : null;
  const rows = await requestRows<PostureRow>(
    ctx.em,
    statement(`select ${ROW_COLUMNS} where ${where.sql} and (?::uuid is null or s.device_id > ?::uuid) order by s.device_id limit ?`),
    [ACTIVE, ...where.params, after, after, query.limit + 1],
  );
  const page = finishCursorPage(rows, query.limit, (r) => r.id);
  const hostnames = new Map((page.items.length ? await findDevices(ctx, { ids: page.items.map((r) => r.id) }, { fields: ['hostname'] }) : []).map((d) => [d.id, d.hostname]));
  return { rows: page.items.map((r) => ({ ...r, hostname: hostnames.get(r.id) ?? '' })), nextCursor: page.nextCursor };
}

/** How many reported devices the caller sees (the device lists' connections' `totalCount`). */
export async function countSecurityDevices(ctx: RequestContext, raw: Omit<DeviceListInput, 'cursor' | 'limit'> = {}): Promise<number> {
  const query = parseInput(DeviceListQuery, raw);
  const where = await visibleRowsSql(ctx, { org: 's.org_id', device: 's.device_id' }, query.orgId);
  const [row] = await requestRows<{ n: number }>(ctx.em, statement(`select count(*)::int as n from device_security_state s where ${where.sql}`), where.params);
  return row!.n;
}

/** One device's row; a device that never reported: its protections unknown (null) and no score. */
async function deviceRow(ctx: RequestContext, deviceId: string): Promise<DeviceRow> {
  const device = await readableDevice(ctx, deviceId);
  const [row] = await requestRows<PostureRow>(ctx.em, statement(`select ${ROW_COLUMNS} where s.device_id = ?`), [ACTIVE, device.id]);
  const none: PostureRow = { id: device.id, antivirus: null, firewall_enabled: null, encryption_enabled: null, password_policy: null, local_admins: [], reported_at: '', score: null, factors: null, active_threats: 0 };
  return { ...(row ?? none), hostname: device.hostname };
}

function pageOf<T>(map: (row: DeviceRow) => T) {
  return async (ctx: RequestContext, raw: DeviceListInput = {}) => {
    const page = await devicePage(ctx, raw);
    return { data: page.rows.map(map), nextCursor: page.nextCursor };
  };
}
function oneOf<T>(map: (row: DeviceRow) => T) {
  return async (ctx: RequestContext, deviceId: string) => map(await deviceRow(ctx, deviceId));
}

const passes = (row: DeviceRow, key: SecurityFactorKey) => {
  const factor = row.factors?.find((f) => f.key === key);
  return factor ? factor.earned >= factor.weight : null;
};

const deviceFields = { deviceId: uuid().describe('the device'), hostname: z.string().describe('its hostname') };
const score = z.number().nullable().describe('0 to 100, one decimal; null: the device never reported its security part');

// status

export const DeviceSecurityStatusSchema = z
  .object({
    ...deviceFields,
    antivirus: z
      .object({ product: z.string().describe('the product'), enabled: z.boolean().describe('whether it runs'), upToDate: z.boolean().describe('whether its definitions are current') })
      .meta({ title: 'AntivirusStatus', description: 'The antivirus the agent reported' })
      .nullable()
      .describe('null: none reported'),
    firewallEnabled: z.boolean().nullable().describe('null: not reported'),
    encryptionEnabled: z.boolean().nullable().describe('disk encryption; null: not reported'),
    passwordPolicy: z
      .object({ minLength: z.number().int().describe('minimum password length'), complexity: z.boolean().describe('whether complex passwords are required') })
      .meta({ title: 'PasswordPolicyStatus', description: 'The device’s password policy' })
      .nullable()
      .describe('null: not reported'),
    localAdmins: z.array(z.string()).describe('the names of its local administrators'),
    activeThreats: z.number().int().describe('its threats detected or failed to be handled'),
    score,
    reportedAt: timestamp().nullable().describe('when its agent last reported its security part'),
  })
  .meta({ title: 'DeviceSecurityStatus', description: 'A device’s protections as its agent last reported them, its active threats and its score' });
export const DeviceSecurityStatusPageSchema = cursorPageSchema(DeviceSecurityStatusSchema, 'DeviceSecurityStatusPage', 'devices’ security statuses, by device id');

const statusOf = (r: DeviceRow): z.output<typeof DeviceSecurityStatusSchema> => ({
  deviceId: r.id,
  hostname: r.hostname,
  antivirus: r.antivirus,
  firewallEnabled: r.firewall_enabled,
  encryptionEnabled: r.encryption_enabled,
  passwordPolicy: r.password_policy,
  localAdmins: r.local_admins,
  activeThreats: r.active_threats,
  score: r.score,
  reportedAt: r.reported_at ? iso(r.reported_at) : null,
});
export const listSecurityStatus = pageOf(statusOf);
export const getDeviceSecurityStatus = oneOf(statusOf);

// posture

export const DevicePostureSchema = z
  .object({ ...deviceFields, score, factors: z.array(SecurityFactorViewSchema).describe('what each factor adds; empty without a score') })
  .meta({ title: 'DeviceSecurityPosture', description: 'A device’s security score and how it was earned' });
export const DevicePosturePageSchema = cursorPageSchema(DevicePostureSchema, 'DeviceSecurityPosturePage', 'devices’ security postures, by device id');
const postureOf = (r: DeviceRow): z.output<typeof DevicePostureSchema> => ({ deviceId: r.id, hostname: r.hostname, score: r.score, factors: (r.factors ?? []) as z.output<typeof DevicePostureSchema>['factors'] });
export const listSecurityPosture = pageOf(postureOf);
export const getDeviceSecurityPosture = oneOf(postureOf);

// per protection

export const DeviceProtectionSchema = z
  .object({ ...deviceFields, enabled: z.boolean().nullable().describe('null: not reported') })
  .meta({ title: 'DeviceProtectionState', description: 'Whether one protection (the firewall, disk encryption) is on on a device' });
export const DeviceProtectionPageSchema = cursorPageSchema(DeviceProtectionSchema, 'DeviceProtectionStatePage', 'devices’ protection states, by device id');
export const listFirewall = pageOf((r) => ({ deviceId: r.id, hostname: r.hostname, enabled: r.firewall_enabled }));
export const listEncryption = pageOf((r) => ({ deviceId: r.id, hostname: r.hostname, enabled: r.encryption_enabled }));

export const DevicePasswordPolicySchema = z
  .object({
    ...deviceFields,
    minLength: z.number().int().nullable().describe('minimum password length; null: not reported'),
    complexity: z.boolean().nullable().describe('whether complex passwords are required; null: not reported'),
    compliant: z.boolean().describe('complex passwords of at least the applying security policy’s passwordMinLength'),
  })
  .meta({ title: 'DevicePasswordPolicy', description: 'A device’s password policy against its security policy' });
export const DevicePasswordPolicyPageSchema = cursorPageSchema(DevicePasswordPolicySchema, 'DevicePasswordPolicyPage', 'devices’ password policies, by device id');
export const listPasswordPolicies = pageOf((r) => ({
  deviceId: r.id,
  hostname: r.hostname,
  minLength: r.password_policy?.minLength ?? null,
  complexity: r.password_policy?.complexity ?? null,
  compliant: passes(r, 'passwordPolicy') ?? false,
}));

export const DeviceAdminAuditSchema = z
  .object({
    ...deviceFields,
    localAdmins: z.array(z.string()).describe('the names of its local administrators'),
    count: z.number().int().describe('how many'),
    compliant: z.boolean().describe('no more than the applying security policy’s maxLocalAdmins'),
  })
  .meta({ title: 'DeviceAdminAudit', description: 'A device’s local administrators against its security policy' });
export const DeviceAdminAuditPageSchema = cursorPageSchema(DeviceAdminAuditSchema, 'DeviceAdminAuditPage', 'devices’ local administrators, by device id');
export const listAdminAudit = pageOf((r) => ({ deviceId: r.id, hostname: r.hostname, localAdmins: r.local_admins, count: r.local_admins.length, compliant: passes(r, 'localAdmins') ?? false }));

// ── breakdown, trends ───────────────────────────────────────────────────────────────────────────

const selectorFields = {
  deviceId: uuid().optional().describe('this device'),
  orgId: uuid().optional().describe('this organization (the mean of its devices the caller sees); neither given: the caller’s organization'),
};
const oneSelector = (input: { deviceId?: string; orgId?: string }) => !(input.deviceId && input.orgId);
const BOTH = { message: 'Give deviceId or orgId, not both' };

export const ScoreBreakdownQuery = z.strictObject(selectorFields).refine(oneSelector, BOTH);
export type ScoreBreakdownInput = z.input<typeof ScoreBreakdownQuery>;
export const ScoreBreakdownSchema = z
  .object({ score, factors: z.array(SecurityFactorViewSchema).describe('what each factor adds (an organization: the mean over its scored devices); empty without a score') })
  .meta({ title: 'SecurityScoreBreakdown', description: 'A device’s or an organization’s security score and its factors' });
export type ScoreBreakdown = z.output<typeof ScoreBreakdownSchema>;

/** The organization a selector without a device names (the caller's own when none is given). */
async function selectedOrg(ctx: RequestContext, orgId: string | undefined): Promise<string> {
  await authorize(ctx, 'security:read');
  return targetOrgId(ctx, orgId);
}

/** Mean score and factors of the scored devices the caller sees, of one organization or of all they see (two statements). */
async function meanBreakdown(ctx: RequestContext, orgId: string | undefined): Promise<ScoreBreakdown & { devices: number }> {
  const where = await visibleRowsSql(ctx, { org: 'sc.org_id', device: 'sc.device_id' }, orgId);
  const [total] = await requestRows<{ devices: number; score: number | null }>(ctx.em, statement(`select count(*)::int as devices, avg(sc.score)::float8 as score from device_security_score sc where ${where.sql}`), where.params);
  if (!total || total.devices === 0) return { score: null, factors: [], devices: 0 };
  const means = await requestRows<{ key: string; earned: number }>(
    ctx.em,
    statement(`select f->>'key' as key, avg((f->>'earned')::float8)::float8 as earned from device_security_score sc cross join jsonb_array_elements(sc.factors) f where ${where.sql} group by 1`),
    where.params,
  );
  const byKey = new Map(means.map((m) => [m.key, m.earned]));
  return {
    score: oneDecimal(total.score!),
    factors: SECURITY_FACTORS.map((key) => ({ key, weight: FACTOR_WEIGHTS[key], earned: oneDecimal(byKey.get(key) ?? 0) })),
    devices: total.devices,
  };
}

export async function scoreBreakdown(ctx: RequestContext, raw: ScoreBreakdownInput = {}): Promise<ScoreBreakdown> {
  const query = parseInput(ScoreBreakdownQuery, raw);
  if (query.deviceId) {
    const posture = await getDeviceSecurityPosture(ctx, query.deviceId);
    return { score: posture.score, factors: posture.factors };
  }
  const { score: mean, factors } = await meanBreakdown(ctx, await selectedOrg(ctx, query.orgId));
  return { score: mean, factors };
}

export const TrendsQuery = z
  .strictObject({ ...selectorFields, days: z.coerce.number().int().min(1).max(365).default(30).describe('how many days back, 1 to 365 (default 30)') })
  .refine(oneSelector, BOTH);
export type TrendsInput = z.input<typeof TrendsQuery>;
export const TrendsSchema = z
  .object({
    data: z
      .array(z.object({ timestamp: timestamp().describe('the day’s last change of the score (at most one point a day, UTC)'), score: z.number().describe('the score from then on (an organization: the mean of its devices’ latest scores)') }).meta({ title: 'SecurityScorePoint', description: 'A security score at one time' }))
      .describe('oldest first'),
  })
  .meta({ title: 'SecurityTrends', description: 'How a device’s or an organization’s security score moved' });
export type Trends = z.output<typeof TrendsSchema>;

const DAY_MS = 86_400_000;

/** The score at the last change of each day (UTC) within the last `days` days, oldest first: at most one point a day (one statement). */
export async function securityTrends(ctx: RequestContext, raw: TrendsInput = {}): Promise<Trends> {
  const query = parseInput(TrendsQuery, raw);
  const since = new Date(ctx.runtime.clock.now().getTime() - query.days * DAY_MS);
  let rows: { recorded_at: string; score: number }[];
  if (query.deviceId) {
    const device = await readableDevice(ctx, query.deviceId);
    rows = await requestRows(
      ctx.em,
      statement(`select recorded_at, score from (select distinct on (date_trunc('day', recorded_at at time zone 'UTC')) recorded_at, score, id from security_score_sample
          where device_id = ? and recorded_at >= ? order by date_trunc('day', recorded_at at time zone 'UTC'), recorded_at desc, id desc) d order by recorded_at, id`),
      [device.id, since],
    );
  } else {
    const orgId = await selectedOrg(ctx, query.orgId);
    const where = await visibleRowsSql(ctx, { org: 'x.org_id', device: 'x.device_id' }, orgId);
    // At each change, the mean of the devices' latest scores by then.
    rows = await requestRows(
      ctx.em,
      statement(`with x as (select * from security_score_sample x where ${where.sql})
        select t.recorded_at, (select avg(l.score)::float8 from (select distinct on (y.device_id) y.score from x y where y.recorded_at <= t.recorded_at order by y.device_id, y.recorded_at desc, y.id desc) l) as score
          from (select max(recorded_at) as recorded_at from x where recorded_at >= ? group by date_trunc('day', recorded_at at time zone 'UTC')) t order by t.recorded_at`),
      [...where.params, since],
    );
  }
  return { data: rows.map((r) => ({ timestamp: iso(r.recorded_at), score: oneDecimal(r.score) })) };
}

// ── dashboard ───────────────────────────────────────────────────────────────────────────────────

export const DashboardQuery = z.strictObject({ orgId: uuid().optional().describe('only this organization; else every organization the caller sees') });
export type DashboardInput = z.input<typeof DashboardQuery>;
export const DashboardSchema = z
  .object({
    score,
    devices: z.number().int().describe('the scored devices (those that reported their security part)'),
    activeThreats: z.number().int().describe('threats detected or failed to be handled'),
    openRecommendations: z.number().int().describe('recommendations still open'),
    factors: z.array(SecurityFactorViewSchema).describe('the mean of each factor over the scored devices'),
  })
  .meta({ title: 'SecurityDashboard', description: 'The security posture of the devices the caller sees' });
export type Dashboard = z.output<typeof DashboardSchema>;

export async function securityDashboard(ctx: RequestContext, raw: DashboardInput = {}): Promise<Dashboard> {
  const query = parseInput(DashboardQuery, raw);
  const mean = await meanBreakdown(ctx, query.orgId);
  const threats = await visibleRowsSql(ctx, { org: 't.org_id', device: 't.device_id' }, query.orgId);
  const recommendations = await visibleRowsSql(ctx, { org: 'r.org_id', device: 'r.device_id' }, query.orgId);
  const [counts] = await requestRows<{ threats: number; recommendations: number }>(
    ctx.em,
    statement(`select (select count(*)::int from security_threat t where t.status = any(?::text[]) and ${threats.sql}) as threats,
        (select count(*)::int from security_recommendation r where r.status = 'open' and ${recommendations.sql}) as recommendations`),
    [ACTIVE, ...threats.params, ...recommendations.params],
  );
  return { score: mean.score, devices: mean.devices, activeThreats: counts!.threats, openRecommendations: counts!.recommendations, factors: mean.factors };
}

// ── live events ─────────────────────────────────────────────────────────────────────────────────

/** The security domain's events are about a device: they reach who may read its organization's security and sees the device (its site). */
export const securityEventSight = shownWhen(async (ctx, event) => {
  if (!event.orgId || !(await permits(ctx, 'security:read', { orgId: event.orgId }))) return false;
  const sites = siteLimitedDevicesSql(ctx, '?::uuid');
  const deviceId = (event.data as { deviceId?: string }).deviceId;
  if (!sites || !deviceId) return !sites;
  // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
  return (await requestRows(ctx.em.fork(), statement(`select 1 as seen where ${sites.sql}`), [deviceId, ...sites.params])).length > 0;
});
