// Dot products of float rows (f32 activations against F32, F16 and BF16 weights).

import { f16x4At } from './consts';
import { f16ToF32 } from './math';

/** (v0 + v2) + (v1 + v3): the order hsum4 uses, so one column and four agree exactly. */
@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 2) + (f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 3));
}

/** The 16-bit dot of signed bytes a with 7-bit unsigned bytes w (relaxed build). */
@inline export function rdot(a: v128, w: v128): v128 {
  return i16x8.relaxed_dot_i8x16_i7x16_s(a, w);
}

/** a + x*y (fused where the relaxed build allows). */
@inline export function madd(x: v128, y: v128, a: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(x, y, a);
  return f32x4.add(a, f32x4.mul(x, y));
}

export function dotF32(x: usize, y: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  let i = 0;
  for (; i + 16 <= n; i += 16) {
    const o = <usize>i << 2;
    a0 = madd(v128.load(x + o), v128.load(y + o), a0);
    a1 = madd(v128.load(x + o, 16), v128.load(y + o, 16), a1);
    a2 = madd(v128.load(x + o, 32), v128.load(y + o, 32), a2);
    a3 = madd(v128.load(x + o, 48), v128.load(y + o, 48), a3);
  }
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    a0 = madd(v128.load(x + o), v128.load(y + o), a0);
  }
  let s = hsum(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)));
  for (; i < n; i++) s += load<f32>(x + (<usize>i << 2)) * load<f32>(y + (<usize>i << 2));
  return s;
}

/** F16 weights at w times f32 at y. */
export function dotF16(w: usize, y: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = <usize>i << 2;
    a0 = madd(f16x4At(w + (<usize>i << 1)), v128.load(y + o), a0);
    a1 = madd(f16x4At(w + (<usize>i << 1) + 8), v128.load(y + o, 16), a1);
  }
  let s = hsum(f32x4.add(a0, a1));
  for (; i < n; i++) s += f16ToF32(load<u16>(w + (<usize>i << 1))) * load<f32>(y + (<usize>i << 2));
  return s;
}

/** BF16 weights at w times f32 at y. */
export function dotBF16(w: usize, y: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = <usize>i << 2;
    a0 = madd(i32x4.shl(v128.load16x4_u(w + (<usize>i << 1)), 16), v128.load(y + o), a0);
    a1 = madd(i32x4.shl(v128.load16x4_u(w + (<usize>i << 1), 8), 16), v128.load(y + o, 16), a1);
  }
  let s = hsum(f32x4.add(a0, a1));
  for (; i < n; i++) s += reinterpret<f32>(<u32>load<u16>(w + (<usize>i << 1)) << 16) * load<f32>(y + (<usize>i << 2));
  return s;
}

/** Four f32 weights at p: T = f32 (F32 weights) or u16 (F16, converted). */
@inline function loadW<T>(p: usize): v128 {
  if (sizeof<T>() == 2) return f16x4At(p);
  return v128.load(p);
}

/**
 * Four weight rows (F32 or F16, at p with row stride rs bytes) against two f32 activation
 * rows x0, x1 (K a multiple of 4); results (4 rows) stored at o0 and o1.
 */
export function tileFloat4x2<T>(p: usize, rs: usize, x0: usize, x1: usize, K: i32, o0: usize, o1: usize): void {
  let a00 = f32x4.splat(0);
  let a01 = f32x4.splat(0);
  let a10 = f32x4.splat(0);
  let a11 = f32x4.splat(0);
  let a20 = f32x4.splat(0);
  let a21 = f32x4.splat(0);
  let a30 = f32x4.splat(0);
  let a31 = f32x4.splat(0);
  const es: usize = sizeof<T>();
  for (let k = 0; k < K; k += 4) {
    const wp = p + <usize>k * es;
    const y0 = v128.load(x0 + (<usize>k << 2));
    const y1 = v128.load(x1 + (<usize>k << 2));
    const w0 = loadW<T>(wp);
    a00 = madd(w0, y0, a00);
    a01 = madd(w0, y1, a01);
    const w1 = loadW<T>(wp + rs);
    a10 = madd(w1, y0, a10);
    a11 = madd(w1, y1, a11);
    const w2 = loadW<T>(wp + 2 * rs);
    a20 = madd(w2, y0, a20);
    a21 = madd(w2, y1, a21);
    const w3 = loadW<T>(wp + 3 * rs);
    a30 = madd(w3, y0, a30);
    a31 = madd(w3, y1, a31);
  }
  v128.store(o0, hsum4f(a00, a10, a20, a30));
  v128.store(o1, hsum4f(a01, a11, a21, a31));
}

/**
 * Four weight rows against one activation row, with the arithmetic of tileFloat4x2 (so a
 * column gives the same result whatever the batch); results (4 rows) stored at o0.
 */
export function tileFloat4x1<T>(p: usize, rs: usize, x0: usize, K: i32, o0: usize): void {
  let a00 = f32x4.splat(0);
  let a10 = f32x4.splat(0);
  let a20 = f32x4.splat(0);
  let a30 = f32x4.splat(0);
  const es: usize = sizeof<T>();
  for (let k = 0; k < K; k += 4) {
    const wp = p + <usize>k * es;
    const y0 = v128.load(x0 + (<usize>k << 2));
    a00 = madd(loadW<T>(wp), y0, a00);
    a10 = madd(loadW<T>(wp + rs), y0, a10);
    a20 = madd(loadW<T>(wp + 2 * rs), y0, a20);
    a30 = madd(loadW<T>(wp + 3 * rs), y0, a30);
  }
  v128.store(o0, hsum4f(a00, a10, a20, a30));
}

/** [Σc0, Σc1, Σc2, Σc3] of four f32x4. */
@inline function hsum4f(c0: v128, c1: v128, c2: v128, c3: v128): v128 {
  const t0 = f32x4.add(v128.shuffle<f32>(c0, c1, 0, 4, 1, 5), v128.shuffle<f32>(c0, c1, 2, 6, 3, 7));
  const t1 = f32x4.add(v128.shuffle<f32>(c2, c3, 0, 4, 1, 5), v128.shuffle<f32>(c2, c3, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(t0, t1, 0, 1, 4, 5), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
}
