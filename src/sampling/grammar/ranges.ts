// Sets of code points as sorted, disjoint, inclusive [lo, hi] ranges.

export type Ranges = [number, number][];

/** Valid Unicode scalar values: what classes, negated classes and `.` range over. */
export const UNICODE_SCALARS: readonly [number, number][] = [
  [0, 0xd7ff],
  [0xe000, 0x10ffff],
];

/** Sort and merge (overlapping or adjacent) ranges; empty ones are dropped. */
export function normalizeRanges(ranges: readonly (readonly [number, number])[]): Ranges {
  const sorted = ranges.filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

export function intersectRanges(
  a: readonly (readonly [number, number])[],
  b: readonly (readonly [number, number])[],
): Ranges {
  const out: Ranges = [];
  for (const [alo, ahi] of a) {
    for (const [blo, bhi] of b) {
      const lo = Math.max(alo, blo);
      const hi = Math.min(ahi, bhi);
      if (lo <= hi) out.push([lo, hi]);
    }
  }
  return normalizeRanges(out);
}

export function subtractRanges(
  a: readonly (readonly [number, number])[],
  b: readonly (readonly [number, number])[],
): Ranges {
  let cur: Ranges = a.map(([lo, hi]) => [lo, hi]);
  for (const [blo, bhi] of b) {
    const next: Ranges = [];
    for (const [lo, hi] of cur) {
      if (bhi < lo || blo > hi) next.push([lo, hi]);
      else {
        if (lo < blo) next.push([lo, blo - 1]);
        if (bhi < hi) next.push([bhi + 1, hi]);
      }
    }
    cur = next;
  }
  return cur;
}
