// The 4-row interleaved layout of Q4_K, Q6_K, Q5_0, Q4_0 and MXFP4 weights (the "k4" layout),
// and the byte mapping between it and ggml's layout, for any sub-range.
//
// As Rep4Layout (layout.ts): in each matrix, rows are taken four at a time (rows left
// over keep ggml's layout) and a group of four rows occupies the same 4 * rowBytes bytes,
// reordered by block column (K-quants: super-block): the four rows' scales, then (Q4_K) their
// 6-bit scales and mins re-packed so that a few vector ops decode them into bytes, or
// (Q5_0) the high bits regrouped by four-element step, then the quants with four bytes of
// each row in turn (assembly/kquant.ts describes the bytes). Q4_0 (relaxed build, weights
// only) takes this layout rather than rep4's (layout.ts): four bytes of each row in turn
// let a kernel use one quant vector for all four rows without horizontal sums; MXFP4 (relaxed
// build) the same, its four exponent bytes first (assembly/mxfp4.ts). Bits move between bytes, so
// a partly written group is unpacked, patched and repacked.

import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { InterleavedLayout } from './layout.js';

/** Layout code in node records (assembly/desc.ts LAYOUT_K4). */
export const LAYOUT_K4 = 2;

function ggScale(q: Uint8Array, p: number, j: number): number {
  return j < 4 ? q[p + j] & 63 : (q[p + j + 4] & 15) | ((q[p + j - 4] >> 6) << 4);
}
function ggMin(q: Uint8Array, p: number, j: number): number {
  return j < 4 ? q[p + j + 4] & 63 : (q[p + j + 4] >> 4) | ((q[p + j] >> 6) << 4);
}
const scPos = (j: number, r: number) => ((j & 3) << 2) | r;
const mnPos = (j: number, r: number) => ((j & 2) << 2) | (r << 1) | (j & 1);

export class K4Layout extends InterleavedLayout {
  /** Blocks (Q4_K: super-blocks) per row. */
  readonly nsb: number;
  /** The wasm export that repacks one whole group (assembly/kquant.ts). */
  readonly repackExport: string;

  constructor(
    readonly type: number,
    ne: readonly number[],
  ) {
    const q5 = type === GGMLType.Q5_0;
    const q4 = type === GGMLType.Q4_0;
    const mx = type === GGMLType.MXFP4;
    const ts = q4 ? 18 : q5 ? 22 : mx ? 17 : type === GGMLType.Q6_K ? 210 : 144;
    const nsb = ne[0] / (q5 || q4 || mx ? 32 : 256);
    super(nsb * ts, ts, ne);
    this.nsb = nsb;
    this.repackExport = q4
      ? 'repackQ4_0'
      : q5
        ? 'repackQ5_0'
        : mx
          ? 'repackMXFP4'
          : type === GGMLType.Q6_K
            ? 'repackQ6K'
            : 'repackQ4K';
  }

  /** Whether tensors of this type and shape are stored interleaved. */
  static applies(t: Tensor): boolean {
    const k =
      t.type === GGMLType.Q4_K ||
      t.type === GGMLType.Q5_0 ||
      t.type === GGMLType.Q6_K ||
      t.type === GGMLType.Q4_0 ||
      t.type === GGMLType.MXFP4;
    return k && t.ne[1] >= 4 && t.isContiguous();
  }

