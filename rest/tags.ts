import type { OpenApiRegistry } from '../src/http/openapi.js';
import { DevicePageSchema } from '../src/services/groups/device-groups.js';
import { TagDevicesQuery, TagListQuery, TagPageSchema, listTaggedDevices, listTags } from '../src/services/groups/tags.js';
import { RestRouter } from './router.js';

/** Device tags: the labels set on devices, listed with their device counts. */
export function tagsRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'Tags')
    .get('/tags', { summary: 'Every tag on the devices you can see, with device counts', query: TagListQuery, response: TagPageSchema }, (ctx, { query }) => listTags(ctx, query))
    .get('/tags/devices', { summary: 'Devices carrying `tag`, or any of `tags`', query: TagDevicesQuery, response: DevicePageSchema }, (ctx, { query }) => listTaggedDevices(ctx, query));
}
