// Vector constants, read from a fixed place in memory rather than written as v128.const:
// V8 rematerializes constants inside loops (three instructions each, every iteration),
// while a load folds into the instruction using it. The host writes this table into every
// arena when it creates it (src/backends/cpu/arena.ts, CONSTANTS; keep the two in step).

const BASE: usize = 1024;

/**
 * Engine flags the host writes at this address of every arena (src/backends/cpu/arena.ts,
 * FLAGS_AT): bit 0 = accumulate 8-bit dots straight into 32-bit lanes (dotAdd).
 */
const FLAGS: usize = 512;

/**
 * Whether the relaxed build's Q4_0 kernels use i32x4.relaxed_dot_i8x16_i7x16_add_s rather
 * than the 16-bit dot and an add: the same exact integer sums, so the same results; the
 * host sets it where the engine runs the former faster (one VNNI instruction).
 */
@inline export function dotAdd(): bool {
  return ASC_FEATURE_RELAXED_SIMD && (load<u32>(FLAGS) & 1) != 0;
}

/** 0x0f in every byte. */
@inline export function C_M4(): v128 {
  return v128.load(BASE);
}
/** 0x30 in every byte. */
@inline export function C_M30(): v128 {
  return v128.load(BASE, 16);
}
/** Q5_0: the byte of qh holding the high bit of elements 0-15 (lanes 0-7: 0, 8-15: 1). */
@inline export function C_QH_LO(): v128 {
  return v128.load(BASE, 400);
}
/** Q5_0: the same for elements 16-31 (bytes 2 and 3). */
@inline export function C_QH_HI(): v128 {
  return v128.load(BASE, 416);
}
/** 1 << (lane & 7) in every byte. */
@inline export function C_BIT8(): v128 {
  return v128.load(BASE, 432);
}
/** 0x10 in every byte. */
@inline export function C_M10(): v128 {
  return v128.load(BASE, 448);
}
/** 0x000f in every i16 lane. */
@inline export function C_W4(): v128 {
  return v128.load(BASE, 32);
}
/** 1 in every i16 lane. */
@inline export function C_ONES16(): v128 {
  return v128.load(BASE, 48);
}
/** 0x7fff in every i32 lane. */
@inline export function C_7FFF(): v128 {
  return v128.load(BASE, 64);
}
/** 0x7bff in every i32 lane. */
@inline export function C_7BFF(): v128 {
  return v128.load(BASE, 96);
}
/** 0x00ff in every i16 lane. */
@inline export function C_W8(): v128 {
  return v128.load(BASE, 128);
}
/** Byte indices selecting i16 lane j (0..7) into every lane (for i8x16.swizzle). */
@inline export function C_LANE16(j: i32): v128 {
  return v128.load(BASE + 144 + (<usize>j << 4));
}

/** 0x8fffffff in every i32 lane. */
@inline export function C_8FFF(): v128 {
  return v128.load(BASE, 464);
}

// f16 to f32. x64 takes a microcode assist (around a hundred cycles) for every subnormal
// operand of a float multiply, and f16 subnormals are common where they are scales: the
// super-block scales of Q6_K and Q4_K tensors are often below 2^-14 (a multiply by 2^112
// made Q6_K products a third slower and Q4_0 ones three times slower on such files). So
// no float operation here sees a subnormal: normal values are rebiased by an integer add,
// subnormals are their integer mantissa times 2^-24.

/**
 * n (a multiple of 4) f16 values at h to f32 at x, exactly: eight at a time with one
 * vector test of their exponent fields (the attention kernels widen every K and V row of
 * the cache, so this is their inner loop at long contexts), else four through f16x4At.
 */
@inline export function widenF16Row(h: usize, x: usize, n: i32): void {
  let i = 0;
  for (; i + 8 <= n; i += 8, h += 16, x += 32) {
    const v = v128.load(h);
    const special = special8(v);
    v128.store(x, widen8Lo(v, h, special));
    v128.store(x, widen8Hi(v, h, special), 16);
  }
  if (i < n) v128.store(x, f16x4At(h));
}

/** Whether the eight f16 in v hold a zero, subnormal, infinity or NaN (one vector test). */
@inline export function special8(v: v128): bool {
  const e = v128.and(v, C_7C00_16());
  return v128.any_true(v128.or(i16x8.eq(e, i16x8.splat(0)), i16x8.eq(e, C_7C00_16())));
}

/**
 * Halves 0..3 of the eight f16 in v (loaded from h) as f32, exactly: rebiased when none
 * of the eight is special (special8), else through f16x4.
 */
