import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as alertChannels from '../src/services/alerts/alert-channels.js';
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'The alert channel' });

export const AlertChannelResolver = operations({
  alertChannels: query(pageConnectionOf(alertChannels.AlertChannelPageSchema), [pageArgs('AlertChannelListArgs', alertChannels.ListAlertChannelsQuery)], paged(alertChannels.listAlertChannels), {
    description: "An organization's alert notification channels; secrets appear as masked hints",
  }),
  alertChannel: query(alertChannels.AlertChannelViewSchema, [id], alertChannels.getAlertChannel, { description: 'One alert channel' }),
  alertChannelDeliveries: query(
    pageConnectionOf(alertChannels.ChannelDeliveryPageSchema),
    [id, pageArgs('AlertChannelDeliveryListArgs', alertChannels.ListChannelDeliveriesQuery)],
    paged(alertChannels.listChannelDeliveries),
    { description: "The channel's deliveries, newest first" },
  ),
  createAlertChannel: mutation(alertChannels.AlertChannelViewSchema, [arg('input', inputType('CreateAlertChannelInput', alertChannels.CreateAlertChannelSchema), { description: 'The channel to create' })], alertChannels.createAlertChannel, { description: 'Creates an alert channel' }),
  updateAlertChannel: mutation(alertChannels.AlertChannelViewSchema, [id, arg('input', inputType('UpdateAlertChannelInput', alertChannels.UpdateAlertChannelSchema), { description: 'What to change' })], alertChannels.updateAlertChannel, {
    description: 'Renames, reconfigures, enables or disables an alert channel',
  }),
  deleteAlertChannel: mutation(Boolean, [id], alertChannels.deleteAlertChannel, { description: 'Deletes the channel; policies naming it lose it' }),
  testAlertChannel: mutation(alertChannels.AlertChannelTestResultSchema, [id], alertChannels.testAlertChannel, { description: 'Sends a test message through the channel now and answers the outcome' }),
});
