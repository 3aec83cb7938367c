/**
 * Compares two version strings by their dotted numbers (`1.10.0` > `1.9.2`): parts split on `.`, `-`,
 * `+` and `_`, numeric parts compared as numbers, others as text (a number sorts before text), a
 * missing part as 0 (`1.2` = `1.2.0`). Negative, zero or positive as `a` is older, the same or newer.
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.trim().split(/[.\-+_]/);
  const pb = b.trim().split(/[.\-+_]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? '0';
    const y = pb[i] ?? '0';
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    const order = nx && ny ? Number(BigInt(x) - BigInt(y) > 0n) - Number(BigInt(x) - BigInt(y) < 0n) : nx !== ny ? (nx ? -1 : 1) : x.localeCompare(y);
    if (order !== 0) return order;
  }
  return 0;
}
