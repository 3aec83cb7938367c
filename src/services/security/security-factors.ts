import { z } from 'zod';
import type { SecurityFactor, SecurityPolicySettings } from '../../../entities/security-posture.js';
import type { DeviceSecurityState } from '../../../entities/security.js';
import { enumValues } from '../../validation.js';

/*
 * The security score's factors: what a device earns of each weight, measured against the settings of
 * the security policy that applies to it (the defaults when none does). Scores are one decimal.
 */

export const SECURITY_FACTORS = ['antivirus', 'firewall', 'encryption', 'passwordPolicy', 'localAdmins', 'threats', 'patches'] as const;
export type SecurityFactorKey = (typeof SECURITY_FACTORS)[number];
export const SecurityFactorSchema = z
  .enum(SECURITY_FACTORS)
  .meta({ title: 'SecurityFactor', description: 'One part of a device’s security score' })
  .register(enumValues, {
    antivirus: '20: enabled and up to date (10 when enabled but outdated).',
    firewall: '15: the firewall is enabled.',
    encryption: '20: the disk is encrypted.',
    passwordPolicy: '10: complex passwords of at least the policy’s passwordMinLength.',
    localAdmins: '10: no more local administrators than the policy’s maxLocalAdmins.',
    threats: '10: no threat detected or failed to handle.',
    patches: '15 × the device’s patch compliance percent ÷ 100.',
  });

export const FACTOR_WEIGHTS: Record<SecurityFactorKey, number> = { antivirus: 20, firewall: 15, encryption: 20, passwordPolicy: 10, localAdmins: 10, threats: 10, patches: 15 };

/** Threats in these statuses count as active (they lower the score and the dashboard counts them). */
export const ACTIVE_THREAT_STATUSES = ['detected', 'failed'] as const;

export const DEFAULT_POLICY_SETTINGS: SecurityPolicySettings = { passwordMinLength: 12, maxLocalAdmins: 2, autoQuarantine: false };

export const oneDecimal = (n: number): number => Math.round(n * 10) / 10;

export const SecurityFactorViewSchema = z
  .object({ key: SecurityFactorSchema, weight: z.number().describe('the most it adds to the score'), earned: z.number().describe('what it adds (one decimal)') })
  .meta({ title: 'SecurityScoreFactor', description: 'What one factor adds to a security score' });

type Measured = Pick<DeviceSecurityState, 'antivirus' | 'firewallEnabled' | 'encryptionEnabled' | 'passwordPolicy' | 'localAdmins'>;

/** The factors a device earns, in `SECURITY_FACTORS` order. */
export function factorsOf(state: Measured, settings: SecurityPolicySettings, activeThreats: number, compliancePercent: number): SecurityFactor[] {
  const av = state.antivirus;
  const pw = state.passwordPolicy;
  const earned: Record<SecurityFactorKey, number> = {
    antivirus: av?.enabled ? (av.upToDate ? 20 : 10) : 0,
    firewall: state.firewallEnabled ? 15 : 0,
    encryption: state.encryptionEnabled ? 20 : 0,
    passwordPolicy: pw && pw.complexity && pw.minLength >= settings.passwordMinLength ? 10 : 0,
    localAdmins: state.localAdmins.length <= settings.maxLocalAdmins ? 10 : 0,
    threats: activeThreats === 0 ? 10 : 0,
    patches: oneDecimal((15 * compliancePercent) / 100),
  };
  return SECURITY_FACTORS.map((key) => ({ key, weight: FACTOR_WEIGHTS[key], earned: earned[key] }));
}

export const scoreOf = (factors: readonly SecurityFactor[]): number => oneDecimal(factors.reduce((sum, f) => sum + f.earned, 0));
