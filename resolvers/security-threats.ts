import { args, cursorArgs, id, mutation, operations, query } from '../src/graphql/contract.js';
import * as scans from '../src/services/security/security-scans.js';
import * as threats from '../src/services/security/threats.js';
import { connectionOf, cursored } from './shared.js';

export const SecurityThreatResolver = operations({
  securityThreats: query(connectionOf(threats.ThreatViewSchema), [cursorArgs('SecurityThreatListArgs', threats.ThreatListQuery)], cursored(threats.listThreats, (t) => t.detectedAt, threats.countThreats), {
    description: 'Threats on the devices the caller sees, most recently detected first (as GET /security/threats)',
  }),
  deviceSecurityThreats: query(connectionOf(threats.ThreatViewSchema), [cursorArgs('DeviceSecurityThreatArgs', threats.DeviceThreatArgs)], cursored(threats.listThreats, (t) => t.detectedAt, threats.countThreats), {
    description: 'One device’s threats, most recently detected first (as GET /security/threats/:deviceId)',
  }),
  securityScans: query(connectionOf(scans.ScanViewSchema), [cursorArgs('SecurityScanListArgs', scans.DeviceScanArgs)], cursored(scans.listDeviceScans, (s) => s.createdAt, scans.countScans), {
    description: 'One device’s antivirus scans, newest first',
  }),
  quarantineThreat: mutation(threats.ThreatActionResultSchema, [id], threats.quarantineThreat, { description: 'Quarantines a detected threat (its agent is sent quarantine_threat)' }),
  removeThreat: mutation(threats.ThreatActionResultSchema, [id], threats.removeThreat, { description: 'Removes a threat (its agent is sent remove_threat)' }),
  restoreThreat: mutation(threats.ThreatActionResultSchema, [id], threats.restoreThreat, { description: 'Restores a quarantined threat (its agent is sent restore_threat)' }),
  startSecurityScan: mutation(scans.ScanStartedSchema, [args('StartSecurityScanArgs', scans.StartScanArgs)], (ctx, { deviceId, ...input }) => scans.startScan(ctx, deviceId, input), {
    description: 'Starts an antivirus scan of a device',
  }),
});