  /** Four ggml rows at src[s] (rowBytes apart) into the group at dst[d]. */
  packGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    if (this.type === GGMLType.Q4_0 || this.type === GGMLType.MXFP4) {
      this.moveQ4(src, s, dst, d, true);
      return;
    }
    if (this.type === GGMLType.Q5_0) {
      this.packQ5(src, s, dst, d);
      return;
    }
    if (this.type === GGMLType.Q6_K) {
      this.moveQ6(src, s, dst, d, true);
      return;
    }
    const { rowBytes, nsb } = this;
    const SB = 144;
    const GSB = 4 * SB;
    for (let b = 0; b < nsb; b++) {
      const c = d + b * GSB;
      dst.fill(0, c + 16, c + 64);
      for (let r = 0; r < 4; r++) {
        const p = s + r * rowBytes + b * SB;
        dst[c + 2 * r] = src[p];
        dst[c + 2 * r + 1] = src[p + 1];
        dst[c + 8 + 2 * r] = src[p + 2];
        dst[c + 9 + 2 * r] = src[p + 3];
        for (let j = 0; j < 8; j++) {
          const h = j >> 2;
          const sc = ggScale(src, p + 4, j);
          const mn = ggMin(src, p + 4, j);
          dst[c + 16 + h * 16 + scPos(j, r)] |= sc & 15;
          dst[c + 16 + h * 16 + mnPos(j, r)] |= (mn & 15) << 4;
          dst[c + 48 + scPos(j, r)] |= (sc >> 4) << (h * 4);
          dst[c + 48 + mnPos(j, r)] |= (mn >> 4) << (h * 4 + 2);
        }
        for (let g = 0; g < 4; g++) {
          for (let kk = 0; kk < 8; kk++) {
            const o = c + 64 + g * 128 + kk * 16 + r * 4;
            const i = p + 16 + g * 32 + kk * 4;
            dst[o] = src[i];
            dst[o + 1] = src[i + 1];
            dst[o + 2] = src[i + 2];
            dst[o + 3] = src[i + 3];
          }
        }
      }
    }
  }

  /** The group at src[s] back to four ggml rows at dst[d]. */
  unpackGroup(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    if (this.type === GGMLType.Q4_0 || this.type === GGMLType.MXFP4) {
      this.moveQ4(dst, d, src, s, false);
      return;
    }
    if (this.type === GGMLType.Q5_0) {
      this.unpackQ5(src, s, dst, d);
      return;
    }
    if (this.type === GGMLType.Q6_K) {
      this.moveQ6(dst, d, src, s, false);
      return;
    }
    const { rowBytes, nsb } = this;
    const SB = 144;
    const GSB = 4 * SB;
    for (let b = 0; b < nsb; b++) {
      const c = s + b * GSB;
      for (let r = 0; r < 4; r++) {
        const p = d + r * rowBytes + b * SB;
        dst[p] = src[c + 2 * r];
        dst[p + 1] = src[c + 2 * r + 1];
        dst[p + 2] = src[c + 8 + 2 * r];
        dst[p + 3] = src[c + 9 + 2 * r];
        const sc = (j: number) => {
          const h = j >> 2;
          const k = scPos(j, r);
          return (src[c + 16 + h * 16 + k] & 15) | (((src[c + 48 + k] >> (h * 4)) & 3) << 4);
        };
        const mn = (j: number) => {
          const h = j >> 2;
          const k = mnPos(j, r);
          return (src[c + 16 + h * 16 + k] >> 4) | (((src[c + 48 + k] >> (h * 4 + 2)) & 3) << 4);
        };
        for (let j = 0; j < 4; j++) {
          const s1 = sc(j + 4);
          const m1 = mn(j + 4);
          dst[p + 4 + j] = sc(j) | ((s1 >> 4) << 6);
          dst[p + 8 + j] = mn(j) | ((m1 >> 4) << 6);
          dst[p + 12 + j] = (s1 & 15) | ((m1 & 15) << 4);
        }
        for (let g = 0; g < 4; g++) {
          for (let kk = 0; kk < 8; kk++) {
            const o = c + 64 + g * 128 + kk * 16 + r * 4;
            const i = p + 16 + g * 32 + kk * 4;
            dst[i] = src[o];
            dst[i + 1] = src[o + 1];
            dst[i + 2] = src[o + 2];
            dst[i + 3] = src[o + 3];
          }
        }
      }
    }
  }

  // Q4_0 block column (72 bytes): d of rows 0..3 (f16) at +0; at +8 + 16kk byte 4r+e =
  // qs[4kk+e] of row r. MXFP4 (68 bytes) the same with one-byte e for the two-byte d.
  // Whole bytes move, so one routine serves both directions (pack: ggml rows at g[gs] to
  // the group at k[ks]; unpack: the reverse).
  private moveQ4(g: Uint8Array, gs: number, k: Uint8Array, ks: number, pack: boolean): void {
    const { rowBytes, nsb, ts } = this;
    const h = ts - 16;
    for (let b = 0; b < nsb; b++) {
      const c = ks + b * 4 * ts;
      for (let r = 0; r < 4; r++) {
        const p = gs + r * rowBytes + b * ts;
        for (let i = 0; i < h; i++) {
          if (pack) k[c + h * r + i] = g[p + i];
          else g[p + i] = k[c + h * r + i];
        }
        for (let kk = 0; kk < 4; kk++) {
          for (let e = 0; e < 4; e++) {
            const o = c + 4 * h + 16 * kk + 4 * r + e;
            const q = p + h + 4 * kk + e;
            if (pack) k[o] = g[q];
            else g[q] = k[o];
          }
        }
      }
    }
  }

  // Q5_0 block column (88 bytes): d of rows 0..3 (f16) at +0; at +8 + 2s (step s = 0..7)
  // 16 high bits, bit 4r+e = bit 4s+e of row r's qh; at +24 + 16kk byte 4r+e = qs[4kk+e]
  // of row r.
  private packQ5(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    const { rowBytes, nsb } = this;
    for (let b = 0; b < nsb; b++) {
      const c = d + b * 88;
      dst.fill(0, c + 8, c + 24);
      for (let r = 0; r < 4; r++) {
        const p = s + r * rowBytes + b * 22;
        dst[c + 2 * r] = src[p];
        dst[c + 2 * r + 1] = src[p + 1];
        const qh = (src[p + 2] | (src[p + 3] << 8) | (src[p + 4] << 16) | (src[p + 5] << 24)) >>> 0;
        for (let st = 0; st < 8; st++) {
          const bits = (qh >>> (4 * st)) & 15;
          const k = c + 8 + 2 * st + (r >> 1);
          dst[k] |= bits << ((r & 1) * 4);
        }
        for (let kk = 0; kk < 4; kk++) {
          for (let e = 0; e < 4; e++) dst[c + 24 + 16 * kk + 4 * r + e] = src[p + 6 + 4 * kk + e];
        }
      }
    }
  }

  private unpackQ5(src: Uint8Array, s: number, dst: Uint8Array, d: number): void {
    const { rowBytes, nsb } = this;
    for (let b = 0; b < nsb; b++) {
      const c = s + b * 88;
      for (let r = 0; r < 4; r++) {
        const p = d + r * rowBytes + b * 22;
        dst[p] = src[c + 2 * r];
        dst[p + 1] = src[c + 2 * r + 1];
        let qh = 0;
        for (let st = 0; st < 8; st++) {
          const bits = (src[c + 8 + 2 * st + (r >> 1)] >> ((r & 1) * 4)) & 15;
          qh |= bits << (4 * st);
        }
        dst[p + 2] = qh & 255;
        dst[p + 3] = (qh >>> 8) & 255;
        dst[p + 4] = (qh >>> 16) & 255;
        dst[p + 5] = (qh >>> 24) & 255;
        for (let kk = 0; kk < 4; kk++) {
          for (let e = 0; e < 4; e++) dst[p + 6 + 4 * kk + e] = src[c + 24 + 16 * kk + 4 * r + e];
        }
      }
    }
  }

  // Q6_K super-block column (840 bytes): d of rows 0..3 at +0; at +8 + 8p + 2r the two
  // scales of sub-blocks 2p, 2p+1 of row r; at +72 + 48u (u = 8n + kk) 16 bytes each of
  // A, B, C (assembly/kquant.ts), byte 4r+e from row r, made from ggml's ql[64n+4kk+e],
  // ql[64n+32+4kk+e] and qh[32n+4kk+e] four bytes at a time (k6Words / ggmlWords).
  // ggml rows at g[gs], group at k[ks]; pack: ggml to group, else back.
  private moveQ6(g: Uint8Array, gs: number, k: Uint8Array, ks: number, pack: boolean): void {
    const { rowBytes, nsb } = this;
    const gv = new DataView(g.buffer, g.byteOffset, g.byteLength);
    const kv = new DataView(k.buffer, k.byteOffset, k.byteLength);
    const mv = (gi: number, ki: number, n: number) => {
      for (let i = 0; i < n; i++) {
        if (pack) k[ki + i] = g[gi + i];
        else g[gi + i] = k[ki + i];
      }
    };
    for (let b = 0; b < nsb; b++) {
      const c = ks + b * 840;
      for (let r = 0; r < 4; r++) {
        const p = gs + r * rowBytes + b * 210;
        mv(p + 208, c + 2 * r, 2);
        for (let pp = 0; pp < 8; pp++) mv(p + 192 + 2 * pp, c + 8 + 8 * pp + 2 * r, 2);
        for (let u = 0; u < 16; u++) {
          const n = u >> 3;
          const kk = u & 7;
          const o = c + 72 + 48 * u + 4 * r;
          const pa = p + 64 * n + 4 * kk;
          const pb = pa + 32;
          const ph = p + 128 + 32 * n + 4 * kk;
          if (pack) {
            const [A, B, C] = k6Words(gv.getUint32(pa, true), gv.getUint32(pb, true), gv.getUint32(ph, true));
            kv.setUint32(o, A, true);
            kv.setUint32(o + 16, B, true);
            kv.setUint32(o + 32, C, true);
          } else {
            const [la, lb, h] = ggmlWords(
              kv.getUint32(o, true),
              kv.getUint32(o + 16, true),
              kv.getUint32(o + 32, true),
            );
            gv.setUint32(pa, la, true);
            gv.setUint32(pb, lb, true);
            gv.setUint32(ph, h, true);
          }
        }
      }
    }
  }
}

