/*
 * The CVSS v3.0/v3.1 base score of a vector (FIRST, CVSS v3.1 specification, section 7.1 and
 * Appendix A's Roundup). Both versions share the base metrics and formulas; v3.1's Roundup avoids
 * floating-point surprises and is used for both.
 */

const WEIGHTS = {
  AV: { N: 0.85, A: 0.62, L: 0.55, P: 0.2 },
  AC: { L: 0.77, H: 0.44 },
  UI: { N: 0.85, R: 0.62 },
  C: { H: 0.56, L: 0.22, N: 0 },
  I: { H: 0.56, L: 0.22, N: 0 },
  A: { H: 0.56, L: 0.22, N: 0 },
} as const;
/** Privileges Required weighs more when the scope changes. */
const PR = { U: { N: 0.85, L: 0.62, H: 0.27 }, C: { N: 0.85, L: 0.68, H: 0.5 } } as const;
const BASE_METRICS = ['AV', 'AC', 'PR', 'UI', 'S', 'C', 'I', 'A'] as const;

/** The smallest number with one decimal that is at least `value`. */
export function roundUp(value: number): number {
  const scaled = Math.round(value * 100_000);
  return scaled % 10_000 === 0 ? scaled / 100_000 : (Math.floor(scaled / 10_000) + 1) / 10;
}

/** The base score of a `CVSS:3.x/AV:…/…` vector; null when it is not a complete, valid v3 vector. */
export function cvss3BaseScore(vector: string): number | null {
  const [prefix, ...parts] = vector.trim().split('/');
  if (prefix !== 'CVSS:3.0' && prefix !== 'CVSS:3.1') return null;
  const metrics = new Map<string, string>();
  for (const part of parts) {
    const [name, value, extra] = part.split(':');
    if (!name || !value || extra !== undefined || metrics.has(name)) return null;
    metrics.set(name, value);
  }
  const m = Object.fromEntries(BASE_METRICS.map((name) => [name, metrics.get(name)])) as Record<(typeof BASE_METRICS)[number], string | undefined>;
  const weight = <T extends Record<string, number>>(table: T, value: string | undefined): number | undefined => (value !== undefined && Object.hasOwn(table, value) ? table[value as keyof T] : undefined);
  if (m.S !== 'U' && m.S !== 'C') return null;
  const values = [weight(WEIGHTS.AV, m.AV), weight(WEIGHTS.AC, m.AC), weight(PR[m.S], m.PR), weight(WEIGHTS.UI, m.UI), weight(WEIGHTS.C, m.C), weight(WEIGHTS.I, m.I), weight(WEIGHTS.A, m.A)];
  if (values.some((v) => v === undefined)) return null;
  const [av, ac, pr, ui, c, i, a] = values as number[];
  const iss = 1 - (1 - c!) * (1 - i!) * (1 - a!);
  const changed = m.S === 'C';
  const impact = changed ? 7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15 : 6.42 * iss;
  if (impact <= 0) return 0;
  const exploitability = 8.22 * av! * ac! * pr! * ui!;
  return roundUp(Math.min((changed ? 1.08 : 1) * (impact + exploitability), 10));
}
