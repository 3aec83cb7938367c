import { args, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import {
  AgentVersionListQuery,
  AgentVersionPageSchema,
  AgentVersionPromotionSchema,
  AgentVersionViewSchema,
  LatestAgentVersionQuery,
  PromoteAgentVersionSchema,
  latestAgentVersions,
  listAgentVersions,
  promoteAgentVersion,
} from '../src/services/devices/agent-versions.js';
import { AgentReleaseSyncSchema, SyncAgentReleaseQuery, syncAgentRelease } from '../src/services/devices/agent-releases.js';
import { pageConnectionOf, paged } from './shared.js';


export const AgentVersionResolver = operations({
  agentVersions: query(
    pageConnectionOf(AgentVersionPageSchema),
    // `promoted` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('AgentVersionListArgs', AgentVersionListQuery, { fields: { promoted: { type: () => Boolean } } })],
    paged(listAgentVersions),
    { description: 'Registered agent binaries, newest release first' },
  ),
  latestAgentVersions: query([AgentVersionViewSchema], [args('LatestAgentVersionArgs', LatestAgentVersionQuery)], async (ctx, filter) => (await latestAgentVersions(ctx, filter)).data, {
    description: 'The current upgrade targets: the latest promoted stable build per component and platform',
  }),
  promoteAgentVersion: mutation(AgentVersionPromotionSchema, [input('PromoteAgentVersionInput', PromoteAgentVersionSchema)], promoteAgentVersion, {
    description: 'Makes a version (or one of its components) the upgrade target; platform administrators, with MFA',
  }),
  syncAgentRelease: mutation(AgentReleaseSyncSchema, [args('SyncAgentReleaseArgs', SyncAgentReleaseQuery)], syncAgentRelease, {
    description: 'Registers a release’s binaries from the releases API; platform administrators',
  }),
});
