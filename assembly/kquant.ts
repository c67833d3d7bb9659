// Q4_K, Q6_K, Q5_0 and Q4_0 weights in the 4-row interleaved layout ("k4" layout;
// src/backends/cpu/layout-k.ts) and their kernels: Q4_K first, then Q5_0 (also a
// four-column tile for ggml's layout), then Q4_0, then Q6_K.
//
// In a matrix, rows are taken four at a time (rows left over keep ggml's layout); a group
// of four rows occupies the same bytes as in ggml's layout, reordered by super-block
// column b (4 x 144 = 576 bytes at 576 b):
//   +0   d of rows 0..3 (f16), +8 dmin of rows 0..3 (f16)
//   +16  A: 32 bytes, half h (sub-blocks 4h..4h+3) at +16h. Byte k of a half: low nibble
//        = low 4 bits of the scale of (sub-block 4h + k/4, row k%4), high nibble = low 4
//        bits of the min of (sub-block 4h + 2(k/8) + k%2, row (k/2)%4)
//   +48  H: 16 bytes, byte k: bits 0-1 / 2-3 = high 2 bits of scale / min at position k of
//        half 0, bits 4-5 / 6-7 the same for half 1
//   +64  quants: 64-element group g (0..3) at +64+128g, 16 bytes per four-element step kk
//        (0..7) at +16kk: byte 4r+e = ggml's quant byte 32g+4kk+e of row r (low nibble:
//        element 64g+4kk+e, high nibble: element 64g+32+4kk+e).
// A kernel reads a group as one stream. The quant bytes give one i16 lane pair per row
// against a broadcast four activation bytes (relaxed dot, no horizontal sums); scales
// decode with a few vector ops into bytes whose order suits a per-row multiply.
// Relaxed-SIMD build only (the host uses this layout only with that build).

import { C_BIT8, C_M3F, C_M4, C_M10, C_M30, C_ONES16, C_QH_HI, C_QH_LO, dotAdd, f16x4At } from './consts';
import { LAYOUT_K4, tAddr, tLayout, tWord } from './desc';
import { hsum, madd } from './dot';
import { f16ToF32 } from './math';

export const K4_SB: usize = 576;

// ---- repacking (load) and row access -------------------------------------------------

/** Scale j (0..7) and min j of a ggml Q4_K super-block's 12 packed bytes at p. */
@inline function ggScale(p: usize, j: i32): i32 {
  return j < 4 ? <i32>load<u8>(p + j) & 63 : (<i32>load<u8>(p + j + 4) & 15) | ((<i32>load<u8>(p + j - 4) >> 6) << 4);
}
@inline function ggMin(p: usize, j: i32): i32 {
  return j < 4 ? <i32>load<u8>(p + j + 4) & 63 : (<i32>load<u8>(p + j + 4) >> 4) | ((<i32>load<u8>(p + j) >> 6) << 4);
}

/** Position (0..15) in its half of the scale of (sub-block j, row r), and of the min. */
@inline function scPos(j: i32, r: i32): i32 {
  return ((j & 3) << 2) | r;
}
@inline function mnPos(j: i32, r: i32): i32 {
  return ((j & 2) << 2) | (r << 1) | (j & 1);
}

/** Scale / min of (sub-block j, row r) of the interleaved super-block column at c. */
@inline export function k4ScaleAt(c: usize, j: i32, r: i32): i32 {
  const k = scPos(j, r);
  const h = j >> 2;
  return (<i32>load<u8>(c + 16 + <usize>(h * 16 + k)) & 15) | (((<i32>load<u8>(c + 48 + <usize>k) >> (h * 4)) & 3) << 4);
}
@inline export function k4MinAt(c: usize, j: i32, r: i32): i32 {
  const k = mnPos(j, r);
  const h = j >> 2;
  return (<i32>load<u8>(c + 16 + <usize>(h * 16 + k)) >> 4) | (((<i32>load<u8>(c + 48 + <usize>k) >> (h * 4 + 2)) & 3) << 4);
}

/**
 * One Q4_K super-block's scales and mins at p (its 12 packed bytes at p + 4) as 16 bytes:
 * scale 0..7 in lanes 0..7, min 0..7 in lanes 8..15 (6 bits each, as ggScale / ggMin).
 */
@inline function ggScalesMins(p: usize): v128 {
  // bytes 12..15 of the load are quants, never used
  const v = v128.load(p + 4);
  const lo6 = v128.and(v, i8x16.splat(63));
  const lo4 = v128.and(v, i8x16.splat(15));
  const hi4 = i8x16.shr_u(v, 4);
  const top = i8x16.shl(i8x16.shr_u(v, 6), 4);
  // scales 0..3, low bits of 4..7, mins 0..3, low bits of 4..7
  const base = v128.shuffle<u8>(v128.shuffle<u8>(lo6, lo4, 0, 1, 2, 3, 24, 25, 26, 27, 4, 5, 6, 7, 0, 0, 0, 0), hi4,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 24, 25, 26, 27);
  // the top two bits of scales and mins 4..7 (lanes from the zero vector are 0)
  const z = i8x16.splat(0);
  return v128.or(base, v128.shuffle<u8>(top, z, 16, 16, 16, 16, 0, 1, 2, 3, 16, 16, 16, 16, 4, 5, 6, 7));
}

/** A 4 x 4 transpose of 32-bit words: row r of the result holds word r of a, b, c, d. */
@inline function transposeStore(a: v128, b: v128, c: v128, d: v128, dst: usize): void {
  const t0 = v128.shuffle<u32>(a, b, 0, 4, 1, 5);
  const t1 = v128.shuffle<u32>(a, b, 2, 6, 3, 7);
  const t2 = v128.shuffle<u32>(c, d, 0, 4, 1, 5);
  const t3 = v128.shuffle<u32>(c, d, 2, 6, 3, 7);
  v128.store(dst, v128.shuffle<u32>(t0, t2, 0, 1, 4, 5));
  v128.store(dst, v128.shuffle<u32>(t0, t2, 2, 3, 6, 7), 16);
  v128.store(dst, v128.shuffle<u32>(t1, t3, 0, 1, 4, 5), 32);
  v128.store(dst, v128.shuffle<u32>(t1, t3, 2, 3, 6, 7), 48);
}

/**
 * Repack four Q4_K rows (ggml layout at src, rowBytes apart) into the group at dst (ts: 144).
 * Vector form of the layout above: the rows' scales and mins are decoded to bytes and
 * swizzled into A and H, and the quant words transposed four rows at a time.
 */
