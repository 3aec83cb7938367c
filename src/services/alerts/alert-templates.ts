import { z } from 'zod';
import { AlertTemplate, type AlertCondition, type AlertSeverity } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, loadOwned, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { AlertConditionViewSchema, AlertSeveritySchema, ConditionsSchema, normalizeCondition } from './alert-conditions.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { uniqueNameGuard } from '../shared/unique-name.js';

/*
 * Templates: named conditions and severity a rule starts from (built-in ones for the common cases,
 * and an organization's own).
 */

const RESOURCE = 'Alert template';

interface BuiltInTemplate {
  id: string;
  name: string;
  description: string;
  conditions: AlertCondition[];
  severity: AlertSeverity;
}

/** Fixed ids, so rules made from them keep naming them. */
const BUILT_IN: BuiltInTemplate[] = [
  {
    id: '00000000-0000-4000-8000-00000000a101',
    name: 'High CPU',
    description: 'CPU above 90 % for 5 minutes',
    conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 90, durationSeconds: 300 }],
    severity: 'high',
  },
  {
    id: '00000000-0000-4000-8000-00000000a102',
    name: 'Low disk space',
    description: 'Disk more than 90 % full',
    conditions: [{ type: 'metric', metric: 'diskPercent', operator: 'gt', threshold: 90 }],
    severity: 'medium',
  },
  {
    id: '00000000-0000-4000-8000-00000000a103',
    name: 'High memory',
    description: 'RAM above 95 % for 10 minutes',
    conditions: [{ type: 'metric', metric: 'ramPercent', operator: 'gt', threshold: 95, durationSeconds: 600 }],
    severity: 'medium',
  },
  {
    id: '00000000-0000-4000-8000-00000000a104',
    name: 'Device offline',
    description: 'No heartbeat for 10 minutes',
    conditions: [{ type: 'offline', durationSeconds: 600 }],
    severity: 'critical',
  },
  {
    id: '00000000-0000-4000-8000-00000000a105',
    name: 'Agent silent',
    description: 'The main agent is silent while its watchdog still reports',
    conditions: [{ type: 'agent_silent' }],
    severity: 'high',
  },
  {
    id: '00000000-0000-4000-8000-00000000a106',
    name: 'Watchdog failing',
    description: 'The watchdog reports that it is failing',
    conditions: [{ type: 'watchdog', status: 'failing' }],
    severity: 'high',
  },
];

export const AlertTemplateViewSchema = z
  .object({
    id: uuid().describe('the template (built-in ones have fixed ids)'),
    orgId: uuid().nullable().describe('null for built-in templates'),
    name: z.string().describe('shown when choosing one'),
    description: z.string().nullable().describe('what it watches'),
    conditions: z.array(AlertConditionViewSchema).describe('the conditions a rule made from it takes'),
    severity: AlertSeveritySchema.describe('the severity a rule made from it takes'),
    builtIn: z.boolean().describe('one of the service’s own templates'),
    createdAt: timestamp().nullable().describe('null for built-in templates'),
    updatedAt: timestamp().nullable().describe('null for built-in templates'),
  })
  .meta({ title: 'AlertTemplate', description: 'Conditions and severity a rule can start from' });
export type AlertTemplateView = z.output<typeof AlertTemplateViewSchema>;
export const AlertTemplatePageSchema = pageSchema(AlertTemplateViewSchema, 'AlertTemplatePage');
export const AlertTemplateListSchema = z.object({ data: z.array(AlertTemplateViewSchema).describe('every built-in template') }).meta({ title: 'AlertTemplateList', description: 'The built-in templates' });

const builtInView = (t: BuiltInTemplate): AlertTemplateView => ({ ...t, orgId: null, builtIn: true, createdAt: null, updatedAt: null });