@inline export function widen8Lo(v: v128, h: usize, special: bool): v128 {
  return special ? f16x4(v128.load16x4_u(h)) : normalF16x4(i32x4.extend_low_i16x8_s(v));
}

/** Halves 4..7 (see widen8Lo). */
@inline export function widen8Hi(v: v128, h: usize, special: bool): v128 {
  return special ? f16x4(v128.load16x4_u(h, 8)) : normalF16x4(i32x4.extend_high_i16x8_s(v));
}

/**
 * Four normal f16, sign-extended to i32 lanes, as f32: shifted into place, bits 28-30
 * (copies of the sign) cleared, the exponent rebiased by an integer add.
 */
@inline function normalF16x4(s: v128): v128 {
  return i32x4.add(v128.and(i32x4.shl(s, 13), C_8FFF()), C_BIAS112());
}

/** 0x7c00 (f16's exponent field) in every i16 lane. */
@inline export function C_7C00_16(): v128 {
  return v128.load(BASE, 480);
}

/**
 * The four f16 values at h to f32, exactly (as f16x4). Four normal values (the common
 * case, told by one scalar test of their exponent fields) are sign-extended, shifted, bits
 * 28-30 (copies of the sign) cleared and rebiased by an integer add; four holding a zero,
 * a subnormal, an infinity or a NaN go through f16x4.
 */
@inline export function f16x4At(h: usize): v128 {
  const x = load<u64>(h);
  // an exponent field of 0 or 31 becomes 0 here, any other one is at least 0x0800
  const y = ((x & 0x7c007c007c007c00) + 0x0400040004000400) & 0x7800780078007800;
  if (((y - 0x0001000100010001) & ~y & 0x8000800080008000) != 0) return f16x4(v128.load16x4_u(h));
  return normalF16x4(i32x4.extend_low_i16x8_s(v128.load64_zero(h)));
}

/** f16 (low 16 bits of each i32 lane) to f32, exactly, with no float operation on a subnormal. */
@inline export function f16x4(h: v128): v128 {
  const em = v128.and(h, C_7FFF());
  // normal, infinite, NaN: the exponent rebiased (31, infinity and NaN, lands on 255: 112 more)
  const n = i32x4.add(i32x4.add(i32x4.shl(em, 13), C_BIAS112()), v128.and(i32x4.gt_s(em, C_7BFF()), C_BIAS112()));
  // zero, subnormal: the mantissa (below 2^10, converted exactly) times 2^-24
  const s = f32x4.mul(f32x4.convert_i32x4_s(em), C_2M24());
  return v128.or(sel32(s, n, i32x4.lt_s(em, C_0400())), i32x4.shl(v128.xor(h, em), 16));
}

/** 0x7fffffff in every i32 lane. */
@inline export function C_ABS(): v128 {
  return v128.load(BASE, 272);
}
/** 0x00000fff in every i32 lane. */
@inline export function C_FFF(): v128 {
  return v128.load(BASE, 288);
}
/** 1 in every i32 lane. */
@inline export function C_ONE32(): v128 {
  return v128.load(BASE, 304);
}
/** 0xffffe000 in every i32 lane. */
@inline export function C_TRUNC13(): v128 {
  return v128.load(BASE, 320);
}
/** 0x38800000 (2^-14, the smallest normal f16) in every i32 lane. */
@inline export function C_MINNORM16(): v128 {
  return v128.load(BASE, 336);
}
/** 0.75 (f32) in every lane. */
@inline export function C_075(): v128 {
  return v128.load(BASE, 352);
}
/** 0x477ff000 (65520: rounds to f16 infinity) in every i32 lane. */
@inline export function C_OVF16(): v128 {
  return v128.load(BASE, 368);
}
/** 0x7f800000 (f32 infinity) in every i32 lane. */
@inline export function C_INF(): v128 {
  return v128.load(BASE, 384);
}