export function repackQ4K(src: usize, dst: usize, nsb: i32, ts: i32, rowBytes: i32): void {
  const rb = <usize>rowBytes;
  const m15 = i8x16.splat(15);
  for (let b = 0; b < nsb; b++) {
    const c = dst + <usize>b * K4_SB;
    const p0 = src + <usize>b * 144;
    const p1 = p0 + rb;
    const p2 = p1 + rb;
    const p3 = p2 + rb;
    store<u16>(c, load<u16>(p0));
    store<u16>(c, load<u16>(p1), 2);
    store<u16>(c, load<u16>(p2), 4);
    store<u16>(c, load<u16>(p3), 6);
    store<u16>(c, load<u16>(p0, 2), 8);
    store<u16>(c, load<u16>(p1, 2), 10);
    store<u16>(c, load<u16>(p2, 2), 12);
    store<u16>(c, load<u16>(p3, 2), 14);
    const r0 = ggScalesMins(p0);
    const r1 = ggScalesMins(p1);
    const r2 = ggScalesMins(p2);
    const r3 = ggScalesMins(p3);
    // (sub-block j, row r) pairs: rows 0/1 and 2/3 interleaved per j, scales then mins
    const s01 = v128.shuffle<u8>(r0, r1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const s23 = v128.shuffle<u8>(r2, r3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const m01 = v128.shuffle<u8>(r0, r1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const m23 = v128.shuffle<u8>(r2, r3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    // position k of half h: the scale of (4h + k/4, row k%4), the min of (4h + 2(k/8) + k%2, row (k/2)%4)
    const sc0 = v128.shuffle<u8>(s01, s23, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
    const sc1 = v128.shuffle<u8>(s01, s23, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
    const mn0 = v128.shuffle<u8>(m01, m23, 0, 2, 1, 3, 16, 18, 17, 19, 4, 6, 5, 7, 20, 22, 21, 23);
    const mn1 = v128.shuffle<u8>(m01, m23, 8, 10, 9, 11, 24, 26, 25, 27, 12, 14, 13, 15, 28, 30, 29, 31);
    v128.store(c, v128.or(v128.and(sc0, m15), i8x16.shl(mn0, 4)), 16);
    v128.store(c, v128.or(v128.and(sc1, m15), i8x16.shl(mn1, 4)), 32);
    const h = v128.or(
      v128.or(i8x16.shr_u(sc0, 4), i8x16.shl(i8x16.shr_u(mn0, 4), 2)),
      v128.or(i8x16.shl(i8x16.shr_u(sc1, 4), 4), i8x16.shl(i8x16.shr_u(mn1, 4), 6)),
    );
    v128.store(c, h, 48);
    for (let g = 0; g < 4; g++) {
      const q = <usize>(16 + g * 32);
      const o = c + 64 + <usize>(g * 128);
      transposeStore(v128.load(p0 + q), v128.load(p1 + q), v128.load(p2 + q), v128.load(p3 + q), o);
      transposeStore(v128.load(p0 + q, 16), v128.load(p1 + q, 16), v128.load(p2 + q, 16), v128.load(p3 + q, 16), o + 64);
    }
  }
}

/** Restore row r (0..3) of the group at c (nsb super-blocks) in ggml's layout at dst. */
export function unpackRowQ4K(c: usize, r: i32, nsb: i32, dst: usize): void {
  for (let b = 0; b < nsb; b++, c += K4_SB, dst += 144) {
    store<u16>(dst, load<u16>(c + (<usize>r << 1)));
    store<u16>(dst, load<u16>(c + 8 + (<usize>r << 1)), 2);
    for (let j = 0; j < 4; j++) {
      const s0 = k4ScaleAt(c, j, r);
      const s1 = k4ScaleAt(c, j + 4, r);
      const m0 = k4MinAt(c, j, r);
      const m1 = k4MinAt(c, j + 4, r);
      store<u8>(dst + 4 + <usize>j, s0 | ((s1 >> 4) << 6));
      store<u8>(dst + 8 + <usize>j, m0 | ((m1 >> 4) << 6));
      store<u8>(dst + 12 + <usize>j, (s1 & 15) | ((m1 & 15) << 4));
    }
    for (let g = 0; g < 4; g++) {
      for (let kk = 0; kk < 8; kk++) {
        store<u32>(dst + 16 + <usize>(g * 32 + kk * 4), load<u32>(c + 64 + <usize>(g * 128 + kk * 16 + r * 4)));
      }
    }
  }
}

/** Dequantize row r of the group at c (nsb super-blocks) to f32 at dst, as ggml does. */
export function dequantRowQ4K(c: usize, r: i32, nsb: i32, dst: usize): void {
  for (let b = 0; b < nsb; b++, c += K4_SB) {
    const d = f16ToF32(load<u16>(c + (<usize>r << 1)));
    const dmin = f16ToF32(load<u16>(c + 8 + (<usize>r << 1)));
    for (let j = 0; j < 8; j++) {
      const dj = d * <f32>k4ScaleAt(c, j, r);
      const mj = dmin * <f32>k4MinAt(c, j, r);
      const q = c + 64 + <usize>((j >> 1) * 128 + r * 4);
      const sh = (j & 1) * 4;
      for (let l = 0; l < 32; l++) {
        const v = (<i32>load<u8>(q + <usize>((l >> 2) * 16 + (l & 3))) >> sh) & 15;
        store<f32>(dst + (<usize>l << 2), dj * <f32>v - mj);
      }
      dst += 128;
    }
  }
}

/** Set by krow: the group holding the row and the row in it (0..3), or -1 and the row's address. */
export let kGroup: usize = 0;
export let kRow: i32 = -1;

/**
 * Locate the Q4_K / Q5_0 row (blocks of ts bytes) of tensor t that starts `o` logical bytes
 * (ggml layout) after the tensor's element [0,0,0,0]: in a group (kGroup: its first block
 * column, kRow >= 0) or plain (kRow -1, kGroup its address).
 */
export function krow(node: usize, t: i32, o: usize, ts: usize): void {
  const addr = tAddr(node, t);
  if (tLayout(node, t) != LAYOUT_K4) {
    kGroup = addr + o;
    kRow = -1;
    return;
  }
  const lo = <usize>tWord(node, t, 11) + o;
  const ne1 = <usize>tWord(node, t, 12);
  const rb = <usize>tWord(node, t, 13);
  const R = lo / rb;
  const m = R / ne1;
  const r = R - m * ne1;
  if (r >= <usize>tWord(node, t, 14)) {
    kGroup = addr + lo;
    kRow = -1;
    return;
  }
  kGroup = addr + (m * ne1 + (r & ~3)) * rb + ((lo - R * rb) / ts) * 4 * ts;
  kRow = <i32>(r & 3);
}

// ---- dot products ----------------------------------------------------------------------
//
// Activation rows as in matmul.ts (per-256 format): int8 quants at +0, f32 scale per 256
// at +2K, i16 sums per 32 at +2K+K/4.

/** acc + Σ a·w in 32-bit lanes (relaxed build; dotAdd's form). */
@inline export function rda(a: v128, w: v128, acc: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i32x4.relaxed_dot_i8x16_i7x16_add_s(a, w, acc);
  return i32x4.add(acc, i32x4.dot_i16x8_s(rdot(a, w), i16x8.splat(1)));
}

@inline export function rdot(a: v128, w: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i16x8.relaxed_dot_i8x16_i7x16_s(a, w);
  // the plain-SIMD build does not use this layout; an exact equivalent keeps it compiling
  const ae = i16x8.shr_s(i16x8.shl(a, 8), 8);
  const ao = i16x8.shr_s(a, 8);
  return i16x8.add(i16x8.mul(ae, v128.and(w, i16x8.splat(0xff))), i16x8.mul(ao, i16x8.shr_u(w, 8)));
}

/**
 * The decoded scales (bytes, positions as in A) or mins of one half of a super-block
 * column at c: half 0 or 1.
 */
@inline function scales0(c: usize): v128 {
  return v128.or(v128.and(v128.load(c, 16), C_M4()), v128.and(i16x8.shl(v128.load(c, 48), 4), C_M30()));
}
@inline function scales1(c: usize): v128 {
  return v128.or(v128.and(v128.load(c, 32), C_M4()), v128.and(v128.load(c, 48), C_M30()));
}
@inline function mins0(c: usize): v128 {
  return v128.or(v128.and(i16x8.shr_u(v128.load(c, 16), 4), C_M4()), v128.and(i16x8.shl(v128.load(c, 48), 2), C_M30()));
}
@inline function mins1(c: usize): v128 {
  return v128.or(v128.and(i16x8.shr_u(v128.load(c, 32), 4), C_M4()), v128.and(i16x8.shr_u(v128.load(c, 48), 2), C_M30()));
}

/** Per-row Σ_j min_j · (activation sum of sub-block j): i32 lanes = rows. */
@inline function minSum(c: usize, bs: usize): v128 {
  const m0 = mins0(c);
  const m1 = mins1(c);
  return i32x4.add(
    i32x4.add(
      i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(m0), v128.load32_splat(bs)),
      i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(m0), v128.load32_splat(bs, 4)),
    ),
    i32x4.add(
      i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_u(m1), v128.load32_splat(bs, 8)),
      i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_u(m1), v128.load32_splat(bs, 12)),
    ),
  );
}

/** i16 lanes [s_r0, s_r0, s_r1, s_r1, ...] of sub-block jj (0..3) of a half's decoded scales. */
@inline function pairScale(sc: v128, jj: i32): v128 {
  const e = jj < 2 ? i16x8.extend_low_i8x16_u(sc) : i16x8.extend_high_i8x16_u(sc);
  return (jj & 1) == 0 ? v128.shuffle<i16>(e, e, 0, 0, 1, 1, 2, 2, 3, 3) : v128.shuffle<i16>(e, e, 4, 4, 5, 5, 6, 6, 7, 7);
}

/** acc + isum·d·da − msum·dmin·da for the super-block column at c (lanes = rows). */
@inline function k4Scale(c: usize, act: usize, sb: i32, K: i32, isum: v128, msum: v128, acc: v128): v128 {
  const da = v128.load32_splat(act + 2 * <usize>K + (<usize>sb << 2));
  const d = f32x4.mul(f16x4At(c), da);
  const dm = f32x4.mul(f16x4At(c + 8), da);
  return f32x4.sub(f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(isum), d)), f32x4.mul(f32x4.convert_i32x4_s(msum), dm));
}

