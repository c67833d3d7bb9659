// Number helpers for the kernels: f16/bf16 conversions by bit arithmetic, and exp, sin,
// cos, tanh written out here (AssemblyScript's own versions use lookup tables, which
// would become data segments, and kernel modules must have none: instantiating a module
// writes its data segments over the shared memory).

import {
  C_F32, F_EXP_MAX, F_EXP_MIN, F_HALF, F_INV120, F_INV24, F_INV5040, F_INV6, F_INV720, F_LN2_HI, F_LN2_LO, F_LOG2E, F_ONE,
  C_ABS, F_POW2, F_TANH_P0, F_TANH_P1, F_TANH_P2, F_TANH_P3, F_TANH_P4, F_TANH_SMALL, F_TWO, sel32,
} from './consts';

// ---- f16 / bf16 ---------------------------------------------------------------------

/** f16 bits to f32 (exact, subnormals, inf and NaN included; no float operation on a subnormal: consts.ts). */
@inline export function f16ToF32(h: u32): f32 {
  const s = (h & 0x8000) << 16;
  const em = h & 0x7fff;
  if (em >= 0x7c00) return reinterpret<f32>(s | 0x7f800000 | ((em & 0x3ff) << 13));
  // subnormal (or zero): the mantissa times 2^-24; normal: the exponent rebiased
  if (em < 0x400) return reinterpret<f32>(reinterpret<u32>(<f32>em * reinterpret<f32>(0x33800000)) | s);
  return reinterpret<f32>(((em << 13) + 0x38000000) | s);
}

/** f32 to f16 bits, round to nearest even (as F16C). */
export function f32ToF16(f: f32): u32 {
  const w = reinterpret<u32>(f);
  const sign = (w >> 16) & 0x8000;
  const abs = w & 0x7fffffff;
  if (abs >= 0x7f800000) return abs == 0x7f800000 ? sign | 0x7c00 : sign | 0x7e00 | ((abs >> 13) & 0x3ff);
  if (abs >= 0x477ff000) return sign | 0x7c00;
  if (abs < 0x38800000) {
    const e = abs >> 23;
    const shift = 126 - e;
    if (shift > 24) return sign;
    const mant = (abs & 0x7fffff) | 0x800000;
    let q = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const half: u32 = 1 << (shift - 1);
    if (rem > half || (rem == half && (q & 1) != 0)) q++;
    return sign | q;
  }
  let h = (abs - 0x38000000) >> 13;
  const rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1) != 0)) h++;
  return sign | h;
}

@inline export function bf16ToF32(h: u32): f32 {
  return reinterpret<f32>(h << 16);
}

/** f32 to bf16 bits as ggml: NaN made quiet, else round to nearest even. */
@inline export function f32ToBF16(f: f32): u32 {
  const w = reinterpret<u32>(f);
  if ((w & 0x7fffffff) > 0x7f800000) return ((w >> 16) | 64) & 0xffff;
  return ((w + 0x7fff + ((w >> 16) & 1)) >> 16) & 0xffff;
}

// ---- exp ----------------------------------------------------------------------------

const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;
const LOG2E: f64 = 1.4426950408889634;

/** e^x in double precision (a few ulp). */
export function exp64(x: f64): f64 {
  if (x != x) return x;
  if (x > 709.782712893384) return Infinity;
  if (x < -745.1332191019412) return 0;
  const n = Math.floor(x * LOG2E + 0.5);
  const r = x - n * LN2_HI - n * LN2_LO;
  // Taylor series to r^13 on |r| <= 0.35
  let p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  let k = <i64>n;
  if (k < -1020) {
    p *= reinterpret<f64>(<i64>(1023 - 60) << 52);
    k += 60;
  } else if (k > 1023) {
    p *= 2.0;
    k -= 1;
  }
  return p * reinterpret<f64>((k + 1023) << 52);
}

@inline export function expf(x: f32): f32 {
  return <f32>exp64(<f64>x);
}

/**
 * 2^n for four integral f32 n in [-126, 127]: n + 127 lands in the low mantissa bits of
 * n + 1.5·2^23 + 127, and shifting left by 23 leaves just those bits as the exponent (two
 * instructions; the saturating conversion is six on x64).
 */
@inline export function pow2(n: v128): v128 {
  return i32x4.shl(f32x4.add(n, C_F32(F_POW2)), 23);
}

