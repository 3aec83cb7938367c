import { Notification } from '../../../entities/notification.js';
import { notificationsRouter } from '../../../rest/notifications.js';
import { NotificationResolver } from '../../../resolvers/notifications.js';
import { defineDomain } from '../../domain-module.js';

/** In-app notifications of users. */
export const notificationsDomain = defineDomain({
  name: 'notifications',
  entities: [Notification],
  rest: [notificationsRouter],
  resolvers: [NotificationResolver],
});
