import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import {
  ListNotificationsQuery,
  NotificationsClearedSchema,
  NotificationCountSchema,
  NotificationPageSchema,
  NotificationViewSchema,
  UpdateNotificationSchema,
  clearNotifications,
  deleteNotification,
  listNotifications,
  subscribeNotifications,
  unreadNotificationCount,
  updateNotification,
} from '../src/services/notifications/notifications.js';
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'One of the caller’s notifications' });

export const NotificationResolver = operations({
  // `unread` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
  notifications: query(pageConnectionOf(NotificationPageSchema), [pageArgs('NotificationListArgs', ListNotificationsQuery, { fields: { unread: { type: () => Boolean } } })], paged(listNotifications), {
    description: "The caller's notifications, newest first",
  }),
  unreadNotificationCount: query(NotificationCountSchema, [], unreadNotificationCount, { description: "How many of the caller's notifications are unread" }),
  updateNotification: mutation(NotificationViewSchema, [id, arg('input', inputType('UpdateNotificationInput', UpdateNotificationSchema), { description: 'The change' })], updateNotification, {
    description: 'Marks one of the caller’s notifications read (or unread)',
  }),
  deleteNotification: mutation(Boolean, [id], deleteNotification, { description: 'Deletes one of the caller’s notifications' }),
  clearNotifications: mutation(NotificationsClearedSchema, [], clearNotifications, { description: "Deletes every notification of the caller; answers how many" }),
  notificationAdded: subscription(NotificationViewSchema, [], subscribeNotifications, { description: "The caller's new notifications as they are created, from any server instance" }),
});
