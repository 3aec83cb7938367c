import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  ListNotificationsQuery,
  NotificationCountSchema,
  NotificationPageSchema,
  NotificationViewSchema,
  UpdateNotificationSchema,
  clearNotifications,
  deleteNotification,
  listNotifications,
  unreadNotificationCount,
  updateNotification,
} from '../src/services/notifications/notifications.js';
import { RestRouter, pathId } from './router.js';

/** The caller's own in-app notifications. */
export function notificationsRouter(openapi: OpenApiRegistry): RestRouter {
  const notification = { id: pathId('Notification') };
  return new RestRouter(openapi, 'Notifications')
    .get('/notifications', { summary: 'Your notifications, newest first', query: ListNotificationsQuery, response: NotificationPageSchema }, (ctx, { query }) => listNotifications(ctx, query))
    .get('/notifications/unread-count', { summary: 'How many of your notifications are unread', response: NotificationCountSchema }, (ctx) => unreadNotificationCount(ctx))
    .patch('/notifications/:id', { summary: 'Mark one of your notifications read (or unread)', params: notification, body: UpdateNotificationSchema, response: NotificationViewSchema }, (ctx, { params, body }) =>
      updateNotification(ctx, params.id, body),
    )
    .delete('/notifications/:id', { summary: 'Delete one of your notifications', params: notification, status: 204 }, (ctx, { params }) => deleteNotification(ctx, params.id))
    .delete('/notifications', { summary: 'Delete all your notifications', status: 204 }, async (ctx) => void (await clearNotifications(ctx)));
}
