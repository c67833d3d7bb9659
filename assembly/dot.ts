// Dot products of float rows (f32 activations against F32, F16 and BF16 weights).

import { f16ToF32, f16x4ToF32 } from './math';

@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
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
    a0 = madd(f16x4ToF32(v128.load16x4_u(w + (<usize>i << 1))), v128.load(y + o), a0);
    a1 = madd(f16x4ToF32(v128.load16x4_u(w + (<usize>i << 1), 8)), v128.load(y + o, 16), a1);
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