/**
 * Integer sum, per row, of quant group g's two sub-blocks (low nibbles: sub-block 2g, high:
 * 2g+1) at q with activation quants x, times their scales (sc: the half's decoded scales;
 * lowHalf: group 0 or 2 of the half). Pointers advanced rather than recomputed (V8 does not
 * reduce the multiplies). Wide (dotAdd): 32-bit lanes, one multiply by the scales per
 * sub-block; else i16 lane pairs (at most 8·2·15·127) dotted with the paired scales. The
 * same exact integers either way.
 */
@inline function k4Group(q: usize, x: usize, m4: v128, sc: v128, lowHalf: bool, wide: bool): v128 {
  const e = lowHalf ? i16x8.extend_low_i8x16_u(sc) : i16x8.extend_high_i8x16_u(sc);
  if (wide) {
    let pA = i32x4.splat(0);
    let qA = i32x4.splat(0);
    let pB = i32x4.splat(0);
    let qB = i32x4.splat(0);
    for (let k = 0; k < 4; k++, q += 32, x += 8) {
      const w0 = v128.load(q);
      const w1 = v128.load(q, 16);
      pA = rda(v128.load32_splat(x), v128.and(w0, m4), pA);
      qA = rda(v128.load32_splat(x, 4), v128.and(w1, m4), qA);
      pB = rda(v128.load32_splat(x, 32), v128.and(i16x8.shr_u(w0, 4), m4), pB);
      qB = rda(v128.load32_splat(x, 36), v128.and(i16x8.shr_u(w1, 4), m4), qB);
    }
    return i32x4.add(
      i32x4.mul(i32x4.add(pA, qA), i32x4.extend_low_i16x8_u(e)),
      i32x4.mul(i32x4.add(pB, qB), i32x4.extend_high_i16x8_u(e)),
    );
  }
  let sA = i16x8.splat(0);
  let sB = i16x8.splat(0);
  for (let k = 0; k < 4; k++, q += 32, x += 8) {
    const w0 = v128.load(q);
    const w1 = v128.load(q, 16);
    sA = i16x8.add(sA, i16x8.add(rdot(v128.load32_splat(x), v128.and(w0, m4)), rdot(v128.load32_splat(x, 4), v128.and(w1, m4))));
    sB = i16x8.add(
      sB,
      i16x8.add(
        rdot(v128.load32_splat(x, 32), v128.and(i16x8.shr_u(w0, 4), m4)),
        rdot(v128.load32_splat(x, 36), v128.and(i16x8.shr_u(w1, 4), m4)),
      ),
    );
  }
  return i32x4.add(
    i32x4.dot_i16x8_s(sA, v128.shuffle<i16>(e, e, 0, 0, 1, 1, 2, 2, 3, 3)),
    i32x4.dot_i16x8_s(sB, v128.shuffle<i16>(e, e, 4, 4, 5, 5, 6, 6, 7, 7)),
  );
}

/** Four rows (the group at c, nsb super-blocks) against one activation row: [r0..r3]. */
export function gemvQ4K(c: usize, nsb: i32, act: usize, K: i32): v128 {
  return dotAdd() ? gemvQ4KOf(c, nsb, act, K, true) : gemvQ4KOf(c, nsb, act, K, false);
}

@inline function gemvQ4KOf(c: usize, nsb: i32, act: usize, K: i32, wide: bool): v128 {
  let acc = f32x4.splat(0);
  const m4 = C_M4();
  const bs = act + 2 * <usize>K + (<usize>K >> 2);
  for (let sb = 0; sb < nsb; sb++, c += K4_SB) {
    const a = act + (<usize>sb << 8);
    // loops, not unrolled: V8 hoists every load of an unrolled body and spills
    const s0 = scales0(c);
    const s1 = scales1(c);
    let isum = k4Group(c + 64, a, m4, s0, true, wide);
    isum = i32x4.add(isum, k4Group(c + 192, a + 64, m4, s0, false, wide));
    isum = i32x4.add(isum, k4Group(c + 320, a + 128, m4, s1, true, wide));
    isum = i32x4.add(isum, k4Group(c + 448, a + 192, m4, s1, false, wide));
    acc = k4Scale(c, act, sb, K, isum, minSum(c, bs + (<usize>sb << 4)), acc);
  }
  return acc;
}

/** i16 pair sums per row of one 32-element sub-block for four columns: one step of two quant vectors. */
@inline function colStep(x: usize, u0: v128, u1: v128, acc: v128): v128 {
  return i16x8.add(acc, i16x8.add(rdot(v128.load32_splat(x), u0), rdot(v128.load32_splat(x, 4), u1)));
}

/**
 * Four rows against four activation rows: results stored (four rows each) at o0..o3.
 * Per column the same integer sums and float steps as gemvQ4K, so a column's result does
 * not depend on the batch it came in.
 */
export function gemmQ4Kx4(
  c: usize, nsb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  const m4 = C_M4();
  const bo: usize = 2 * <usize>K + (<usize>K >> 2);
  for (let sb = 0; sb < nsb; sb++, c += K4_SB) {
    let i0 = i32x4.splat(0);
    let i1 = i32x4.splat(0);
    let i2 = i32x4.splat(0);
    let i3 = i32x4.splat(0);
    // sub-block j: the low (even j) or high (odd j) nibbles of quant group j/2
    for (let j = 0; j < 8; j++) {
      const q = c + 64 + <usize>(j >> 1) * 128;
      const e = (<usize>sb << 8) + (<usize>j << 5);
      let s0 = i16x8.splat(0);
      let s1 = i16x8.splat(0);
      let s2 = i16x8.splat(0);
      let s3 = i16x8.splat(0);
      if ((j & 1) == 0) {
        for (let kk: usize = 0; kk < 128; kk += 32) {
          const u0 = v128.and(v128.load(q + kk), m4);
          const u1 = v128.and(v128.load(q + kk, 16), m4);
          const x = e + (kk >> 2);
          s0 = colStep(a0 + x, u0, u1, s0);
          s1 = colStep(a1 + x, u0, u1, s1);
          s2 = colStep(a2 + x, u0, u1, s2);
          s3 = colStep(a3 + x, u0, u1, s3);
        }
      } else {
        for (let kk: usize = 0; kk < 128; kk += 32) {
          const u0 = v128.and(i16x8.shr_u(v128.load(q + kk), 4), m4);
          const u1 = v128.and(i16x8.shr_u(v128.load(q + kk, 16), 4), m4);
          const x = e + (kk >> 2);
          s0 = colStep(a0 + x, u0, u1, s0);
          s1 = colStep(a1 + x, u0, u1, s1);
          s2 = colStep(a2 + x, u0, u1, s2);
          s3 = colStep(a3 + x, u0, u1, s3);
        }
      }
      const sc = (j >> 2) == 0 ? scales0(c) : scales1(c);
      const ps = pairScale(sc, j & 3);
      i0 = i32x4.add(i0, i32x4.dot_i16x8_s(s0, ps));
      i1 = i32x4.add(i1, i32x4.dot_i16x8_s(s1, ps));
      i2 = i32x4.add(i2, i32x4.dot_i16x8_s(s2, ps));
      i3 = i32x4.add(i3, i32x4.dot_i16x8_s(s3, ps));
    }
    const bs = <usize>sb << 4;
    c0 = k4Scale(c, a0, sb, K, i0, minSum(c, a0 + bo + bs), c0);
    c1 = k4Scale(c, a1, sb, K, i1, minSum(c, a1 + bo + bs), c1);
    c2 = k4Scale(c, a2, sb, K, i2, minSum(c, a2 + bo + bs), c2);
    c3 = k4Scale(c, a3, sb, K, i3, minSum(c, a3 + bo + bs), c3);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

// ---- Q5_0 (ggml's layout): one row against four activation rows -------------------------
//
// The same steps per column as qdot.ts dotQ5_0 (so the same bits: a column's result does
// not depend on the batch it came in), with the weights decoded once for four columns.

/** 0x10 in the bytes of the elements whose bit is set in the Q5_0 high bits (sel: which qh bytes). */
@inline function q5High(qh: v128, sel: v128): v128 {
  const bits = C_BIT8();
  return v128.and(i8x16.eq(v128.and(i8x16.swizzle(qh, sel), bits), bits), C_M10());
}

/** One column's block step: acc += Σ·s (lanes), and the -16 offset term of block b. */
@inline function q5Col(a: usize, v0: v128, v1: v128, s: f32, acc: v128): v128 {
  const p = i16x8.add(rdot(v128.load(a), v0), rdot(v128.load(a, 16), v1));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i32x4.dot_i16x8_s(p, C_ONES16())), f32x4.splat(s)));
}

