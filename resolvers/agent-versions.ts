import { args, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as agentVersions from '../src/services/devices/agent-versions.js';
import * as agentReleases from '../src/services/devices/agent-releases.js';
import { pageConnectionOf, paged } from './shared.js';


export const AgentVersionResolver = operations({
  agentVersions: query(
    pageConnectionOf(agentVersions.AgentVersionPageSchema),
    // `promoted` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('AgentVersionListArgs', agentVersions.AgentVersionListQuery, { fields: { promoted: { type: () => Boolean } } })],
    paged(agentVersions.listAgentVersions),
    { description: 'Registered agent binaries, newest release first' },
  ),
  latestAgentVersions: query([agentVersions.AgentVersionViewSchema], [args('LatestAgentVersionArgs', agentVersions.LatestAgentVersionQuery)], async (ctx, filter) => (await agentVersions.latestAgentVersions(ctx, filter)).data, {
    description: 'The current upgrade targets: the latest promoted stable build per component and platform',
  }),
  promoteAgentVersion: mutation(agentVersions.AgentVersionPromotionSchema, [input('PromoteAgentVersionInput', agentVersions.PromoteAgentVersionSchema)], agentVersions.promoteAgentVersion, {
    description: 'Makes a version (or one of its components) the upgrade target; platform administrators, with MFA',
  }),
  syncAgentRelease: mutation(agentReleases.AgentReleaseSyncSchema, [args('SyncAgentReleaseArgs', agentReleases.SyncAgentReleaseQuery)], agentReleases.syncAgentRelease, {
    description: 'Registers a release’s binaries from the releases API; platform administrators',
  }),
});
