/**
 * Compares two version strings by their dotted numbers (`1.10.0` > `1.9.2`): parts split on `.`, `-`,
 * `+` and `_`, numeric parts compared as numbers, others as text (a number sorts before text), a
 * missing part as 0 (`1.2` = `1.2.0`), but a text part where the other has none marks a pre-release
 * (`2.0.0-rc1` < `2.0.0`; a numeric revision stays newer: `1.0.1-1` > `1.0.1`). Negative, zero or positive as `a` is older, the same or newer.
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.trim().split(/[.\-+_]/);
  const pb = b.trim().split(/[.\-+_]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    if (pa[i] === undefined && !/^\d+$/.test(pb[i])) return 1;
    if (pb[i] === undefined && !/^\d+$/.test(pa[i])) return -1;
    const x = pa[i] ?? '0';
    const y = pb[i] ?? '0';
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    const order = nx && ny ? Number(BigInt(x) - BigInt(y) > 0n) - Number(BigInt(x) - BigInt(y) < 0n) : nx !== ny ? (nx ? -1 : 1) : x.localeCompare(y);
    if (order !== 0) return order;
  }
  return 0;
}
