import { args, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as complianceReports from '../src/services/patching/compliance-reports.js';
import * as patchCompliance from '../src/services/patching/patch-compliance.js';

// The file itself is downloaded over REST (`downloadUrl`): GraphQL answers JSON only.
export const PatchComplianceResolver = operations({
  patchCompliance: query(patchCompliance.PatchComplianceSchema, [args('PatchComplianceArgs', patchCompliance.PatchComplianceQuery)], patchCompliance.getPatchCompliance, {
    description: 'Compliance with the approved patches of the devices the caller sees (as GET /patches/compliance)',
  }),
  patchComplianceReport: query(complianceReports.PatchComplianceReportSchema, [id], complianceReports.getComplianceReport, { description: 'One of the caller’s compliance reports' }),
  requestPatchComplianceReport: mutation(
    complianceReports.PatchComplianceReportSchema,
    [input('RequestPatchComplianceReportInput', complianceReports.PatchComplianceReportQuery, { nullable: true })],
    (ctx, filters) => complianceReports.requestComplianceReport(ctx, filters ?? {}),
    { description: 'Queues a compliance report (CSV or PDF) of the devices the caller sees; download it at its `downloadUrl` once completed' },
  ),
});
