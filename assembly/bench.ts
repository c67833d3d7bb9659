// Memory read bandwidth probe for the kernel benchmark: thread ith sums its share of
// the bytes [extra 0, extra 0 + extra 1) and stores the sum at extra 2 + 16 * ith.

import { extra, share0 } from './desc';

export function k_read_bw(node: usize, ith: i32, nth: i32): void {
  const base = <usize>extra(node, 0);
  const n = extra(node, 1) >> 6;
  const b0 = share0(n, ith, nth);
  const b1 = share0(n, ith + 1, nth);
  let a0 = i32x4.splat(0);
  let a1 = i32x4.splat(0);
  let a2 = i32x4.splat(0);
  let a3 = i32x4.splat(0);
  for (let b = b0; b < b1; b++) {
    const p = base + ((<usize>b) << 6);
    a0 = i32x4.add(a0, v128.load(p));
    a1 = i32x4.add(a1, v128.load(p, 16));
    a2 = i32x4.add(a2, v128.load(p, 32));
    a3 = i32x4.add(a3, v128.load(p, 48));
  }
  v128.store(<usize>extra(node, 2) + ((<usize>ith) << 4), i32x4.add(i32x4.add(a0, a1), i32x4.add(a2, a3)));
}

// Which of two exact forms of the 8-bit dot the engine runs faster (src/backends/cpu/
// engine-flags.ts): the 16-bit dot then an add (two instructions on x64), or the dot that
// accumulates into 32-bit lanes (one where the engine emits VNNI's vpdpbusd, three
// otherwise). n passes of eight independent chains over four activation vectors at p and
// two 7-bit weight vectors at p + 64; returns the lane total of one pass's worth when
// n = 1, so that the host can check that the 32-bit form computes Σ a·w for signed a.

export function k_probe_dot(p: usize, n: i32, wide: i32): i32 {
  const x0 = v128.load(p);
  const x1 = v128.load(p, 16);
  const x2 = v128.load(p, 32);
  const x3 = v128.load(p, 48);
  const w0 = v128.load(p, 64);
  const w1 = v128.load(p, 80);
  if (ASC_FEATURE_RELAXED_SIMD && wide != 0) {
    let a0 = i32x4.splat(0);
    let a1 = i32x4.splat(0);
    let a2 = i32x4.splat(0);
    let a3 = i32x4.splat(0);
    let a4 = i32x4.splat(0);
    let a5 = i32x4.splat(0);
    let a6 = i32x4.splat(0);
    let a7 = i32x4.splat(0);
    for (let i = 0; i < n; i++) {
      a0 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x0, w0, a0);
      a1 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x1, w0, a1);
      a2 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x2, w0, a2);
      a3 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x3, w0, a3);
      a4 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x0, w1, a4);
      a5 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x1, w1, a5);
      a6 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x2, w1, a6);
      a7 = i32x4.relaxed_dot_i8x16_i7x16_add_s(x3, w1, a7);
    }
    return total(i32x4.add(i32x4.add(i32x4.add(a0, a1), i32x4.add(a2, a3)), i32x4.add(i32x4.add(a4, a5), i32x4.add(a6, a7))));
  }
  if (ASC_FEATURE_RELAXED_SIMD) {
    // i16 lanes wrap in long runs: only the timing matters then
    let a0 = i16x8.splat(0);
    let a1 = i16x8.splat(0);
    let a2 = i16x8.splat(0);
    let a3 = i16x8.splat(0);
    let a4 = i16x8.splat(0);
    let a5 = i16x8.splat(0);
    let a6 = i16x8.splat(0);
    let a7 = i16x8.splat(0);
    for (let i = 0; i < n; i++) {
      a0 = i16x8.add(a0, i16x8.relaxed_dot_i8x16_i7x16_s(x0, w0));
      a1 = i16x8.add(a1, i16x8.relaxed_dot_i8x16_i7x16_s(x1, w0));
      a2 = i16x8.add(a2, i16x8.relaxed_dot_i8x16_i7x16_s(x2, w0));
      a3 = i16x8.add(a3, i16x8.relaxed_dot_i8x16_i7x16_s(x3, w0));
      a4 = i16x8.add(a4, i16x8.relaxed_dot_i8x16_i7x16_s(x0, w1));
      a5 = i16x8.add(a5, i16x8.relaxed_dot_i8x16_i7x16_s(x1, w1));
      a6 = i16x8.add(a6, i16x8.relaxed_dot_i8x16_i7x16_s(x2, w1));
      a7 = i16x8.add(a7, i16x8.relaxed_dot_i8x16_i7x16_s(x3, w1));
    }
    const o = i16x8.splat(1);
    const s0 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(a0, o), i32x4.dot_i16x8_s(a1, o)), i32x4.add(i32x4.dot_i16x8_s(a2, o), i32x4.dot_i16x8_s(a3, o)));
    const s1 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(a4, o), i32x4.dot_i16x8_s(a5, o)), i32x4.add(i32x4.dot_i16x8_s(a6, o), i32x4.dot_i16x8_s(a7, o)));
    return total(i32x4.add(s0, s1));
  }
  return 0;
}

@inline function total(s: v128): i32 {
  return i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3);
}
