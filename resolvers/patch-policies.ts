import { cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as patchPolicies from '../src/services/patching/patch-policies.js';
import { connectionOf, cursored } from './shared.js';

export const PatchPolicyResolver = operations({
  patchPolicies: query(connectionOf(patchPolicies.PatchPolicyViewSchema), [cursorArgs('PatchPolicyListArgs', patchPolicies.PatchPolicyListQuery)], cursored(patchPolicies.listPatchPolicies, (p) => p.createdAt, patchPolicies.countPatchPolicies), {
    description: 'Patch policies of the organizations the caller sees, newest first (as GET /patch-policies)',
  }),
  patchPolicy: query(patchPolicies.PatchPolicyViewSchema, [id], patchPolicies.getPatchPolicy, { description: 'One patch policy' }),
  createPatchPolicy: mutation(patchPolicies.PatchPolicyViewSchema, [input('CreatePatchPolicyInput', patchPolicies.CreatePatchPolicySchema)], patchPolicies.createPatchPolicy, {
    description: 'Creates a patch policy; an enabled one approves the pending patches it matches at once',
  }),
  updatePatchPolicy: mutation(patchPolicies.PatchPolicyViewSchema, [id, input('UpdatePatchPolicyInput', patchPolicies.UpdatePatchPolicySchema)], patchPolicies.updatePatchPolicy, {
    description: 'Changes a patch policy; an enabled one approves the pending patches it now matches at once',
  }),
  deletePatchPolicy: mutation(Boolean, [id], patchPolicies.deletePatchPolicy, { description: 'Deletes a patch policy (the approvals it made stay)' }),
});
