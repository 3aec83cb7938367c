import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as notifications from '../src/services/notifications/notifications.js';
import { call, pathId, RestRouter } from './router.js';

/** The caller's own in-app notifications. */
export function notificationsRouter(openapi: OpenApiRegistry): RestRouter {
  const notification = { id: pathId('Notification') };
  return new RestRouter(openapi, 'Notifications')
    .get('/notifications', { summary: 'Your notifications, newest first', query: notifications.ListNotificationsQuery, response: notifications.NotificationPageSchema }, call(notifications.listNotifications))
    .get('/notifications/unread-count', { summary: 'How many of your notifications are unread', response: notifications.NotificationCountSchema }, call(notifications.unreadNotificationCount))
    .patch('/notifications/:id', { summary: 'Mark one of your notifications read (or unread)', params: notification, body: notifications.UpdateNotificationSchema, response: notifications.NotificationViewSchema }, call(notifications.updateNotification))
    .delete('/notifications/:id', { summary: 'Delete one of your notifications', params: notification, status: 204 }, call(notifications.deleteNotification))
    .delete('/notifications', { summary: 'Delete all your notifications', status: 204 }, async (ctx) => void (await notifications.clearNotifications(ctx)));
}