/** e^x for four f32 lanes (relative error about 2e-7); exactly 0 below -87.3. */
@inline export function expf4(x: v128): v128 {
  const tiny = f32x4.lt(x, C_F32(F_EXP_MIN));
  // pmin/pmax (one instruction each, where min/max are seven on x64) clamp the same: the
  // bounds are not zero and a NaN x stays NaN either way
  const xc = f32x4.pmax(f32x4.pmin(x, C_F32(F_EXP_MAX)), C_F32(F_EXP_MIN));
  const n = f32x4.nearest(f32x4.mul(xc, C_F32(F_LOG2E)));
  let r = f32x4.sub(xc, f32x4.mul(n, C_F32(F_LN2_HI)));
  r = f32x4.sub(r, f32x4.mul(n, C_F32(F_LN2_LO)));
  let p = C_F32(F_INV5040);
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_INV720));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_INV120));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_INV24));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_INV6));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_HALF));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_ONE));
  p = f32x4.add(f32x4.mul(p, r), C_F32(F_ONE));
  const y = f32x4.mul(p, pow2(n));
  return v128.andnot(y, tiny);
}

/**
 * tanh of four f32 (Cephes' tanhf: an odd polynomial below 0.625, 1 - 2/(e^2|x| + 1)
 * above; a few ulp, as tanhf).
 */
@inline export function tanhf4(x: v128): v128 {
  const a = f32x4.abs(x);
  const s = f32x4.mul(x, x);
  let p = C_F32(F_TANH_P0);
  p = f32x4.add(f32x4.mul(p, s), C_F32(F_TANH_P1));
  p = f32x4.add(f32x4.mul(p, s), C_F32(F_TANH_P2));
  p = f32x4.add(f32x4.mul(p, s), C_F32(F_TANH_P3));
  p = f32x4.add(f32x4.mul(p, s), C_F32(F_TANH_P4));
  const small = f32x4.add(f32x4.mul(f32x4.mul(p, s), x), x);
  // above ~44, e^2a is expf4's clamped maximum: 2/(e + 1) vanishes, tanh = 1
  const one = C_F32(F_ONE);
  const e = expf4(f32x4.add(a, a));
  const big = f32x4.sub(one, f32x4.div(C_F32(F_TWO), f32x4.add(e, one)));
  const signed = v128.or(big, v128.andnot(x, C_ABS()));
  return sel32(small, signed, f32x4.lt(a, C_F32(F_TANH_SMALL)));
}

// ---- sin, cos, tanh (double precision) ------------------------------------------------

const PIO2_1: f64 = 1.57079632673412561417e0;
const PIO2_2: f64 = 6.07710050630396597660e-11;
const PIO2_3: f64 = 2.02226624871116645580e-21;
const PIO2_3T: f64 = 8.47842766036889956997e-32;
const TWO_OVER_PI: f64 = 6.36619772367581382433e-1;

/** Set by sincos64. */
export let sinOut: f64 = 0;
export let cosOut: f64 = 0;

@inline function sinPoly(r: f64): f64 {
  const z = r * r;
  let p = -1.0 / 1307674368000.0;
  p = p * z + 1.0 / 6227020800.0;
  p = p * z - 1.0 / 39916800.0;
  p = p * z + 1.0 / 362880.0;
  p = p * z - 1.0 / 5040.0;
  p = p * z + 1.0 / 120.0;
  p = p * z - 1.0 / 6.0;
  return r + r * z * p;
}

@inline function cosPoly(r: f64): f64 {
  const z = r * r;
  let p = 1.0 / 20922789888000.0;
  p = p * z - 1.0 / 87178291200.0;
  p = p * z + 1.0 / 479001600.0;
  p = p * z - 1.0 / 3628800.0;
  p = p * z + 1.0 / 40320.0;
  p = p * z - 1.0 / 720.0;
  p = p * z + 1.0 / 24.0;
  p = p * z - 0.5;
  return 1.0 + z * p;
}

/** sin and cos of x (|x| up to about 1e9) into sinOut, cosOut. */
export function sincos64(x: f64): void {
  const k = Math.floor(x * TWO_OVER_PI + 0.5);
  const r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3 - k * PIO2_3T;
  const s = sinPoly(r);
  const c = cosPoly(r);
  const q = (<i64>k) & 3;
  if (q == 0) {
    sinOut = s;
    cosOut = c;
  } else if (q == 1) {
    sinOut = c;
    cosOut = -s;
  } else if (q == 2) {
    sinOut = -s;
    cosOut = -c;
  } else {
    sinOut = -c;
    cosOut = s;
  }
}

export function tanh64(x: f64): f64 {
  const a = Math.abs(x);
  let t: f64;
  if (a < 0.5) {
    // 1 - 2/(e^2a + 1) cancels for small a; use e^2a - 1 via the series-accurate expm1 form
    const e = exp64(2 * a);
    t = (e - 1) / (e + 1);
    if (a < 1e-5) t = a - (a * a * a) / 3;
  } else if (a > 20) {
    t = 1;
  } else {
    t = 1 - 2 / (exp64(2 * a) + 1);
  }
  return x < 0 ? -t : t;
}