/** [row·act0, row·act1, row·act2, row·act3] for one Q5_0 row (nb blocks of 22 bytes at w). */
export function colsQ5_0x4(w: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize): v128 {
  const ad = 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  let k0: f32 = 0;
  let k1: f32 = 0;
  let k2: f32 = 0;
  let k3: f32 = 0;
  const m4 = C_M4();
  for (let b = 0; b < nb; b++, w += 22) {
    const dw = f16ToF32(load<u16>(w));
    const qh = i32x4.splat(load<u32>(w, 2));
    const q = v128.load(w, 6);
    const v0 = v128.or(v128.and(q, m4), q5High(qh, C_QH_LO()));
    const v1 = v128.or(v128.and(i16x8.shr_u(q, 4), m4), q5High(qh, C_QH_HI()));
    const o = <usize>b * 32;
    const od = ad + (<usize>b << 2);
    const os = as + (<usize>b << 2);
    const s0 = dw * load<f32>(a0 + od);
    const s1 = dw * load<f32>(a1 + od);
    const s2 = dw * load<f32>(a2 + od);
    const s3 = dw * load<f32>(a3 + od);
    c0 = q5Col(a0 + o, v0, v1, s0, c0);
    c1 = q5Col(a1 + o, v0, v1, s1, c1);
    c2 = q5Col(a2 + o, v0, v1, s2, c2);
    c3 = q5Col(a3 + o, v0, v1, s3, c3);
    k0 += <f32>(load<i32>(a0 + os) << 1) * s0;
    k1 += <f32>(load<i32>(a1 + os) << 1) * s1;
    k2 += <f32>(load<i32>(a2 + os) << 1) * s2;
    k3 += <f32>(load<i32>(a3 + os) << 1) * s3;
  }
  return f32x4(hsum(c0) - k0, hsum(c1) - k1, hsum(c2) - k2, hsum(c3) - k3);
}

// ---- Q5_0 in the k4 layout ----------------------------------------------------------------
//
// A group's block column (4 x 22 = 88 bytes): +0 d of rows 0..3 (f16); +8 + 2s, for the
// four-element steps s = 0..7 (elements 4s..4s+3 of each row): 16 high bits, bit 4r+e =
// bit 4s+e of row r's qh; +24 + 16kk: byte 4r+e = qs[4kk+e] of row r (low nibble: element
// 4kk+e, high nibble: element 16+4kk+e). Per block and row the integer Σ (q - 16)·a is
// exact and scaled once by d·da (as ggml-cpu).

/** Repack four Q5_0 rows (ggml layout at src, rowBytes apart) into the group at dst (ts: 22). */
export function repackQ5_0(src: usize, dst: usize, nb: i32, ts: i32, rowBytes: i32): void {
  for (let b = 0; b < nb; b++) {
    const c = dst + <usize>b * 88;
    v128.store(c + 8, i64x2.splat(0));
    for (let r = 0; r < 4; r++) {
      const p = src + <usize>r * <usize>rowBytes + <usize>b * 22;
      store<u16>(c + (<usize>r << 1), load<u16>(p));
      const qh = load<u32>(p, 2);
      for (let st = 0; st < 8; st++) {
        const k = c + 8 + <usize>(2 * st + (r >> 1));
        store<u8>(k, load<u8>(k) | (((qh >> (4 * st)) & 15) << ((r & 1) * 4)));
      }
      for (let kk = 0; kk < 4; kk++) store<u32>(c + 24 + <usize>(16 * kk + 4 * r), load<u32>(p + 6 + <usize>(4 * kk)));
    }
  }
}

/** qh of row r of the block column at c. */
@inline function q5Qh(c: usize, r: i32): u32 {
  let qh: u32 = 0;
  for (let st = 0; st < 8; st++) qh |= ((<u32>load<u8>(c + 8 + <usize>(2 * st + (r >> 1))) >> ((r & 1) * 4)) & 15) << (4 * st);
  return qh;
}

/** Restore row r (0..3) of the group at c (nb blocks) in ggml's layout at dst. */
export function unpackRowQ5_0(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 88, dst += 22) {
    store<u16>(dst, load<u16>(c + (<usize>r << 1)));
    store<u32>(dst, q5Qh(c, r), 2);
    for (let kk = 0; kk < 4; kk++) store<u32>(dst + 6 + <usize>(4 * kk), load<u32>(c + 24 + <usize>(16 * kk + 4 * r)));
  }
}

/** Dequantize row r of the group at c (nb blocks) to f32 at dst, as ggml does. */
export function dequantRowQ5_0(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 88, dst += 128) {
    const d = f16ToF32(load<u16>(c + (<usize>r << 1)));
    const qh = q5Qh(c, r);
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(c + 24 + <usize>((j >> 2) * 16 + r * 4 + (j & 3)));
      const h0 = <i32>(((qh >> j) << 4) & 0x10);
      const h1 = <i32>((qh >> (j + 12)) & 0x10);
      store<f32>(dst + (j << 2), <f32>((q & 15) - 16 + h0) * d);
      store<f32>(dst + ((j + 16) << 2), <f32>((q >> 4) - 16 + h1) * d);
    }
  }
}

/** The quants (0..31) of step s (elements 4s..4s+3 of each row) from nibbles n (0..15 bytes). */
@inline function q5Step(c: usize, s: i32, n: v128): v128 {
  return v128.or(n, q5High(v128.load16_splat(c + 8 + (<usize>s << 1)), C_QH_LO()));
}

/** acc + (Σ q·a − 16 Σ a)·d·da for one block column and one activation row (lanes = rows). */
@inline function q5Finish(c: usize, act: usize, b: i32, K: i32, lo: v128, hi: v128, acc: v128): v128 {
  const ad = act + 2 * <usize>K;
  // the stored sums are 8 x Σ a (Q4_0's offset): 16 x Σ a is that doubled
  const off = i32x4.shl(v128.load32_splat(ad + (<usize>K >> 3) + (<usize>b << 2)), 1);
  const isum = i32x4.sub(i32x4.add(i32x4.extadd_pairwise_i16x8_s(lo), i32x4.extadd_pairwise_i16x8_s(hi)), off);
  const d = f32x4.mul(f16x4At(c), v128.load32_splat(ad + (<usize>b << 2)));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(isum), d));
}

/** Four rows (the group at c, nb blocks) against one activation row: [r0..r3]. */
export function gemvQ5_0(c: usize, nb: i32, act: usize, K: i32): v128 {
  let acc = f32x4.splat(0);
  const m4 = C_M4();
  for (let b = 0; b < nb; b++, c += 88) {
    const a = act + (<usize>b << 5);
    // i16 lanes: at most 4·2·31·127 each, so low and high nibbles apart
    let lo = i16x8.splat(0);
    let hi = i16x8.splat(0);
    for (let kk = 0; kk < 4; kk++) {
      const w = v128.load(c + 24 + (<usize>kk << 4));
      lo = i16x8.add(lo, rdot(v128.load32_splat(a + (<usize>kk << 2)), q5Step(c, kk, v128.and(w, m4))));
      hi = i16x8.add(hi, rdot(v128.load32_splat(a + 16 + (<usize>kk << 2)), q5Step(c, kk + 4, v128.and(i16x8.shr_u(w, 4), m4))));
    }
    acc = q5Finish(c, act, b, K, lo, hi, acc);
  }
  return acc;
}