function templateView(t: AlertTemplate): AlertTemplateView {
  return {
    id: t.id,
    orgId: t.orgId,
    name: t.name,
    description: t.description,
    conditions: t.conditions,
    severity: t.severity,
    builtIn: false,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

/** A template a rule of `orgId` may start from: built-in, or that organization's (404 otherwise). The caller has authorized. */
export async function templateById(ctx: RequestContext, orgId: string, id: string): Promise<{ id: string; conditions: AlertCondition[]; severity: AlertSeverity }> {
  const builtIn = BUILT_IN.find((t) => t.id === id.toLowerCase());
  if (builtIn) return builtIn;
  const own = isUuid(id) ? await ctx.em.findOne(AlertTemplate, { id, orgId }) : null;
  if (!own) throw notFound(RESOURCE);
  return own;
}

export async function listBuiltInTemplates(ctx: RequestContext): Promise<{ data: AlertTemplateView[] }> {
  await authorize(ctx, 'alerts:read');
  return { data: BUILT_IN.map(builtInView) };
}

export const AlertTemplateListQuery = PageQuery.extend({ orgId: uuid().optional().describe('only templates of this organization') }).strict();
export type AlertTemplateListInput = z.input<typeof AlertTemplateListQuery>;

/** The organizations' own templates, by name (the built-in ones are listed apart). */
export async function listAlertTemplates(ctx: RequestContext, rawQuery: AlertTemplateListInput): Promise<Page<AlertTemplateView>> {
  const query = parseInput(AlertTemplateListQuery, rawQuery);
  await authorize(ctx, 'alerts:read');
  const where = (await tenantWhere<AlertTemplate>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(AlertTemplate, where, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(templateView), total, query);
}

const templateName = z.string().trim().min(1).max(255);
const templateDescription = z.string().trim().max(2000).nullable().optional();

export const CreateAlertTemplateSchema = z.strictObject({
  orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
  name: templateName.describe('unique in the organization'),
  description: templateDescription.describe('what it watches'),
  conditions: ConditionsSchema.describe('the conditions rules made from it take'),
  severity: AlertSeveritySchema.describe('the severity rules made from it take'),
}).describe('A new alert template of an organization: conditions and severity its rules can start from.');
export type CreateAlertTemplateInput = z.input<typeof CreateAlertTemplateSchema>;
export const UpdateAlertTemplateSchema = z.strictObject({
  name: templateName.optional().describe('unique in the organization'),
  description: templateDescription.describe('what it watches'),
  conditions: ConditionsSchema.optional().describe('replaces every condition (rules already made keep theirs)'),
  severity: AlertSeveritySchema.optional().describe('the severity rules made from now on take'),
}).describe('Changes to an alert template; a field left out keeps its value, and rules already made from it keep theirs.');
export type UpdateAlertTemplateInput = z.input<typeof UpdateAlertTemplateSchema>;

const uniqueName = uniqueNameGuard('alert_template_org_id_name_unique', 'A template');

export async function createAlertTemplate(ctx: RequestContext, rawInput: CreateAlertTemplateInput): Promise<AlertTemplateView> {
  const input = parseInput(CreateAlertTemplateSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'alerts:write', { orgId, resource: 'Organization' });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const template = tx.em.create(AlertTemplate, { orgId, name: input.name, description: input.description ?? null, conditions: input.conditions.map(normalizeCondition), severity: input.severity });
      await tx.em.flush();
      await recordAudit(tx, { action: 'alert_template.create', resourceType: 'alert_template', resourceId: template.id, orgId, changes: providedFields({ ...input, orgId }), details: { name: template.name } });
      return templateView(template);
    }),
  );
}

/** Built-in templates cannot change: their ids answer 404 here, as a template the caller cannot see. */
export async function updateAlertTemplate(ctx: RequestContext, id: string, rawInput: UpdateAlertTemplateInput): Promise<AlertTemplateView> {
  const input = parseInput(UpdateAlertTemplateSchema, rawInput);
  const template = await loadOwned(ctx, AlertTemplate, id, 'alerts:write', { resource: RESOURCE });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const current = await tx.em.findOneOrFail(AlertTemplate, { id: template.id }, { refresh: true });
      const changes = applyChanges(current, { ...input, conditions: input.conditions?.map(normalizeCondition) });
      if (changes.length === 0) return templateView(current);
      await tx.em.flush();
      await recordAudit(tx, { action: 'alert_template.update', resourceType: 'alert_template', resourceId: current.id, orgId: current.orgId, changes, details: { name: current.name } });
      return templateView(current);
    }),
  );
}

/** Rules made from the template keep their conditions. */
export async function deleteAlertTemplate(ctx: RequestContext, id: string): Promise<void> {
  const template = await loadOwned(ctx, AlertTemplate, id, 'alerts:write', { resource: RESOURCE });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(AlertTemplate, { id: template.id });
    await recordAudit(tx, { action: 'alert_template.delete', resourceType: 'alert_template', resourceId: template.id, orgId: template.orgId, details: { name: template.name } });
  });
}
