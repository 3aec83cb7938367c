import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AlertChannelPageSchema,
  AlertChannelTestResultSchema,
  AlertChannelViewSchema,
  ChannelDeliveryPageSchema,
  CreateAlertChannelSchema,
  ListChannelDeliveriesQuery,
  ListAlertChannelsQuery,
  UpdateAlertChannelSchema,
  createAlertChannel,
  deleteAlertChannel,
  getAlertChannel,
  listAlertChannels,
  listChannelDeliveries,
  testAlertChannel,
  updateAlertChannel,
} from '../src/services/alerts/alert-channels.js';
import { RestRouter, pathId } from './router.js';

/** Alert notification channels: email, Slack, Teams, generic webhook, PagerDuty and SMS destinations, and their test sends. */
export function alertChannelsRouter(openapi: OpenApiRegistry): RestRouter {
  const channel = { id: pathId('Alert channel') };
  return new RestRouter(openapi, 'Alert channels')
    .get('/alerts/channels', { summary: "An organization's alert channels (secrets shown as masked hints)", query: ListAlertChannelsQuery, response: AlertChannelPageSchema }, (ctx, { query }) =>
      listAlertChannels(ctx, query),
    )
    .post('/alerts/channels', { summary: 'Create an alert channel', body: CreateAlertChannelSchema, status: 201, response: AlertChannelViewSchema }, (ctx, { body }) => createAlertChannel(ctx, body))
    .get('/alerts/channels/:id', { summary: 'One alert channel', params: channel, response: AlertChannelViewSchema }, (ctx, { params }) => getAlertChannel(ctx, params.id))
    .get('/alerts/channels/:id/deliveries', { summary: "The channel's deliveries, newest first", params: channel, query: ListChannelDeliveriesQuery, response: ChannelDeliveryPageSchema }, (ctx, { params, query }) =>
      listChannelDeliveries(ctx, params.id, query),
    )
    .patch('/alerts/channels/:id', { summary: 'Rename, reconfigure, enable or disable an alert channel', params: channel, body: UpdateAlertChannelSchema, response: AlertChannelViewSchema }, (ctx, { params, body }) =>
      updateAlertChannel(ctx, params.id, body),
    )
    .delete('/alerts/channels/:id', { summary: 'Delete an alert channel (policies naming it lose it)', params: channel, status: 204 }, (ctx, { params }) => deleteAlertChannel(ctx, params.id))
    .post('/alerts/channels/:id/test', { summary: 'Send a test message through the channel now and answer the outcome', params: channel, response: AlertChannelTestResultSchema }, (ctx, { params }) =>
      testAlertChannel(ctx, params.id),
    );
}
