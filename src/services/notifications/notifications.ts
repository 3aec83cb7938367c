import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Notification } from '../../../entities/notification.js';
import type { RequestContext } from '../../auth/context.js';
import { authenticated, isUuid } from '../../auth/policy.js';
import { forbidden, notFound } from '../../errors.js';
import { publishOnCommit } from '../../events/pubsub.js';
import { selectIterable } from '../../events/subscriptions.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';

/*
 * In-app notifications: each belongs to one user, who alone reads, marks, deletes and is pushed them
 * (`notificationAdded`, from any server instance). Alert policies create them for the users they name.
 */

const RESOURCE = 'Notification';
/** published (on commit) for each new notification; subscribers keep only their own */
export const NOTIFICATION_TOPIC = 'notification_added';

export const NotificationViewSchema = z
  .object({
    id: uuid().describe('the notification'),
    orgId: uuid().describe('the organization it is about'),
    type: z.string().describe('what it is about: `alert`'),
    title: z.string().describe('the headline'),
    message: z.string().nullable().describe('the details, when there are any'),
    severity: z.string().nullable().describe('alerts: the alert’s severity'),
    alertId: uuid().nullable().describe('the alert it is about, if any'),
    read: z.boolean().describe('whether it has been marked read'),
    readAt: timestamp().nullable().describe('when it was marked read'),
    createdAt: timestamp().describe('when it was created'),
  })
  .meta({ title: 'Notification', description: 'An in-app notification of the calling user' });
export type NotificationView = z.output<typeof NotificationViewSchema>;
export const NotificationPageSchema = pageSchema(NotificationViewSchema, 'NotificationPage').meta({ title: 'NotificationPage', description: 'A page of notifications, newest first' });

export const NotificationCountSchema = z.object({ count: z.number().int().describe('unread notifications') }).meta({ title: 'NotificationCount', description: 'A count of notifications' });
export type NotificationCount = z.output<typeof NotificationCountSchema>;

export const ListNotificationsQuery = PageQuery.extend({
  unread: z.boolean().or(queryBoolean).optional().describe('true: only unread ones; false: only read ones'),
}).strict();
export type ListNotificationsInput = z.input<typeof ListNotificationsQuery>;

export const UpdateNotificationSchema = z
  .strictObject({ read: z.boolean().describe('true marks it read, false unread again') })
  .meta({ title: 'UpdateNotificationInput', description: 'The change to one notification' });
export type UpdateNotificationInput = z.input<typeof UpdateNotificationSchema>;

function notificationView(n: Notification): NotificationView {
  return {
    id: n.id,
    orgId: n.orgId,
    type: n.type,
    title: n.title,
    message: n.message,
    severity: n.severity,
    alertId: n.alertId,
    read: n.readAt !== null,
    readAt: n.readAt?.toISOString() ?? null,
    createdAt: n.createdAt.toISOString(),
  };
}

/** The calling user: notifications are a user's own (an API key acts for its user). */
function callerId(ctx: RequestContext): string {
  const { userId } = authenticated(ctx);
  if (!userId) throw forbidden('Notifications belong to users');
  return userId;
}

async function ownNotification(ctx: RequestContext, id: string): Promise<Notification> {
  const userId = callerId(ctx);
  const row = isUuid(id) ? await ctx.em.findOne(Notification, { id, userId }) : null;
  if (!row) throw notFound(RESOURCE);
  return row;
}

export async function listNotifications(ctx: RequestContext, raw: ListNotificationsInput): Promise<Page<NotificationView>> {
  const query = parseInput(ListNotificationsQuery, raw);
  const userId = callerId(ctx);
  const where = { userId, ...(query.unread === undefined ? {} : { readAt: query.unread ? null : { $ne: null } }) };
  const [rows, total] = await ctx.em.findAndCount(Notification, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(notificationView), total, query);
}

export async function unreadNotificationCount(ctx: RequestContext): Promise<NotificationCount> {
  return { count: await ctx.em.count(Notification, { userId: callerId(ctx), readAt: null }) };
}

export async function updateNotification(ctx: RequestContext, id: string, raw: UpdateNotificationInput): Promise<NotificationView> {
  const input = parseInput(UpdateNotificationSchema, raw);
  const row = await ownNotification(ctx, id);
  // Marking read again keeps the first time it was read.
  if (input.read !== (row.readAt !== null)) {
    row.readAt = input.read ? ctx.runtime.clock.now() : null;
    await ctx.em.flush();
  }
  return notificationView(row);
}

export async function deleteNotification(ctx: RequestContext, id: string): Promise<void> {
  const row = await ownNotification(ctx, id);
  await ctx.em.nativeDelete(Notification, { id: row.id });
}

export const NotificationsClearedSchema = z.object({ deleted: z.number().int().describe('notifications deleted') }).meta({ title: 'NotificationsCleared', description: 'What clearing deleted' });

/** Deletes every notification of the caller; answers how many. */
export async function clearNotifications(ctx: RequestContext): Promise<z.output<typeof NotificationsClearedSchema>> {
  return { deleted: await ctx.em.nativeDelete(Notification, { userId: callerId(ctx) }) };
}

export interface NewNotification {
  userId: string;
  orgId: string;
  type: string;
  title: string;
  message: string | null;
  severity: string | null;
  alertId: string | null;
  /** one notification per user and key: a repeated fan-out adds nothing */
  dedupKey: string;
}

/** Creates notifications in the caller's transaction, each pushed to its user once committed. */
export async function createNotifications(tx: RequestContext, items: NewNotification[]): Promise<void> {
  if (items.length === 0) return;
  const now = tx.runtime.clock.now();
  const values = items.map(() => '(?::uuid, ?::uuid, ?::uuid, ?, ?, ?, ?, ?::uuid, ?, ?::timestamptz)').join(', ');
  const rows = (await tx.em.execute(
    `insert into notification (id, user_id, org_id, type, title, message, severity, alert_id, dedup_key, created_at) values ${values}
     on conflict (user_id, dedup_key) do nothing returning id`,
    items.flatMap((n) => [randomUUID(), n.userId, n.orgId, n.type, n.title.slice(0, 500), n.message, n.severity, n.alertId, n.dedupKey, now]),
  )) as { id: string }[];
  if (rows.length === 0) return;
  const created = await tx.em.find(Notification, { id: { $in: rows.map((r) => r.id) } });
  for (const n of created) await publishOnCommit(tx.em, NOTIFICATION_TOPIC, { userId: n.userId, notification: notificationView(n) });
}

/** The caller's new notifications as they are created, on whichever instance. */
export async function subscribeNotifications(ctx: RequestContext): Promise<AsyncIterable<NotificationView>> {
  const userId = callerId(ctx);
  return selectIterable(ctx.runtime.pubsub.subscribe(NOTIFICATION_TOPIC), (payload: { userId: string; notification: NotificationView }) => (payload.userId === userId ? payload.notification : null));
}
