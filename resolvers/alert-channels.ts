import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'The alert channel' });

export const AlertChannelResolver = operations({
  alertChannels: query(pageConnectionOf(AlertChannelPageSchema), [pageArgs('AlertChannelListArgs', ListAlertChannelsQuery)], paged(listAlertChannels), {
    description: "An organization's alert notification channels; secrets appear as masked hints",
  }),
  alertChannel: query(AlertChannelViewSchema, [id], getAlertChannel, { description: 'One alert channel' }),
  alertChannelDeliveries: query(
    pageConnectionOf(ChannelDeliveryPageSchema),
    [id, pageArgs('AlertChannelDeliveryListArgs', ListChannelDeliveriesQuery)],
    paged(listChannelDeliveries),
    { description: "The channel's deliveries, newest first" },
  ),
  createAlertChannel: mutation(AlertChannelViewSchema, [arg('input', inputType('CreateAlertChannelInput', CreateAlertChannelSchema), { description: 'The channel to create' })], createAlertChannel, { description: 'Creates an alert channel' }),
  updateAlertChannel: mutation(AlertChannelViewSchema, [id, arg('input', inputType('UpdateAlertChannelInput', UpdateAlertChannelSchema), { description: 'What to change' })], updateAlertChannel, {
    description: 'Renames, reconfigures, enables or disables an alert channel',
  }),
  deleteAlertChannel: mutation(Boolean, [id], deleteAlertChannel, { description: 'Deletes the channel; policies naming it lose it' }),
  testAlertChannel: mutation(AlertChannelTestResultSchema, [id], testAlertChannel, { description: 'Sends a test message through the channel now and answers the outcome' }),
});