/** Four rows against four activation rows (results at o0..o3); per column the steps of gemvQ5_0. */
export function gemmQ5_0x4(
  c: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  const m4 = C_M4();
  for (let b = 0; b < nb; b++, c += 88) {
    const e = <usize>b << 5;
    let l0 = i16x8.splat(0);
    let l1 = i16x8.splat(0);
    let l2 = i16x8.splat(0);
    let l3 = i16x8.splat(0);
    for (let kk = 0; kk < 4; kk++) {
      const u = q5Step(c, kk, v128.and(v128.load(c + 24 + (<usize>kk << 4)), m4));
      const x = e + (<usize>kk << 2);
      l0 = i16x8.add(l0, rdot(v128.load32_splat(a0 + x), u));
      l1 = i16x8.add(l1, rdot(v128.load32_splat(a1 + x), u));
      l2 = i16x8.add(l2, rdot(v128.load32_splat(a2 + x), u));
      l3 = i16x8.add(l3, rdot(v128.load32_splat(a3 + x), u));
    }
    let h0 = i16x8.splat(0);
    let h1 = i16x8.splat(0);
    let h2 = i16x8.splat(0);
    let h3 = i16x8.splat(0);
    for (let kk = 0; kk < 4; kk++) {
      const u = q5Step(c, kk + 4, v128.and(i16x8.shr_u(v128.load(c + 24 + (<usize>kk << 4)), 4), m4));
      const x = e + 16 + (<usize>kk << 2);
      h0 = i16x8.add(h0, rdot(v128.load32_splat(a0 + x), u));
      h1 = i16x8.add(h1, rdot(v128.load32_splat(a1 + x), u));
      h2 = i16x8.add(h2, rdot(v128.load32_splat(a2 + x), u));
      h3 = i16x8.add(h3, rdot(v128.load32_splat(a3 + x), u));
    }
    c0 = q5Finish(c, a0, b, K, l0, h0, c0);
    c1 = q5Finish(c, a1, b, K, l1, h1, c1);
    c2 = q5Finish(c, a2, b, K, l2, h2, c2);
    c3 = q5Finish(c, a3, b, K, l3, h3, c3);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

// ---- Q4_0 in the k4 layout ----------------------------------------------------------------
//
// A group's block column (4 x 18 = 72 bytes): +0 d of rows 0..3 (f16); +8 + 16kk: byte
// 4r+e = qs[4kk+e] of row r (low nibble: element 4kk+e, high nibble: element 16+4kk+e).
// Each quant vector meets one broadcast run of four activation bytes and gives a lane pair
// per row, so four rows need no horizontal sums (rep4's 16 bytes per row need them). Per
// block and row the integer Σ q·a − 8 Σ a is exact and the float step is rep4's (qdot.ts
// colQ4_0: acc + isum·(d·da), fused), so both layouts give the same bits.

/** Repack four Q4_0 rows (ggml layout at src, rowBytes apart) into the group at dst (ts: 18). */
export function repackQ4_0(src: usize, dst: usize, nb: i32, ts: i32, rowBytes: i32): void {
  for (let b = 0; b < nb; b++) {
    const c = dst + <usize>b * 72;
    for (let r = 0; r < 4; r++) {
      const p = src + <usize>r * <usize>rowBytes + <usize>b * 18;
      store<u16>(c + (<usize>r << 1), load<u16>(p));
      for (let kk = 0; kk < 4; kk++) store<u32>(c + 8 + <usize>(16 * kk + 4 * r), load<u32>(p + 2 + <usize>(4 * kk)));
    }
  }
}

/** Restore row r (0..3) of the group at c (nb blocks) in ggml's layout at dst. */
export function unpackRowQ4_0(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 72, dst += 18) {
    store<u16>(dst, load<u16>(c + (<usize>r << 1)));
    for (let kk = 0; kk < 4; kk++) store<u32>(dst + 2 + <usize>(4 * kk), load<u32>(c + 8 + <usize>(16 * kk + 4 * r)));
  }
}

/** Dequantize row r of the group at c (nb blocks) to f32 at dst, as ggml does. */
export function dequantRowQ4_0(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 72, dst += 128) {
    const d = f16ToF32(load<u16>(c + (<usize>r << 1)));
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(c + 8 + <usize>((j >> 2) * 16 + r * 4 + (j & 3)));
      store<f32>(dst + (j << 2), <f32>((q & 15) - 8) * d);
      store<f32>(dst + ((j + 16) << 2), <f32>((q >> 4) - 8) * d);
    }
  }
}

/** Four rows (the group at c, nb blocks) against one activation row: [r0..r3]. */
export function gemvQ4_0(c: usize, nb: i32, act: usize, K: i32): v128 {
  return dotAdd() ? gemvQ4_0Of(c, nb, act, K, true) : gemvQ4_0Of(c, nb, act, K, false);
}

/**
 * q4Col8's steps with pointers advanced rather than recomputed from the block index (V8
 * does not reduce the multiplies; the kernel is bound by its instruction count): the same
 * integers and the same float step, so the same bits.
 */
@inline function gemvQ4_0Of(c: usize, nb: i32, act: usize, K: i32, wide: bool): v128 {
  let acc = f32x4.splat(0);
  const m4 = C_M4();
  let a = act;
  let da = act + 2 * <usize>K;
  let so = da + (<usize>K >> 3);
  for (let b = 0; b < nb; b++, c += 72, a += 32, da += 4, so += 4) {
    const w0 = v128.load(c, 8);
    const w1 = v128.load(c, 24);
    const w2 = v128.load(c, 40);
    const w3 = v128.load(c, 56);
    let i: v128;
    if (wide) {
      let p = rda(v128.load32_splat(a), v128.and(w0, m4), i32x4.splat(0));
      let q = rda(v128.load32_splat(a, 4), v128.and(w1, m4), i32x4.splat(0));
      p = rda(v128.load32_splat(a, 8), v128.and(w2, m4), p);
      q = rda(v128.load32_splat(a, 12), v128.and(w3, m4), q);
      p = rda(v128.load32_splat(a, 16), v128.and(i16x8.shr_u(w0, 4), m4), p);
      q = rda(v128.load32_splat(a, 20), v128.and(i16x8.shr_u(w1, 4), m4), q);
      p = rda(v128.load32_splat(a, 24), v128.and(i16x8.shr_u(w2, 4), m4), p);
      q = rda(v128.load32_splat(a, 28), v128.and(i16x8.shr_u(w3, 4), m4), q);
      i = i32x4.sub(i32x4.add(p, q), v128.load32_splat(so));
    } else {
      let p = rdot(v128.load32_splat(a), v128.and(w0, m4));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 4), v128.and(w1, m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 8), v128.and(w2, m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 12), v128.and(w3, m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 16), v128.and(i16x8.shr_u(w0, 4), m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 20), v128.and(i16x8.shr_u(w1, 4), m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 24), v128.and(i16x8.shr_u(w2, 4), m4)));
      p = i16x8.add(p, rdot(v128.load32_splat(a, 28), v128.and(i16x8.shr_u(w3, 4), m4)));
      i = i32x4.sub(i32x4.dot_i16x8_s(p, C_ONES16()), v128.load32_splat(so));
    }
    acc = madd(f32x4.convert_i32x4_s(i), f32x4.mul(f16x4At(c), v128.load32_splat(da)), acc);
  }
  return acc;
}

/** Four rows against four activation rows (results at o0..o3); per column the steps of gemvQ4_0. */
export function gemmQ4_0x4(
  c: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  if (dotAdd()) gemmQ4_0x4Of(c, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, true);
  else gemmQ4_0x4Of(c, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, false);
}

@inline function gemmQ4_0x4Of(
  c: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
  wide: bool,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  const m4 = C_M4();
  for (let b = 0; b < nb; b++, c += 72) {
    // the eight quant vectors decoded once for the four columns
    const w0 = v128.load(c, 8);
    const w1 = v128.load(c, 24);
    const w2 = v128.load(c, 40);
    const w3 = v128.load(c, 56);
    const l0 = v128.and(w0, m4);
    const l1 = v128.and(w1, m4);
    const l2 = v128.and(w2, m4);
    const l3 = v128.and(w3, m4);
    const h0 = v128.and(i16x8.shr_u(w0, 4), m4);
    const h1 = v128.and(i16x8.shr_u(w1, 4), m4);
    const h2 = v128.and(i16x8.shr_u(w2, 4), m4);
    const h3 = v128.and(i16x8.shr_u(w3, 4), m4);
    const dw = f16x4At(c);
    c0 = q4Col8(a0, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c0, wide);
    c1 = q4Col8(a1, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c1, wide);
    c2 = q4Col8(a2, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c2, wide);
    c3 = q4Col8(a3, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c3, wide);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

/**
 * One column's block step: acc + (Σ q·a − 8 Σ a)·(d·da) for block b of activation row act
 * (lanes = rows; l/h: the low/high nibbles of the block's four quant vectors; dw: the rows'
 * d). The sums in 16-bit lane pairs, widened at the end, or (wide, dotAdd) in 32-bit lanes
 * from −8 Σ a on, two chains: the same exact integers either way.
 */
@inline function q4Col8(
  act: usize, b: i32, K: i32, l0: v128, l1: v128, l2: v128, l3: v128, h0: v128, h1: v128, h2: v128, h3: v128,
  dw: v128, acc: v128, wide: bool,
): v128 {
  const a = act + (<usize>b << 5);
  const ad = act + 2 * <usize>K;
  const off = v128.load32_splat(ad + (<usize>K >> 3) + (<usize>b << 2));
  let i: v128;
  if (wide) {
    let p = rda(v128.load32_splat(a), l0, i32x4.neg(off));
    let q = rda(v128.load32_splat(a, 4), l1, i32x4.splat(0));
    p = rda(v128.load32_splat(a, 8), l2, p);
    q = rda(v128.load32_splat(a, 12), l3, q);
    p = rda(v128.load32_splat(a, 16), h0, p);
    q = rda(v128.load32_splat(a, 20), h1, q);
    p = rda(v128.load32_splat(a, 24), h2, p);
    q = rda(v128.load32_splat(a, 28), h3, q);
    i = i32x4.add(p, q);
  } else {
    let p = rdot(v128.load32_splat(a), l0);
    p = i16x8.add(p, rdot(v128.load32_splat(a, 4), l1));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 8), l2));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 12), l3));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 16), h0));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 20), h1));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 24), h2));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 28), h3));
    i = i32x4.sub(i32x4.dot_i16x8_s(p, C_ONES16()), off);
  }
  return madd(f32x4.convert_i32x4_s(i), f32x4.mul(dw, v128.load32_splat(ad + (<usize>b << 2))), acc);
}

