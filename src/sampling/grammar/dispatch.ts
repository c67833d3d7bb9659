// Which of many stacks match a code point, without looking at each of them. A matcher
// state can hold thousands of stacks (a JSON enum of 100,000 strings starts with 100,000
// literals; an object with 5,000 optional properties has 5,000 ways to go on), and a
// vocabulary walk steps a state with thousands of distinct code points: testing every
// stack for every code point made one token's filter take seconds.
//
// The ranges of the stacks' terminals cut the code points into elementary intervals
// (no range starts or ends inside one, so every code point of an interval matches the
// same stacks). A segment tree over the intervals holds each range at O(log n) nodes; the
// stacks matching an interval are those on its leaf-to-root path: O(log n + matches).

/** Code points are below this. */
const CP_END = 0x110000;

export class CodePointDispatch {
  /** Start of each elementary interval, ascending; interval i ends where i + 1 starts (the last at CP_END). */
  private readonly bounds: Int32Array;
  /** Prefix counts of intervals some range covers (length intervals + 1). */
  private readonly coveredBefore: Int32Array;
  /** Segment tree leaves start at `size`; node n's stacks are items[start[n] .. start[n + 1]). */
  private readonly size: number;
  private readonly start: Int32Array;
  private readonly items: Int32Array;
  /** Per interval: the next state, once known (filled by the matcher). */
  readonly next: Int32Array;

  /**
   * `ranges[k]`: the code-point ranges [lo, hi, lo, hi, …] (sorted, disjoint, inclusive)
   * stack k's terminal matches; undefined for stacks matching no code point.
   */
  constructor(ranges: readonly (Int32Array | undefined)[], unknown: number) {
    let nPoints = 1;
    for (const r of ranges) if (r) nPoints += r.length;
    const points = new Int32Array(nPoints);
    let p = 0;
    points[p++] = 0;
    for (const r of ranges) {
      if (!r) continue;
      for (let j = 0; j < r.length; j += 2) {
        points[p++] = r[j]!;
        points[p++] = r[j + 1]! + 1;
      }
    }
    points.sort();
    let nb = 0;
    for (let j = 0; j < points.length; j++) {
      const x = points[j]!;
      if (x < CP_END && (nb === 0 || x !== points[nb - 1])) points[nb++] = x;
    }
    this.bounds = points.slice(0, nb);
    const n = nb;
    let size = 1;
    while (size < n) size <<= 1;
    this.size = size;

    // each range → its canonical nodes (counted, then filled)
    const count = new Int32Array(2 * size + 1);
    const diff = new Int32Array(n + 1);
    const forEachNode = (k: number, fn: (node: number, k: number) => void) => {
      const r = ranges[k]!;
      for (let j = 0; j < r.length; j += 2) {
        let l = this.indexOf(r[j]!) + size;
        let h = (r[j + 1]! + 1 >= CP_END ? n : this.indexOf(r[j + 1]! + 1)) + size;
        for (; l < h; l >>= 1, h >>= 1) {
          if (l & 1) fn(l++, k);
          if (h & 1) fn(--h, k);
        }
      }
    };
    for (let k = 0; k < ranges.length; k++) {
      const r = ranges[k];
      if (!r) continue;
      forEachNode(k, (node) => count[node + 1]!++);
      for (let j = 0; j < r.length; j += 2) {
        diff[this.indexOf(r[j]!)]!++;
        diff[r[j + 1]! + 1 >= CP_END ? n : this.indexOf(r[j + 1]! + 1)]!--;
      }
    }
    for (let i = 0; i < 2 * size; i++) count[i + 1]! += count[i]!;
    this.start = count;
    const fill = count.slice(0, 2 * size);
    this.items = new Int32Array(count[2 * size]!);
    for (let k = 0; k < ranges.length; k++)
      if (ranges[k]) forEachNode(k, (node, kk) => (this.items[fill[node]!++] = kk));

    this.coveredBefore = new Int32Array(n + 1);
    let depth = 0;
    for (let i = 0; i < n; i++) {
      depth += diff[i]!;
      this.coveredBefore[i + 1] = this.coveredBefore[i]! + (depth > 0 ? 1 : 0);
    }
    this.next = new Int32Array(n).fill(unknown);
  }

  /** The elementary interval holding code point cp (0 ≤ cp < 0x110000). */
  interval(cp: number): number {
    const b = this.bounds;
    let lo = 0;
    let hi = b.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (b[mid]! <= cp) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private indexOf(x: number): number {
    return this.interval(x);
  }

  /** Whether some stack matches some code point in [lo, hi]. */
  coversAny(lo: number, hi: number): boolean {
    const i = this.interval(lo);
    const j = this.interval(Math.min(hi, CP_END - 1));
    return this.coveredBefore[j + 1]! - this.coveredBefore[i]! > 0;
  }

  /** Whether some stack matches interval i. */
  covered(i: number): boolean {
    return this.coveredBefore[i + 1]! !== this.coveredBefore[i]!;
  }

  /** Appends the stacks (indices into the ranges given) matching interval i; returns how many. */
  matching(i: number, out: number[]): number {
    let m = 0;
    for (let node = i + this.size; node >= 1; node >>= 1) {
      for (let q = this.start[node]!, end = this.start[node + 1]!; q < end; q++) {
        out.push(this.items[q]!);
        m++;
      }
    }
    return m;
  }
}