// f32 constants, every lane (src/backends/cpu/arena.ts, F32_CONSTANTS, the same order)
export const F_EXP_MIN: i32 = 0; // -87.3
export const F_EXP_MAX: i32 = 1; // 88.3
export const F_LOG2E: i32 = 2;
export const F_LN2_HI: i32 = 3; // expf4's Cody-Waite split of ln 2
export const F_LN2_LO: i32 = 4;
export const F_INV5040: i32 = 5; // expf4's Taylor coefficients 1/7! .. 1/2!
export const F_INV720: i32 = 6;
export const F_INV120: i32 = 7;
export const F_INV24: i32 = 8;
export const F_INV6: i32 = 9;
export const F_HALF: i32 = 10;
export const F_ONE: i32 = 11;
export const F_POW2: i32 = 12; // 1.5·2^23 + 127 (pow2)
export const F_CEPHES_LN2_HI: i32 = 13; // expNeg4's split of ln 2 and Cephes' expf coefficients
export const F_CEPHES_LN2_LO: i32 = 14;
export const F_CEPHES_P0: i32 = 15;
export const F_CEPHES_P1: i32 = 16;
export const F_CEPHES_P2: i32 = 17;
export const F_CEPHES_P3: i32 = 18;
export const F_CEPHES_P4: i32 = 19;
export const F_CEPHES_P5: i32 = 20;
export const F_GELU_C: i32 = 21; // -2·sqrt(2/π)
export const F_GELU_A: i32 = 22; // 0.044715
export const F_TEN: i32 = 23;
export const F_MINUS_TEN: i32 = 24;
export const F_TWO: i32 = 25;
export const F_TANH_P0: i32 = 26; // tanhf4's odd polynomial (Cephes' tanhf), below 0.625
export const F_TANH_P1: i32 = 27;
export const F_TANH_P2: i32 = 28;
export const F_TANH_P3: i32 = 29;
export const F_TANH_P4: i32 = 30;
export const F_TANH_SMALL: i32 = 31; // 0.625

/** MXFP4's codebook (E2M1 values doubled, -12..12) plus 12, by 4-bit code: 0..24. */
@inline export function C_MXFP4_BIASED(): v128 {
  return v128.load(BASE, 1008);
}
/** MXFP4's codebook as it is (signed bytes). */
@inline export function C_MXFP4(): v128 {
  return v128.load(BASE, 1024);
}

/** 112 << 23 in every i32 lane: f16's exponent rebiased to f32's. */
@inline export function C_BIAS112(): v128 {
  return v128.load(BASE, 1040);
}
/** 2^-24 (f32) in every lane: f16's subnormal step. */
@inline export function C_2M24(): v128 {
  return v128.load(BASE, 1056);
}
/** 0x400 in every i32 lane: the smallest normal f16. */
@inline export function C_0400(): v128 {
  return v128.load(BASE, 1072);
}
/** 0x3f in every byte. */
@inline export function C_M3F(): v128 {
  return v128.load(BASE, 1088);
}
/** 3 in every byte (TQ2_0's 2-bit fields). */
@inline export function C_M03(): v128 {
  return v128.load(BASE, 1104);
}
/** 3 in every i16 lane (TQ1_0's trits). */
@inline export function C_W3(): v128 {
  return v128.load(BASE, 1120);
}
/** 2^13, 2^10, 2^7, 2^4, twice, in the i16 lanes: IQ1_M's 3-bit scale k of a word to the top (iquant.ts). */
@inline export function C_IQ1M_SHIFT(): v128 {
  return v128.load(BASE, 1136);
}
/** 8193 = 2^13 + 1 (f32) in every lane: Veltkamp's split at f16's precision. */
@inline export function C_8193(): v128 {
  return v128.load(BASE, 1152);
}

/** f32 constant F_* in every lane (a load: see the top of this file). */
@inline export function C_F32(i: i32): v128 {
  return v128.load(BASE + 496 + (<usize>i << 4));
}

/**
 * Lanes of a where the comparison mask m is set, else of b: the same lanes as bitselect
 * (every 32-bit lane of m is all ones or all zeros), one blend on x64 with relaxed SIMD
 * where bitselect is three instructions.
 */
@inline export function sel32(a: v128, b: v128, m: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i32x4.relaxed_laneselect(a, b, m);
  return v128.bitselect(a, b, m);
}

/** Four f32 rounded to f16 precision and back (round to nearest even, as F16C). */
@inline export function roundF16x4(x: v128): v128 {
  const a = v128.and(x, C_ABS());
  const sign = v128.xor(x, a);
  // normal range: drop 13 mantissa bits, ties to even (a carry bumps the exponent)
  let r = v128.and(i32x4.add(i32x4.add(a, C_FFF()), v128.and(i32x4.shr_u(a, 13), C_ONE32())), C_TRUNC13());
  // below 2^-14: multiples of 2^-24 (0.75 has that ulp)
  const sub = f32x4.sub(f32x4.add(a, C_075()), C_075());
  r = sel32(sub, r, i32x4.lt_s(a, C_MINNORM16()));
  r = sel32(C_INF(), r, i32x4.ge_s(a, C_OVF16()));
  r = sel32(a, r, i32x4.gt_s(a, C_INF()));
  return v128.or(r, sign);
}