/**
 * Unpack n block columns of a group (at c) for the tiles of qdot.ts (tileQ4_0x2/x1, the
 * DQ4 format of unpackQ4_0x4): the four d as f32, then the low and the high nibbles of
 * the four quant vectors, which already hold four bytes of each row in turn.
 */
export function unpackQ4_0k4(c: usize, n: i32, s: usize): void {
  const m4 = C_M4();
  for (let b = 0; b < n; b++, c += 72, s += 144) {
    v128.store(s, f16x4At(c));
    for (let kk: usize = 0; kk < 64; kk += 16) {
      const w = v128.load(c + kk, 8);
      v128.store(s + kk, v128.and(w, m4), 16);
      v128.store(s + kk, v128.and(i16x8.shr_u(w, 4), m4), 80);
    }
  }
}

// ---- Q6_K in the k4 layout -------------------------------------------------------------
//
// A group's super-block column (4 x 210 = 840 bytes): +0 d of rows 0..3 (f16); +8 the
// scales, byte 8p + 2r + t = scale of sub-block 2p+t of row r; +72 + 48u for u = 8n + kk
// (half n, four-element step kk = 0..7): three 16-byte vectors A, B, C, byte 4r+e of each
// from row r, holding the step's four quants (0..63) q0..q3 of elements 128n + 4kk + e +
// 32s (s = 0..3, ggml's sets: ggml's ql/qh split them 4 + 2 bits):
//   A = q0 | (q2 >> 4) << 6,  B = q1 | (q3 >> 4) << 6,  C = (q2 & 15) | (q3 & 15) << 4.
// q0 and q1 then take one AND each, q2 and q3 four and five vector ops (ggml's split takes
// four or five for every quant): the one-column kernel is bound by its instruction count.

export const K6_SB: usize = 840;

// Four bytes at a time (one per element e): ggml's ql[64n+4kk+e], ql[64n+32+4kk+e] and
// qh[32n+4kk+e] words to A, B, C and back (host twin: src/backends/cpu/layout-k.ts).
@inline function k6A(la: u32, h: u32): u32 {
  return (la & 0x0f0f0f0f) | ((h & 0x03030303) << 4) | ((h & 0x30303030) << 2);
}
@inline function k6B(lb: u32, h: u32): u32 {
  return (lb & 0x0f0f0f0f) | ((h & 0x0c0c0c0c) << 2) | (h & 0xc0c0c0c0);
}
@inline function k6C(la: u32, lb: u32): u32 {
  return ((la >> 4) & 0x0f0f0f0f) | (lb & 0xf0f0f0f0);
}

/** Repack four Q6_K rows (ggml layout at src, rowBytes apart) into the group at dst (ts: 210). */
export function repackQ6K(src: usize, dst: usize, nsb: i32, ts: i32, rowBytes: i32): void {
  for (let b = 0; b < nsb; b++) {
    const c = dst + <usize>b * K6_SB;
    for (let r = 0; r < 4; r++) {
      const p = src + <usize>r * <usize>rowBytes + <usize>b * 210;
      store<u16>(c + (<usize>r << 1), load<u16>(p, 208));
      for (let pp = 0; pp < 8; pp++) store<u16>(c + 8 + <usize>(8 * pp + 2 * r), load<u16>(p + 192 + <usize>(2 * pp)));
      for (let u = 0; u < 16; u++) {
        const n = u >> 3;
        const kk = u & 7;
        const o = c + 72 + <usize>(48 * u + 4 * r);
        const la = load<u32>(p + <usize>(64 * n + 4 * kk));
        const lb = load<u32>(p + <usize>(64 * n + 32 + 4 * kk));
        const h = load<u32>(p + <usize>(128 + 32 * n + 4 * kk));
        store<u32>(o, k6A(la, h));
        store<u32>(o + 16, k6B(lb, h));
        store<u32>(o + 32, k6C(la, lb));
      }
    }
  }
}

/** Restore row r (0..3) of the group at c (nsb super-blocks) in ggml's layout at dst. */
export function unpackRowQ6K(c: usize, r: i32, nsb: i32, dst: usize): void {
  for (let b = 0; b < nsb; b++, c += K6_SB, dst += 210) {
    store<u16>(dst, load<u16>(c + (<usize>r << 1)), 208);
    for (let pp = 0; pp < 8; pp++) store<u16>(dst + 192 + <usize>(2 * pp), load<u16>(c + 8 + <usize>(8 * pp + 2 * r)));
    for (let u = 0; u < 16; u++) {
      const n = u >> 3;
      const kk = u & 7;
      const o = c + 72 + <usize>(48 * u + 4 * r);
      const A = load<u32>(o);
      const B = load<u32>(o + 16);
      const C = load<u32>(o + 32);
      store<u32>(dst + <usize>(64 * n + 4 * kk), (A & 0x0f0f0f0f) | ((C & 0x0f0f0f0f) << 4));
      store<u32>(dst + <usize>(64 * n + 32 + 4 * kk), (B & 0x0f0f0f0f) | (C & 0xf0f0f0f0));
      store<u32>(
        dst + <usize>(128 + 32 * n + 4 * kk),
        ((A >> 4) & 0x03030303) | ((B >> 2) & 0x0c0c0c0c) | ((A >> 2) & 0x30303030) | (B & 0xc0c0c0c0),
      );
    }
  }
}

/** Dequantize row r of the group at c (nsb super-blocks) to f32 at dst, as ggml does. */
export function dequantRowQ6K(c: usize, r: i32, nsb: i32, dst: usize): void {
  for (let b = 0; b < nsb; b++, c += K6_SB, dst += 1024) {
    const d = f16ToF32(load<u16>(c + (<usize>r << 1)));
    for (let n = 0; n < 2; n++) {
      for (let l = 0; l < 32; l++) {
        const o = c + 72 + <usize>(48 * (8 * n + (l >> 2)) + 4 * r + (l & 3));
        const A = <i32>load<u8>(o);
        const B = <i32>load<u8>(o + 16);
        const C = <i32>load<u8>(o + 32);
        const is = n * 8 + (l >> 4);
        const s0 = d * <f32>load<i8>(c + 8 + <usize>(8 * (is >> 1) + 2 * r + (is & 1)));
        const s2 = d * <f32>load<i8>(c + 8 + <usize>(8 * ((is + 2) >> 1) + 2 * r + (is & 1)));
        const s4 = d * <f32>load<i8>(c + 8 + <usize>(8 * ((is + 4) >> 1) + 2 * r + (is & 1)));
        const s6 = d * <f32>load<i8>(c + 8 + <usize>(8 * ((is + 6) >> 1) + 2 * r + (is & 1)));
        const y = dst + (<usize>(n * 128 + l) << 2);
        store<f32>(y, s0 * <f32>((A & 63) - 32));
        store<f32>(y + 128, s2 * <f32>((B & 63) - 32));
        store<f32>(y + 256, s4 * <f32>(((C & 15) | ((A >> 6) << 4)) - 32));
        store<f32>(y + 384, s6 * <f32>(((C >> 4) | ((B >> 6) << 4)) - 32));
      }
    }
  }
}

/** i16 lanes [s_r0, s_r0, s_r1, s_r1, ...] of sub-block 2p+t of the super-block column at c. */
@inline function q6Scale(c: usize, p: i32, t: i32): v128 {
  const e = v128.load8x8_s(c + 8 + (<usize>p << 3));
  return t == 0 ? v128.shuffle<i16>(e, e, 0, 0, 2, 2, 4, 4, 6, 6) : v128.shuffle<i16>(e, e, 1, 1, 3, 3, 5, 5, 7, 7);
}

