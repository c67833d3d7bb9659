// The 4-row interleaved layout of Q4_0 and Q8_0 weights (the "rep4" layout), and the
// byte mapping between it and ggml's layout, for any sub-range.
//
// In each matrix (ne1 rows of `rowBytes` bytes), rows are taken four at a time; the
// rows left over (ne1 % 4) keep ggml's layout. A group of four rows occupies the same
// 4 * rowBytes bytes as in ggml's layout, reordered by block column: for block b, the
// four rows' f16 scales (8 bytes), then the four rows' quants (4 x 16 bytes for Q4_0,
// 4 x 32 for Q8_0). A kernel then reads one group as a single sequential stream and
// computes four dot products at once. See assembly/desc.ts (qrow) for the kernel side.

import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';

export class Rep4Layout {
  /** Bytes per block (18 or 34). */
  readonly ts: number;
  readonly rowBytes: number;
  readonly ne1: number;
  /** Rows per matrix that are interleaved (a multiple of 4). */
  readonly grouped: number;
  readonly matBytes: number;
  readonly nbytes: number;

  constructor(type: number, ne: readonly number[]) {
    this.ts = traitsOf(type).typeSize;
    this.rowBytes = (ne[0] / 32) * this.ts;
    this.ne1 = ne[1];
    this.grouped = ne[1] - (ne[1] % 4);
    this.matBytes = this.rowBytes * ne[1];
    this.nbytes = this.matBytes * ne[2] * ne[3];
  }

  /** Whether tensors of this type and shape are stored interleaved. */
  static applies(t: Tensor): boolean {
    return (t.type === GGMLType.Q4_0 || t.type === GGMLType.Q8_0) && t.ne[1] >= 4 && t.isContiguous();
  }

  /**
   * Calls fn(logical, physical, length) for the runs covering logical bytes
   * [start, start + size) (offsets relative to the tensor's first byte).
   */
  forEachRun(start: number, size: number, fn: (logical: number, physical: number, length: number) => void): void {
    const { rowBytes, ts, matBytes, grouped } = this;
    const end = start + size;
    let pos = start;
    while (pos < end) {
      const m = Math.floor(pos / matBytes);
      const inMat = pos - m * matBytes;
      const r = Math.floor(inMat / rowBytes);
      if (r >= grouped) {
        const stop = Math.min(end, (m + 1) * matBytes);
        fn(pos, pos, stop - pos);
        pos = stop;
        continue;
      }
      const gs = m * matBytes + (r - (r % 4)) * rowBytes;
      const j = r % 4;
      const col = inMat - r * rowBytes;
      const b = Math.floor(col / ts);
      const k = col - b * ts;
      const chunk = gs + b * 4 * ts;
      const len = Math.min(end - pos, k < 2 ? 2 - k : ts - k);
      fn(pos, k < 2 ? chunk + 2 * j + k : chunk + 8 + j * (ts - 2) + (k - 2), len);
      pos += len;
    }
  }

  /**
   * Copy logical bytes [start, start + src.length) from `src` (ggml's layout) into the
   * interleaved tensor whose first byte is mem[base]. Whole groups take a fast path.
   */
  write(mem: Uint8Array, base: number, start: number, src: Uint8Array): void {
    this.walk(
      start,
      src.length,
      (lo) => this.packGroup(src, lo - start, mem, base + lo),
      (lo, ph, n) => {
        mem.set(src.subarray(lo - start, lo - start + n), base + ph);
      },
    );
  }

  /** Copy logical bytes [start, start + dst.length) of the interleaved tensor into `dst`. */
  read(mem: Uint8Array, base: number, start: number, dst: Uint8Array): void {
    this.walk(
      start,
      dst.length,
      (lo) => this.unpackGroup(mem, base + lo, dst, lo - start),
      (lo, ph, n) => {
        dst.set(mem.subarray(base + ph, base + ph + n), lo - start);
      },
    );
  }

  /** Split [start, start + size) into whole groups (fast) and runs (everything else). */
  private walk(
    start: number,
    size: number,
    group: (logical: number, n: number) => void,
    run: (logical: number, physical: number, n: number) => void,
  ): void {
    const { rowBytes, matBytes, grouped } = this;
    const gBytes = 4 * rowBytes;
    const end = start + size;
    let pos = start;
    while (pos < end) {
      const m = Math.floor(pos / matBytes);
      const inMat = pos - m * matBytes;
      const r = Math.floor(inMat / rowBytes);
      if (r < grouped && inMat % gBytes === 0 && pos + gBytes <= end) {
        group(pos, gBytes);
        pos += gBytes;
        continue;
      }
      // up to the next group boundary (or the end) by runs
      const stop = Math.min(
        end,
        r < grouped ? m * matBytes + (Math.floor(inMat / gBytes) + 1) * gBytes : (m + 1) * matBytes,
      );
      this.forEachRun(pos, stop - pos, run);
      pos = stop;
    }
  }

  private packGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    const { ts, rowBytes } = this;
    const q = ts - 2;
    const nb = rowBytes / ts;
    for (let b = 0; b < nb; b++) {
      const c = d + b * 4 * ts;
      for (let j = 0; j < 4; j++) {
        const p = s + j * rowBytes + b * ts;
        dst[c + 2 * j] = src[p];
        dst[c + 2 * j + 1] = src[p + 1];
        const o = c + 8 + j * q;
        for (let i = 0; i < q; i++) dst[o + i] = src[p + 2 + i];
      }
    }
  }

  private unpackGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    const { ts, rowBytes } = this;
    const q = ts - 2;
    const nb = rowBytes / ts;
    for (let b = 0; b < nb; b++) {
      const c = s + b * 4 * ts;
      for (let j = 0; j < 4; j++) {
        const p = d + j * rowBytes + b * ts;
        dst[p] = src[c + 2 * j];
        dst[p + 1] = src[c + 2 * j + 1];
        const o = c + 8 + j * q;
        for (let i = 0; i < q; i++) dst[p + 2 + i] = src[o + i];
      }
    }
  }
}
