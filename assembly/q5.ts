// Q5_0 rows in ggml's layout (22-byte blocks: f16 scale, 32 high bits, 16 bytes of
// nibbles), four rows at a time, relaxed build only. Each block of the four rows is
// unpacked once and used by every column of the tile. Per column the four results (one
// lane per row) accumulate block by block as f32(Σq·a - 16·Σa) · (d_w · d_a): the same
// operations in the one- and four-column kernels, so a result does not depend on how
// many columns the batch had.

import { C_M4, C_ONES16, C_QH_HI, C_QH_LO, f16x4 } from './consts';
import { q5High, reduce4 } from './qdot';

@inline function lo5(w: usize): v128 {
  const q = v128.load(w, 6);
  return v128.or(v128.and(q, C_M4()), q5High(i32x4.splat(load<u32>(w, 2)), C_QH_LO()));
}

@inline function hi5(w: usize): v128 {
  const q = v128.load(w, 6);
  return v128.or(v128.and(i16x8.shr_u(q, 4), C_M4()), q5High(i32x4.splat(load<u32>(w, 2)), C_QH_HI()));
}

/** The four rows' scales (f16 at the start of each row's block) as f32 lanes. */
@inline function scales(w: usize, rs: usize): v128 {
  let h = i32x4.splat(load<u16>(w));
  h = i32x4.replace_lane(h, 1, load<u16>(w + rs));
  h = i32x4.replace_lane(h, 2, load<u16>(w + 2 * rs));
  h = i32x4.replace_lane(h, 3, load<u16>(w + 3 * rs));
  return f16x4(h);
}

@inline function rowSum(x0: v128, x1: v128, v0: v128, v1: v128): v128 {
  const p = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(x0, v0), i16x8.relaxed_dot_i8x16_i7x16_s(x1, v1));
  return i32x4.dot_i16x8_s(p, C_ONES16());
}

/** One column's step for block b: acc + f32(Σq·a - 16·Σa) · (dw · da). */
@inline function col(
  act: usize, b: i32, K: i32, dw: v128, acc: v128,
  l0: v128, h0: v128, l1: v128, h1: v128, l2: v128, h2: v128, l3: v128, h3: v128,
): v128 {
  const a = act + (<usize>b << 5);
  const x0 = v128.load(a);
  const x1 = v128.load(a, 16);
  const r = reduce4(rowSum(x0, x1, l0, h0), rowSum(x0, x1, l1, h1), rowSum(x0, x1, l2, h2), rowSum(x0, x1, l3, h3));
  const ad = act + 2 * <usize>K;
  // the stored per-block sums are 8 x Σa (the Q4_0 offset); Q5_0's is 16
  const ri = i32x4.sub(r, i32x4.shl(v128.load32_splat(ad + (<usize>K >> 3) + (<usize>b << 2)), 1));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(ri), f32x4.mul(dw, v128.load32_splat(ad + (<usize>b << 2)))));
}

/** Rows p, p+rs, p+2rs, p+3rs (nb blocks each) against four activation rows; four results per column to o0..o3. */
export function groupQ5_0x4(
  p: usize, rs: usize, nb: i32, K: i32,
  a0: usize, a1: usize, a2: usize, a3: usize,
  o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const w = p + <usize>b * 22;
    const l0 = lo5(w);
    const h0 = hi5(w);
    const l1 = lo5(w + rs);
    const h1 = hi5(w + rs);
    const l2 = lo5(w + 2 * rs);
    const h2 = hi5(w + 2 * rs);
    const l3 = lo5(w + 3 * rs);
    const h3 = hi5(w + 3 * rs);
    const dw = scales(w, rs);
    c0 = col(a0, b, K, dw, c0, l0, h0, l1, h1, l2, h2, l3, h3);
    c1 = col(a1, b, K, dw, c1, l0, h0, l1, h1, l2, h2, l3, h3);
    c2 = col(a2, b, K, dw, c2, l0, h0, l1, h1, l2, h2, l3, h3);
    c3 = col(a3, b, K, dw, c3, l0, h0, l1, h1, l2, h2, l3, h3);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

/** The same four rows against one activation row. */
export function groupQ5_0x1(p: usize, rs: usize, nb: i32, K: i32, a0: usize, o0: usize): void {
  let c0 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const w = p + <usize>b * 22;
    c0 = col(a0, b, K, scales(w, rs), c0, lo5(w), hi5(w), lo5(w + rs), hi5(w + rs), lo5(w + 2 * rs), hi5(w + 2 * rs), lo5(w + 3 * rs), hi5(w + 3 * rs));
  }
  v128.store(o0, c0);
}