/** acc + (isum − 32 Σ_j scale_j·(sums per 16 of j))·d·da, lanes = rows. */
@inline function q6Finish4(c: usize, act: usize, sb: i32, K: i32, isum: v128, acc: v128): v128 {
  const ad = act + 2 * <usize>K;
  const bs = ad + (<usize>K >> 3) + (<usize>sb << 5);
  let off = i32x4.splat(0);
  for (let p = 0; p < 8; p++) {
    off = i32x4.add(off, i32x4.dot_i16x8_s(v128.load8x8_s(c + 8 + (<usize>p << 3)), v128.load32_splat(bs + (<usize>p << 2))));
  }
  const d = f32x4.mul(f16x4At(c), v128.load32_splat(ad + (<usize>sb << 2)));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i32x4.sub(isum, i32x4.shl(off, 5))), d));
}

/** i32 lanes [s_r0, s_r1, s_r2, s_r3] of sub-block 2p+t of the super-block column at c. */
@inline function q6Scale32(c: usize, p: i32, t: i32): v128 {
  const e = v128.load8x8_s(c + 8 + (<usize>p << 3));
  return i32x4.extend_low_i16x8_s(t == 0 ? v128.shuffle<i16>(e, e, 0, 2, 4, 6, 0, 2, 4, 6) : v128.shuffle<i16>(e, e, 1, 3, 5, 7, 1, 3, 5, 7));
}

/** Quants q0..q3 of the step whose vectors A, B, C are at w (see the layout above). */
@inline function q6Q0(w: usize): v128 {
  return v128.and(v128.load(w), C_M3F());
}
@inline function q6Q1(w: usize): v128 {
  return v128.and(v128.load(w, 16), C_M3F());
}
@inline function q6Q2(w: usize, m4: v128, m30: v128): v128 {
  return v128.or(v128.and(v128.load(w, 32), m4), v128.and(i16x8.shr_u(v128.load(w), 2), m30));
}
@inline function q6Q3(w: usize, m4: v128, m30: v128): v128 {
  return v128.or(v128.and(i16x8.shr_u(v128.load(w, 32), 4), m4), v128.and(i16x8.shr_u(v128.load(w, 16), 2), m30));
}

/** Four rows (the group at c, nsb super-blocks) against one activation row: [r0..r3]. */
export function gemvQ6K(c: usize, nsb: i32, act: usize, K: i32): v128 {
  return dotAdd() ? gemvQ6KOf(c, nsb, act, K, true) : gemvQ6KOf(c, nsb, act, K, false);
}

/**
 * Steps in memory order, pointers advanced rather than recomputed (V8 does not reduce the
 * multiplies); per (half n, hk) the four steps 4hk..4hk+3, whose set s is sub-block
 * 8n + 2s + hk. Wide (dotAdd): a sub-block's sum in 32-bit lanes, times its scales once;
 * else two steps in i16 lane pairs (at most 2·2·63·127) scaled into i32. The same exact
 * integers either way, and q6Finish4 the same float step.
 */
@inline function gemvQ6KOf(c: usize, nsb: i32, act: usize, K: i32, wide: bool): v128 {
  let acc = f32x4.splat(0);
  const m4 = C_M4();
  const m30 = C_M30();
  for (let sb = 0; sb < nsb; sb++, c += K6_SB) {
    let isum = i32x4.splat(0);
    let w = c + 72;
    for (let u4 = 0; u4 < 4; u4++) {
      const n = u4 >> 1;
      const hk = u4 & 1;
      let a = act + (<usize>sb << 8) + <usize>(128 * n + 16 * hk);
      if (wide) {
        let s0 = i32x4.splat(0);
        let s1 = i32x4.splat(0);
        let s2 = i32x4.splat(0);
        let s3 = i32x4.splat(0);
        for (let k = 0; k < 4; k++, w += 48, a += 4) {
          s0 = rda(v128.load32_splat(a), q6Q0(w), s0);
          s1 = rda(v128.load32_splat(a, 32), q6Q1(w), s1);
          s2 = rda(v128.load32_splat(a, 64), q6Q2(w, m4, m30), s2);
          s3 = rda(v128.load32_splat(a, 96), q6Q3(w, m4, m30), s3);
        }
        isum = i32x4.add(isum, i32x4.add(i32x4.mul(s0, q6Scale32(c, 4 * n, hk)), i32x4.mul(s1, q6Scale32(c, 4 * n + 1, hk))));
        isum = i32x4.add(isum, i32x4.add(i32x4.mul(s2, q6Scale32(c, 4 * n + 2, hk)), i32x4.mul(s3, q6Scale32(c, 4 * n + 3, hk))));
      } else {
        const c0 = q6Scale(c, 4 * n, hk);
        const c1 = q6Scale(c, 4 * n + 1, hk);
        const c2 = q6Scale(c, 4 * n + 2, hk);
        const c3 = q6Scale(c, 4 * n + 3, hk);
        for (let kp = 0; kp < 2; kp++) {
          let s0 = i16x8.splat(0);
          let s1 = i16x8.splat(0);
          let s2 = i16x8.splat(0);
          let s3 = i16x8.splat(0);
          for (let k2 = 0; k2 < 2; k2++, w += 48, a += 4) {
            s0 = i16x8.add(s0, rdot(v128.load32_splat(a), q6Q0(w)));
            s1 = i16x8.add(s1, rdot(v128.load32_splat(a, 32), q6Q1(w)));
            s2 = i16x8.add(s2, rdot(v128.load32_splat(a, 64), q6Q2(w, m4, m30)));
            s3 = i16x8.add(s3, rdot(v128.load32_splat(a, 96), q6Q3(w, m4, m30)));
          }
          isum = i32x4.add(isum, i32x4.add(i32x4.dot_i16x8_s(s0, c0), i32x4.dot_i16x8_s(s1, c1)));
          isum = i32x4.add(isum, i32x4.add(i32x4.dot_i16x8_s(s2, c2), i32x4.dot_i16x8_s(s3, c3)));
        }
      }
    }
    acc = q6Finish4(c, act, sb, K, isum, acc);
  }
  return acc;
}

/** One quant set (0..3, a constant) of the step whose 48 bytes are at w. */
@inline function q6Set(w: usize, set: i32, m4: v128, m30: v128): v128 {
  if (set == 0) return q6Q0(w);
  if (set == 1) return q6Q1(w);
  if (set == 2) return q6Q2(w, m4, m30);
  return q6Q3(w, m4, m30);
}

