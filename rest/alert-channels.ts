import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as alertChannels from '../src/services/alerts/alert-channels.js';
import { call, pathId, RestRouter } from './router.js';

/** Alert notification channels: email, Slack, Teams, generic webhook, PagerDuty and SMS destinations, and their test sends. */
export function alertChannelsRouter(openapi: OpenApiRegistry): RestRouter {
  const channel = { id: pathId('Alert channel') };
  return new RestRouter(openapi, 'Alert channels')
    .get('/alerts/channels', { summary: "An organization's alert channels (secrets shown as masked hints)", query: alertChannels.ListAlertChannelsQuery, response: alertChannels.AlertChannelPageSchema }, call(alertChannels.listAlertChannels))
    .post('/alerts/channels', { summary: 'Create an alert channel', body: alertChannels.CreateAlertChannelSchema, status: 201, response: alertChannels.AlertChannelViewSchema }, call(alertChannels.createAlertChannel))
    .get('/alerts/channels/:id', { summary: 'One alert channel', params: channel, response: alertChannels.AlertChannelViewSchema }, call(alertChannels.getAlertChannel))
    .get('/alerts/channels/:id/deliveries', { summary: "The channel's deliveries, newest first", params: channel, query: alertChannels.ListChannelDeliveriesQuery, response: alertChannels.ChannelDeliveryPageSchema }, call(alertChannels.listChannelDeliveries))
    .patch('/alerts/channels/:id', { summary: 'Rename, reconfigure, enable or disable an alert channel', params: channel, body: alertChannels.UpdateAlertChannelSchema, response: alertChannels.AlertChannelViewSchema }, call(alertChannels.updateAlertChannel))
    .delete('/alerts/channels/:id', { summary: 'Delete an alert channel (policies naming it lose it)', params: channel, status: 204 }, call(alertChannels.deleteAlertChannel))
    .post('/alerts/channels/:id/test', { summary: 'Send a test message through the channel now and answer the outcome', params: channel, response: alertChannels.AlertChannelTestResultSchema }, call(alertChannels.testAlertChannel));
}
