import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import * as notifications from '../src/services/notifications/notifications.js';
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'One of the caller’s notifications' });

export const NotificationResolver = operations({
  // `unread` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
  notifications: query(pageConnectionOf(notifications.NotificationPageSchema), [pageArgs('NotificationListArgs', notifications.ListNotificationsQuery, { fields: { unread: { type: () => Boolean } } })], paged(notifications.listNotifications), {
    description: "The caller's notifications, newest first",
  }),
  unreadNotificationCount: query(notifications.NotificationCountSchema, [], notifications.unreadNotificationCount, { description: "How many of the caller's notifications are unread" }),
  updateNotification: mutation(notifications.NotificationViewSchema, [id, arg('input', inputType('UpdateNotificationInput', notifications.UpdateNotificationSchema), { description: 'The change' })], notifications.updateNotification, {
    description: 'Marks one of the caller’s notifications read (or unread)',
  }),
  deleteNotification: mutation(Boolean, [id], notifications.deleteNotification, { description: 'Deletes one of the caller’s notifications' }),
  clearNotifications: mutation(notifications.NotificationsClearedSchema, [], notifications.clearNotifications, { description: "Deletes every notification of the caller; answers how many" }),
  notificationAdded: subscription(notifications.NotificationViewSchema, [], notifications.subscribeNotifications, { description: "The caller's new notifications as they are created, from any server instance" }),
});