/**
 * ggml's Q6_K words (four bytes, one per element: low-nibble bytes la and lb, high-bit
 * byte h) to the k4 layout's A, B, C: A = q0 | (q2 >> 4) << 6, B = q1 | (q3 >> 4) << 6,
 * C = (q2 & 15) | (q3 & 15) << 4, per byte.
 */
export function k6Words(la: number, lb: number, h: number): [number, number, number] {
  const A = (la & 0x0f0f0f0f) | ((h & 0x03030303) << 4) | ((h & 0x30303030) << 2);
  const B = (lb & 0x0f0f0f0f) | ((h & 0x0c0c0c0c) << 2) | (h & 0xc0c0c0c0);
  const C = ((la >>> 4) & 0x0f0f0f0f) | (lb & 0xf0f0f0f0);
  return [A >>> 0, B >>> 0, C >>> 0];
}

/** The inverse of k6Words. */
export function ggmlWords(A: number, B: number, C: number): [number, number, number] {
  const la = (A & 0x0f0f0f0f) | ((C & 0x0f0f0f0f) << 4);
  const lb = (B & 0x0f0f0f0f) | (C & 0xf0f0f0f0);
  const h = ((A >>> 4) & 0x03030303) | ((B >>> 2) & 0x0c0c0c0c) | ((A >>> 2) & 0x30303030) | (B & 0xc0c0c0c0);
  return [la >>> 0, lb >>> 0, h >>> 0];
}
