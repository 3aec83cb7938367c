import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as scans from '../src/services/security/security-scans.js';
import * as threats from '../src/services/security/threats.js';
import { call, pathId, RestRouter } from './router.js';

/** Threats the devices' antiviruses detect, the actions on them, and antivirus scans. */
export function securityThreatsRouter(openapi: OpenApiRegistry): RestRouter {
  const threat = { id: pathId('Security threat') };
  const device = { deviceId: pathId('Device') };
  return new RestRouter(openapi, 'Security')
    .get('/security/threats', { summary: 'Threats on the devices you see, most recently detected first', query: threats.ThreatListQuery, response: threats.ThreatPageSchema }, call(threats.listThreats))
    .get('/security/threats/:deviceId', { summary: 'One device’s threats, most recently detected first', params: device, query: threats.DeviceThreatListQuery, response: threats.ThreatPageSchema }, call(threats.listDeviceThreats))
    .post('/security/threats/:id/quarantine', { summary: 'Quarantine a detected threat (its agent is sent quarantine_threat)', params: threat, status: 202, response: threats.ThreatActionResultSchema }, call(threats.quarantineThreat))
    .post('/security/threats/:id/remove', { summary: 'Remove a threat (its agent is sent remove_threat)', params: threat, status: 202, response: threats.ThreatActionResultSchema }, call(threats.removeThreat))
    .post('/security/threats/:id/restore', { summary: 'Restore a quarantined threat (its agent is sent restore_threat)', params: threat, status: 202, response: threats.ThreatActionResultSchema }, call(threats.restoreThreat))
    .post('/security/scan/:deviceId', { summary: 'Start an antivirus scan of a device', params: device, body: scans.StartScanSchema, status: 202, response: scans.ScanStartedSchema }, call(scans.startScan))
    .get('/security/scans/:deviceId', { summary: 'A device’s scans, newest first', params: device, query: scans.ScanListQuery, response: scans.ScanPageSchema }, call(scans.listScans));
}