/** Four rows against four activation rows (results at o0..o3); per column the integer sums and float steps of gemvQ6K. */
export function gemmQ6Kx4(
  c: usize, nsb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  const m4 = C_M4();
  const m30 = C_M30();
  for (let sb = 0; sb < nsb; sb++, c += K6_SB) {
    let i0 = i32x4.splat(0);
    let i1 = i32x4.splat(0);
    let i2 = i32x4.splat(0);
    let i3 = i32x4.splat(0);
    // (n, hk): steps 4hk..4hk+3 of half n; set s of them is sub-block 8n + 2s + hk. Two
    // steps at a time in i16 lanes (at most 2·2·63·127), then scaled into i32.
    for (let u4 = 0; u4 < 4; u4++) {
      const n = u4 >> 1;
      const hk = u4 & 1;
      const e = (<usize>sb << 8) + <usize>(128 * n + 16 * hk);
      const w = c + 72 + <usize>(48 * (8 * n + 4 * hk));
      let sc = q6Scale(c, 4 * n, hk);
      for (let kp: usize = 0; kp < 2; kp++) {
        const u0 = q6Set(w + kp * 96, 0, m4, m30);
        const u1 = q6Set(w + kp * 96 + 48, 0, m4, m30);
        const x = e + (kp << 3);
        i0 = i32x4.add(i0, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a0 + x), u0), rdot(v128.load32_splat(a0 + x, 4), u1)), sc));
        i1 = i32x4.add(i1, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a1 + x), u0), rdot(v128.load32_splat(a1 + x, 4), u1)), sc));
        i2 = i32x4.add(i2, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a2 + x), u0), rdot(v128.load32_splat(a2 + x, 4), u1)), sc));
        i3 = i32x4.add(i3, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a3 + x), u0), rdot(v128.load32_splat(a3 + x, 4), u1)), sc));
      }
      sc = q6Scale(c, 4 * n + 1, hk);
      for (let kp: usize = 0; kp < 2; kp++) {
        const u0 = q6Set(w + kp * 96, 1, m4, m30);
        const u1 = q6Set(w + kp * 96 + 48, 1, m4, m30);
        const x = e + 32 * 1 + (kp << 3);
        i0 = i32x4.add(i0, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a0 + x), u0), rdot(v128.load32_splat(a0 + x, 4), u1)), sc));
        i1 = i32x4.add(i1, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a1 + x), u0), rdot(v128.load32_splat(a1 + x, 4), u1)), sc));
        i2 = i32x4.add(i2, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a2 + x), u0), rdot(v128.load32_splat(a2 + x, 4), u1)), sc));
        i3 = i32x4.add(i3, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a3 + x), u0), rdot(v128.load32_splat(a3 + x, 4), u1)), sc));
      }
      sc = q6Scale(c, 4 * n + 2, hk);
      for (let kp: usize = 0; kp < 2; kp++) {
        const u0 = q6Set(w + kp * 96, 2, m4, m30);
        const u1 = q6Set(w + kp * 96 + 48, 2, m4, m30);
        const x = e + 32 * 2 + (kp << 3);
        i0 = i32x4.add(i0, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a0 + x), u0), rdot(v128.load32_splat(a0 + x, 4), u1)), sc));
        i1 = i32x4.add(i1, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a1 + x), u0), rdot(v128.load32_splat(a1 + x, 4), u1)), sc));
        i2 = i32x4.add(i2, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a2 + x), u0), rdot(v128.load32_splat(a2 + x, 4), u1)), sc));
        i3 = i32x4.add(i3, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a3 + x), u0), rdot(v128.load32_splat(a3 + x, 4), u1)), sc));
      }
      sc = q6Scale(c, 4 * n + 3, hk);
      for (let kp: usize = 0; kp < 2; kp++) {
        const u0 = q6Set(w + kp * 96, 3, m4, m30);
        const u1 = q6Set(w + kp * 96 + 48, 3, m4, m30);
        const x = e + 32 * 3 + (kp << 3);
        i0 = i32x4.add(i0, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a0 + x), u0), rdot(v128.load32_splat(a0 + x, 4), u1)), sc));
        i1 = i32x4.add(i1, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a1 + x), u0), rdot(v128.load32_splat(a1 + x, 4), u1)), sc));
        i2 = i32x4.add(i2, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a2 + x), u0), rdot(v128.load32_splat(a2 + x, 4), u1)), sc));
        i3 = i32x4.add(i3, i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load32_splat(a3 + x), u0), rdot(v128.load32_splat(a3 + x, 4), u1)), sc));
      }
    }
    c0 = q6Finish4(c, a0, sb, K, i0, c0);
    c1 = q6Finish4(c, a1, sb, K, i1, c1);
    c2 = q6Finish4(c, a2, sb, K, i2, c2);
    c3 = q6Finish4(c, a3, sb, K, i3, c3);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

// ---- Q6_K against several columns: the group unpacked once ----------------------------
//
// With two or more columns, gemmQ6Kx4's per-step decode (one to five vector ops a vector)
// costs as much as a column's dots, and it is paid again for every four columns. The tiles
// below take the group unpacked once into thread scratch: per super-block column 1024
// bytes, sub-block j (0..15, 16 elements) at 64j, its four four-element steps 16 bytes
// each, lanes [r0 e0..3][r1 e0..3][r2 e0..3][r3 e0..3] holding the quants (0..63). A
// column then takes per sub-block one load of its 16 activation quants, four runs
// broadcast by shuffles (measured faster than four splat loads, which V8 hoists and
// spills) and four relaxed dots, two per i16 sum (at most 2·2·63·127 per lane) scaled
// into i32 as gemvQ6K does; the integer sums are the same and q6Finish4 the same float
// step, so the bits are too.

/** Bytes of one unpacked Q6_K super-block column of a group. */
export const DQ6: usize = 1024;

/** Unpack the nsb super-block columns of the Q6_K group at c into s (nsb·DQ6 bytes). */
export function unpackQ6Kx4(c: usize, nsb: i32, s: usize): void {
  const m4 = C_M4();
  const m30 = C_M30();
  for (let sb = 0; sb < nsb; sb++, c += K6_SB) {
    // the step at w holds sets 0..3 of sub-blocks 8n + 2·set + hk (n = half, hk = step / 4)
    for (let u: usize = 0; u < 16; u++) {
      const w = c + 72 + 48 * u;
      const n = u >> 3;
      const hk = (u >> 2) & 1;
      const o = s + ((8 * n + hk) << 6) + ((u & 3) << 4);
      v128.store(o, q6Set(w, 0, m4, m30));
      v128.store(o, q6Set(w, 1, m4, m30), 128);
      v128.store(o, q6Set(w, 2, m4, m30), 256);
      v128.store(o, q6Set(w, 3, m4, m30), 384);
    }
    s += DQ6;
  }
}

/** One column's i32 sums of an unpacked sub-block at w: its 16 activation quants loaded once, runs broadcast by shuffles. */
@inline function q6Sub16(w: usize, x: usize, sc: v128): v128 {
  const a = v128.load(x);
  const lo = i16x8.add(rdot(v128.shuffle<i32>(a, a, 0, 0, 0, 0), v128.load(w)), rdot(v128.shuffle<i32>(a, a, 1, 1, 1, 1), v128.load(w, 16)));
  const hi = i16x8.add(rdot(v128.shuffle<i32>(a, a, 2, 2, 2, 2), v128.load(w, 32)), rdot(v128.shuffle<i32>(a, a, 3, 3, 3, 3), v128.load(w, 48)));
  return i32x4.add(i32x4.dot_i16x8_s(lo, sc), i32x4.dot_i16x8_s(hi, sc));
}

/**
 * The Q6_K group at c (nsb super-blocks), unpacked at s, against four activation rows:
 * results (four rows each) at o0..o3.
 */
export function tileQ6Kx4(
  c: usize, s: usize, nsb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, c += K6_SB, s += DQ6) {
    let i0 = i32x4.splat(0);
    let i1 = i32x4.splat(0);
    let i2 = i32x4.splat(0);
    let i3 = i32x4.splat(0);
    const e = <usize>sb << 8;
    // a loop over sub-blocks: V8 would hoist (and spill) every load of a longer body
    for (let j: usize = 0; j < 16; j++) {
      const sc = q6Scale(c, <i32>(j >> 1), <i32>j & 1);
      const w = s + (j << 6);
      const x = e + (j << 4);
      i0 = i32x4.add(i0, q6Sub16(w, a0 + x, sc));
      i1 = i32x4.add(i1, q6Sub16(w, a1 + x, sc));
      i2 = i32x4.add(i2, q6Sub16(w, a2 + x, sc));
      i3 = i32x4.add(i3, q6Sub16(w, a3 + x, sc));
    }
    c0 = q6Finish4(c, a0, sb, K, i0, c0);
    c1 = q6Finish4(c, a1, sb, K, i1, c1);
    c2 = q6Finish4(c, a2, sb, K, i2, c2);
    c3 = q6Finish4(c, a3, sb, K, i3, c3);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

/** As tileQ6Kx4 for two columns. */
export function tileQ6Kx2(c: usize, s: usize, nsb: i32, K: i32, a0: usize, a1: usize, o0: usize, o1: usize): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, c += K6_SB, s += DQ6) {
    let i0 = i32x4.splat(0);
    let i1 = i32x4.splat(0);
    const e = <usize>sb << 8;
    for (let j: usize = 0; j < 16; j++) {
      const sc = q6Scale(c, <i32>(j >> 1), <i32>j & 1);
      const w = s + (j << 6);
      const x = e + (j << 4);
      i0 = i32x4.add(i0, q6Sub16(w, a0 + x, sc));
      i1 = i32x4.add(i1, q6Sub16(w, a1 + x, sc));
    }
    c0 = q6Finish4(c, a0, sb, K, i0, c0);
    c1 = q6Finish4(c, a1, sb, K, i1, c1);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
}

/** As tileQ6Kx4 for one column. */
export function tileQ6Kx1(c: usize, s: usize, nsb: i32, K: i32, a0: usize, o0: usize): void {
  let c0 = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, c += K6_SB, s += DQ6) {
    let i0 = i32x4.splat(0);
    const e = <usize>sb << 8;
    for (let j: usize = 0; j < 16; j++) {
      i0 = i32x4.add(i0, q6Sub16(s + (j << 6), a0 + e + (j << 4), q6Scale(c, <i32>(j >> 1), <i32>j & 1)));
    }
    c0 = q6Finish4(c, a0, sb, K, i0, c0);
  }
  v128.store(o0, c0);
}
