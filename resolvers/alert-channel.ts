import { args, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import {
  AlertChannelPageSchema,
  AlertChannelTestResultSchema,
  AlertChannelViewSchema,
  CreateAlertChannelSchema,
  ListAlertChannelsQuery,
  UpdateAlertChannelSchema,
  createAlertChannel,
  deleteAlertChannel,
  getAlertChannel,
  listAlertChannels,
  testAlertChannel,
  updateAlertChannel,
} from '../src/services/alert-channels.js';

export const AlertChannelResolver = operations({
  alertChannels: query(AlertChannelPageSchema, [args('AlertChannelListArgs', ListAlertChannelsQuery)], listAlertChannels, {
    description: "An organization's alert notification channels; secrets appear as masked hints",
  }),
  alertChannel: query(AlertChannelViewSchema, [id], getAlertChannel, { description: 'One alert channel' }),
  createAlertChannel: mutation(AlertChannelViewSchema, [input('CreateAlertChannelInput', CreateAlertChannelSchema)], createAlertChannel, { description: 'Creates an alert channel' }),
  updateAlertChannel: mutation(AlertChannelViewSchema, [id, input('UpdateAlertChannelInput', UpdateAlertChannelSchema)], updateAlertChannel, {
    description: 'Renames, reconfigures, enables or disables an alert channel',
  }),
  deleteAlertChannel: mutation(Boolean, [id], deleteAlertChannel, { description: 'Deletes the channel; policies naming it lose it' }),
  testAlertChannel: mutation(AlertChannelTestResultSchema, [id], testAlertChannel, { description: 'Sends a test message through the channel now and answers the outcome' }),
});
