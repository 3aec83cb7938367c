import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as deviceGroups from '../src/services/groups/device-groups.js';
import * as tags from '../src/services/groups/tags.js';
import { call, RestRouter } from './router.js';

/** Device tags: the labels set on devices, listed with their device counts. */
export function tagsRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'Tags')
    .get('/tags', { summary: 'Every tag on the devices you can see, with device counts', query: tags.TagListQuery, response: tags.TagPageSchema }, call(tags.listTags))
    .get('/tags/devices', { summary: 'Devices carrying `tag`, or any of `tags`', query: tags.TagDevicesQuery, response: deviceGroups.DevicePageSchema }, call(tags.listTaggedDevices));
}
