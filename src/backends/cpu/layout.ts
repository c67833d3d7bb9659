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

/** A wasm export repacking one whole group: ggml bytes at srcOffset (of the write) to dst. */
export type GroupRepack = (srcOffset: number, dst: number, nb: number, ts: number, rowBytes: number) => void;

/**
 * A layout that interleaves the rows of each matrix four at a time (rows left over keep
 * ggml's layout), a group taking the same 4 * rowBytes bytes as in ggml's layout. Maps
 * any logical byte range both ways: whole groups are packed or unpacked directly, a group
 * written in part is unpacked, patched and packed again.
 */
export abstract class InterleavedLayout implements GroupedRows {
  readonly ne1: number;
  /** Rows per matrix that are interleaved (a multiple of 4). */
  readonly grouped: number;
  readonly matBytes: number;
  readonly nbytes: number;
  private tmp: Uint8Array | null = null;

  constructor(
    readonly rowBytes: number,
    /** Bytes per block (K-quants: per super-block). */
    readonly ts: number,
    ne: readonly number[],
  ) {
    this.ne1 = ne[1];
    this.grouped = ne[1] - (ne[1] % 4);
    this.matBytes = rowBytes * ne[1];
    this.nbytes = this.matBytes * ne[2] * ne[3];
  }

  /** Four ggml rows at src[s] (rowBytes apart) into the group at dst[d]. */
  abstract packGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void;
  /** The group at src[s] back into four ggml rows at dst[d]. */
  abstract unpackGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void;

  /** How one write packs a whole group starting at logical byte g. */
  protected wholeWriter(
    mem: Uint8Array,
    base: number,
    start: number,
    src: Uint8Array,
    fast?: GroupRepack,
  ): (g: number) => void {
    if (fast) return (g) => fast(g - start, base + g, this.rowBytes / this.ts, this.ts, this.rowBytes);
    return (g) => this.packGroup(src, g - start, mem, base + g);
  }

  /** How one read unpacks a whole group starting at logical byte g. */
  protected wholeReader(mem: Uint8Array, base: number, start: number, dst: Uint8Array): (g: number) => void {
    return (g) => this.unpackGroup(mem, base + g, dst, g - start);
  }

  /**
   * Copy logical bytes [start, start + src.length) from `src` (ggml's layout) into the
   * interleaved tensor whose first byte is mem[base]. Whole groups go through `fast` when
   * given (wasm: the caller has src's bytes in wasm memory too).
   */
  write(mem: Uint8Array, base: number, start: number, src: Uint8Array, fast?: GroupRepack): void {
    const whole = this.wholeWriter(mem, base, start, src, fast);
    walkGroups(
      this,
      start,
      src.length,
      (g, lo, hi) => {
        if (lo === g && hi === g + 4 * this.rowBytes) {
          whole(g);
          return;
        }
        const tmp = this.scratch();
        this.unpackGroup(mem, base + g, tmp, 0);
        tmp.set(src.subarray(lo - start, hi - start), lo - g);
        this.packGroup(tmp, 0, mem, base + g);
      },
      (lo, hi) => {
        mem.set(src.subarray(lo - start, hi - start), base + lo);
      },
    );
  }

  /** Copy logical bytes [start, start + dst.length) of the interleaved tensor into `dst`. */
  read(mem: Uint8Array, base: number, start: number, dst: Uint8Array): void {
    const whole = this.wholeReader(mem, base, start, dst);
    walkGroups(
      this,
      start,
      dst.length,
      (g, lo, hi) => {
        if (lo === g && hi === g + 4 * this.rowBytes) {
          whole(g);
          return;
        }
        const tmp = this.scratch();
        this.unpackGroup(mem, base + g, tmp, 0);
        dst.set(tmp.subarray(lo - g, hi - g), lo - start);
      },
      (lo, hi) => {
        dst.set(mem.subarray(base + lo, base + hi), lo - start);
      },
    );
  }

  private scratch(): Uint8Array {
    this.tmp ??= new Uint8Array(4 * this.rowBytes);
    return this.tmp;
  }
}

