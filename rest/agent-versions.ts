import type { Response } from 'express';
import { z } from 'zod';
import { notFound } from '../src/errors.js';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as agentVersions from '../src/services/devices/agent-versions.js';
import * as agentReleases from '../src/services/devices/agent-releases.js';
import * as devices from '../src/services/devices/devices.js';
import { call, RestRouter } from './router.js';

/** A redirect to the release asset, or the mirrored file; either way with its checksum. */
async function sendBinary(res: Response, binary: agentVersions.AgentBinary): Promise<void> {
  res.setHeader('X-Checksum-Sha256', binary.checksum);
  if ('redirect' in binary) return res.redirect(302, binary.redirect);
  const headers = { 'content-type': 'application/octet-stream', 'content-disposition': `attachment; filename="${binary.filename}"` };
  await new Promise<void>((resolve, reject) => res.sendFile(binary.file, { headers, dotfiles: 'allow' }, (error) => (error ? reject(error) : resolve())));
}

const binaryNotFound = notFound('Agent binary').message;

/** Agent releases (spec, Versioning 4–8) and the public downloads installers and agents use. */
export function agentVersionsRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'Agent versions')
    .get('/agent-versions', { summary: 'Registered agent binaries, newest release first', query: agentVersions.AgentVersionListQuery, response: agentVersions.AgentVersionPageSchema }, call(agentVersions.listAgentVersions))
    .get('/agent-versions/latest', { summary: 'The current upgrade targets: the latest promoted stable build per component and platform', query: agentVersions.LatestAgentVersionQuery, response: agentVersions.AgentVersionListSchema }, call(agentVersions.latestAgentVersions))
    .get(
      '/agent-versions/:version/download',
      {
        summary: 'Download a registered build: a redirect to the release asset (BINARY_SOURCE=github) or the file (local)',
        params: { version: z.string().max(60, { message: notFound('Agent version').message }) },
        query: agentVersions.AgentVersionDownloadQuery,
        status: 302,
      },
      async (ctx, { params, query, res }) => sendBinary(res, await agentVersions.downloadAgentVersion(ctx, params.version, query)),
    )
    .post('/agent-versions/promote', { summary: 'Make a version (or one of its components) the upgrade target; platform administrators, MFA', body: agentVersions.PromoteAgentVersionSchema, response: agentVersions.AgentVersionPromotionSchema }, call(agentVersions.promoteAgentVersion))
    .post('/agent-versions/sync-github', { summary: "Register a release's binaries from the releases API; platform administrators", query: agentReleases.SyncAgentReleaseQuery, response: agentReleases.AgentReleaseSyncSchema }, call(agentReleases.syncAgentRelease))
    .get(
      '/agents/download/:os/:arch',
      {
        summary: 'Download the promoted agent build for a platform (no credentials)',
        params: { os: z.enum(devices.OsTypeSchema.options, { message: binaryNotFound }), arch: z.string().max(20, { message: binaryNotFound }) },
        query: agentVersions.AgentDownloadQuery,
        status: 302,
        public: true,
      },
      async (ctx, { params, query, res }) => sendBinary(res, await agentVersions.downloadAgent(ctx, params.os, params.arch, query)),
    )
    .get('/agents/install.sh', { summary: 'One-line installer: `curl -fsSL …/agents/install.sh | sh -s -- --key <enrollment key>` (no credentials)', public: true }, async (ctx, { res }) => {
      res.type('text/x-shellscript').send(await agentVersions.installScript(ctx));
    });
}
