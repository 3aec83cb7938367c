import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as patchPolicies from '../src/services/patching/patch-policies.js';
import { call, pathId, RestRouter } from './router.js';

/** Patch policies: which devices, which of their patches are approved at once, when and how they are installed. */
export function patchPoliciesRouter(openapi: OpenApiRegistry): RestRouter {
  const policy = { id: pathId('Patch policy') };
  return new RestRouter(openapi, 'Patch policies')
    .get('/patch-policies', { summary: 'Patch policies of the organizations you see, newest first', query: patchPolicies.PatchPolicyListQuery, response: patchPolicies.PatchPolicyPageSchema }, call(patchPolicies.listPatchPolicies))
    .post('/patch-policies', { summary: 'Create a patch policy (an enabled one approves what it matches at once)', body: patchPolicies.CreatePatchPolicySchema, status: 201, response: patchPolicies.PatchPolicyViewSchema }, call(patchPolicies.createPatchPolicy))
    .get('/patch-policies/:id', { summary: 'One patch policy', params: policy, response: patchPolicies.PatchPolicyViewSchema }, call(patchPolicies.getPatchPolicy))
    .patch('/patch-policies/:id', { summary: 'Change a patch policy (an enabled one approves what it now matches at once)', params: policy, body: patchPolicies.UpdatePatchPolicySchema, response: patchPolicies.PatchPolicyViewSchema }, call(patchPolicies.updatePatchPolicy))
    .delete('/patch-policies/:id', { summary: 'Delete a patch policy (its approvals stay)', params: policy, status: 204 }, call(patchPolicies.deletePatchPolicy));
}