export class Rep4Layout extends InterleavedLayout {
  constructor(type: number, ne: readonly number[]) {
    const ts = traitsOf(type).typeSize;
    super((ne[0] / 32) * ts, ts, ne);
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

  // whole groups through 16-bit words when both sides allow it (most writes and reads)
  protected override wholeWriter(
    mem: Uint8Array,
    base: number,
    start: number,
    src: Uint8Array,
    fast?: GroupRepack,
  ): (g: number) => void {
    const w16 = fast ? null : this.wordViews(src, start, mem, base);
    if (!w16) return super.wholeWriter(mem, base, start, src, fast);
    return (g) => this.pack16(w16.a, (g - start) >>> 1, w16.b, (base + g - w16.bBase) >>> 1);
  }

  protected override wholeReader(mem: Uint8Array, base: number, start: number, dst: Uint8Array): (g: number) => void {
    const w16 = this.wordViews(dst, start, mem, base);
    if (!w16) return super.wholeReader(mem, base, start, dst);
    return (g) => this.unpack16(w16.b, (base + g - w16.bBase) >>> 1, w16.a, (g - start) >>> 1);
  }

  /**
   * 16-bit views of `a` (ggml bytes from logical `start`) and of the tensor in `mem` from
   * `base`, when every group in them starts 2-byte aligned (blocks and their fields are
   * an even number of bytes).
   */
  private wordViews(
    a: Uint8Array,
    start: number,
    mem: Uint8Array,
    base: number,
  ): { a: Uint16Array; b: Uint16Array; bBase: number } | null {
    if (((a.byteOffset - start) & 1) !== 0 || ((mem.byteOffset + base) & 1) !== 0) return null;
    const aOff = a.byteOffset + ((start & 1) === 0 ? 0 : 1);
    const aLen = (a.byteLength - (aOff - a.byteOffset)) >>> 1;
    const bBase = base & ~1;
    return {
      a: new Uint16Array(a.buffer, aOff, aLen),
      b: new Uint16Array(mem.buffer, mem.byteOffset + bBase, (mem.byteLength - bBase) >>> 1),
      bBase,
    };
  }

  /** Repack one group: ggml words at a16[s], interleaved words to b16[d]. */
  private pack16(a16: Uint16Array, s: number, b16: Uint16Array, d: number): void {
    const ts2 = this.ts >>> 1;
    const q2 = ts2 - 1;
    const rb2 = this.rowBytes >>> 1;
    const nb = this.rowBytes / this.ts;
    for (let b = 0, c = d; b < nb; b++, c += 4 * ts2) {
      for (let j = 0; j < 4; j++) {
        const p = s + j * rb2 + b * ts2;
        b16[c + j] = a16[p];
        const o = c + 4 + j * q2;
        for (let i = 0; i < q2; i++) b16[o + i] = a16[p + 1 + i];
      }
    }
  }

  /** Restore one group: interleaved words at b16[s] to ggml words at a16[d]. */
  private unpack16(b16: Uint16Array, s: number, a16: Uint16Array, d: number): void {
    const ts2 = this.ts >>> 1;
    const q2 = ts2 - 1;
    const rb2 = this.rowBytes >>> 1;
    const nb = this.rowBytes / this.ts;
    for (let b = 0, c = s; b < nb; b++, c += 4 * ts2) {
      for (let j = 0; j < 4; j++) {
        const p = d + j * rb2 + b * ts2;
        a16[p] = b16[c + j];
        const o = c + 4 + j * q2;
        for (let i = 0; i < q2; i++) a16[p + 1 + i] = b16[o + i];
      }
    }
  }

  packGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
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

  unpackGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
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

/** The row geometry of a layout that interleaves rows four at a time per matrix. */
export interface GroupedRows {
  readonly rowBytes: number;
  readonly matBytes: number;
  /** Rows per matrix that are interleaved (a multiple of 4); the rest keep ggml's layout. */
  readonly grouped: number;
}

/**
 * Split [start, start + size) by group: group(g, lo, hi) for the part [lo, hi) inside the
 * interleaved group starting at g; plain(lo, hi) for rows kept in ggml's layout.
 */
export function walkGroups(
  l: GroupedRows,
  start: number,
  size: number,
  group: (g: number, lo: number, hi: number) => void,
  plain: (lo: number, hi: number) => void,
): void {
  const { rowBytes, matBytes, grouped } = l;
  const gBytes = 4 * rowBytes;
  const end = start + size;
  let pos = start;
  while (pos < end) {
    const m = Math.floor(pos / matBytes);
    const inMat = pos - m * matBytes;
    if (inMat < grouped * rowBytes) {
      const g = m * matBytes + Math.floor(inMat / gBytes) * gBytes;
      const hi = Math.min(end, g + gBytes);
      group(g, pos, hi);
      pos = hi;
    } else {
      const hi = Math.min(end, (m + 1) * matBytes);
      plain(pos, hi);
      pos = hi;
    }
  }
}
