// Integer dot products of quantized weights with quantized activations.
//
// Activation rows (written by k_mm_prep) hold, for K elements: the quants at +0 (K int8
// in the relaxed build; 2K int16 in the strict one, each 16 as 8 even-indexed then 8
// odd-indexed elements), the f32 scales at +2K (one per 32 elements, or per 256 for the
// K-quants), and the sums of the quants at +2K+K/8 (int32 per 32, or int16 per 16).
//
// Relaxed build: i16x8.relaxed_dot_i8x16_i7x16_s with the weight as the 7-bit operand
// (unsigned nibbles; |w| with the sign moved onto the activation for Q8_0), offsets
// corrected with the activation sums. Strict build: weights split into int16 lanes and
// i32x4.dot_i16x8_s against the permuted int16 activations.

import { f16ToF32, f16x4ToF32 } from './math';
import { k4Min, k4Scale } from './dequant';
import { hsum } from './dot';

@inline function rdot(a: v128, w: v128): v128 {
  return i16x8.relaxed_dot_i8x16_i7x16_s(a, w);
}

/** Sum of a 32-element Q4_0 block (16 bytes at w, unsigned nibbles) with activations. */
@inline function q4Block(w: v128, act: usize): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const p = i16x8.add(rdot(v128.load(act), v128.and(w, i8x16.splat(0x0f))), rdot(v128.load(act, 16), i8x16.shr_u(w, 4)));
    return i32x4.extadd_pairwise_i16x8_s(p);
  }
  const m = i16x8.splat(0x0f);
  const e0 = v128.and(w, m);
  const e1 = v128.and(i16x8.shr_u(w, 8), m);
  const e2 = v128.and(i16x8.shr_u(w, 4), m);
  const e3 = i16x8.shr_u(w, 12);
  return i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(e0, v128.load(act)), i32x4.dot_i16x8_s(e1, v128.load(act, 16))),
    i32x4.add(i32x4.dot_i16x8_s(e2, v128.load(act, 32)), i32x4.dot_i16x8_s(e3, v128.load(act, 48))),
  );
}

/** Sum of a 32-element Q8_0 block (int8 at w) with activations. */
@inline function q8Block(w: usize, act: usize): v128 {
  const w0 = v128.load(w);
  const w1 = v128.load(w, 16);
  if (ASC_FEATURE_RELAXED_SIMD) {
    const s0 = i8x16.lt_s(w0, i8x16.splat(0));
    const s1 = i8x16.lt_s(w1, i8x16.splat(0));
    const a0 = i8x16.sub(v128.xor(v128.load(act), s0), s0);
    const a1 = i8x16.sub(v128.xor(v128.load(act, 16), s1), s1);
    return i32x4.add(
      i32x4.extadd_pairwise_i16x8_s(rdot(a0, i8x16.abs(w0))),
      i32x4.extadd_pairwise_i16x8_s(rdot(a1, i8x16.abs(w1))),
    );
  }
  const e0 = i16x8.shr_s(i16x8.shl(w0, 8), 8);
  const e1 = i16x8.shr_s(w0, 8);
  const e2 = i16x8.shr_s(i16x8.shl(w1, 8), 8);
  const e3 = i16x8.shr_s(w1, 8);
  return i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(e0, v128.load(act)), i32x4.dot_i16x8_s(e1, v128.load(act, 16))),
    i32x4.add(i32x4.dot_i16x8_s(e2, v128.load(act, 32)), i32x4.dot_i16x8_s(e3, v128.load(act, 48))),
  );
}

/** Bytes of activation quants per element: 1 (relaxed) or 2 (strict). */
export const QB: usize = ASC_FEATURE_RELAXED_SIMD ? 1 : 2;

/** One Q4_0 row (scales at sc, quants at qs, block stride) against an activation row. */
export function dotQ4_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let acc = f32x4.splat(0);
  let corr: f32 = 0;
  for (let b = 0; b < nb; b++) {
    const s = f16ToF32(load<u16>(sc)) * load<f32>(ad + (<usize>b << 2));
    const i = q4Block(v128.load(qs), act + <usize>b * 32 * QB);
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
    corr += <f32>load<i32>(as + (<usize>b << 2)) * s;
    sc += stride;
    qs += stride;
  }
  return hsum(acc) - 8 * corr;
}

export function dotQ8_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const s = f16ToF32(load<u16>(sc)) * load<f32>(ad + (<usize>b << 2));
    const i = q8Block(qs, act + <usize>b * 32 * QB);
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
    sc += stride;
    qs += stride;
  }
  return hsum(acc);
}

/** [Σs0, Σs1, Σs2, Σs3]: the lane sums of four i32x4. */
@inline function reduce4(s0: v128, s1: v128, s2: v128, s3: v128): v128 {
  const t0 = i32x4.add(v128.shuffle<i32>(s0, s1, 0, 4, 1, 5), v128.shuffle<i32>(s0, s1, 2, 6, 3, 7));
  const t1 = i32x4.add(v128.shuffle<i32>(s2, s3, 0, 4, 1, 5), v128.shuffle<i32>(s2, s3, 2, 6, 3, 7));
  return i32x4.add(v128.shuffle<i32>(t0, t1, 0, 1, 4, 5), v128.shuffle<i32>(t0, t1, 2, 3, 6, 7));
}

/**
 * Four interleaved Q4_0 rows (chunks of 72 bytes per block: 4 f16 scales, then 4 x 16
 * quant bytes) against one activation row: the four dot products.
 */
export function groupQ4_0(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const a = act + <usize>b * 32 * QB;
    const s0 = q4Block(v128.load(chunk, 8), a);
    const s1 = q4Block(v128.load(chunk, 24), a);
    const s2 = q4Block(v128.load(chunk, 40), a);
    const s3 = q4Block(v128.load(chunk, 56), a);
    const r = i32x4.sub(reduce4(s0, s1, s2, s3), i32x4.splat(load<i32>(as + (<usize>b << 2)) << 3));
    const dw = f32x4.mul(f16x4ToF32(v128.load16x4_u(chunk)), f32x4.splat(load<f32>(ad + (<usize>b << 2))));
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(r), dw));
    chunk += 72;
  }
  return acc;
}

/** Four interleaved Q8_0 rows (136-byte chunks: 4 scales, 4 x 32 quants). */
export function groupQ8_0(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const a = act + <usize>b * 32 * QB;
    const s0 = q8Block(chunk + 8, a);
    const s1 = q8Block(chunk + 40, a);
    const s2 = q8Block(chunk + 72, a);
    const s3 = q8Block(chunk + 104, a);
    const r = reduce4(s0, s1, s2, s3);
    const dw = f32x4.mul(f16x4ToF32(v128.load16x4_u(chunk)), f32x4.splat(load<f32>(ad + (<usize>b << 2))));
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(r), dw));
    chunk += 136;
  }
  return acc;
}

/** One Q4_K row (nsb super-blocks of 144 bytes) against a Q8_K-style activation row. */
export function dotQ4_K(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const abs = ad + (<usize>K >> 3);
  const m4 = i8x16.splat(0x0f);
  let accf = f32x4.splat(0);
  let mins: f32 = 0;
  for (let sb = 0; sb < nsb; sb++, w += 144) {
    const da = load<f32>(ad + (<usize>sb << 2));
    let acc = i32x4.splat(0);
    for (let g = 0; g < 4; g++) {
      const q0 = v128.load(w + 16 + <usize>g * 32);
      const q1 = v128.load(w + 16 + <usize>g * 32, 16);
      const scA = i16x8.splat(<i16>k4Scale(w + 4, 2 * g));
      const scB = i16x8.splat(<i16>k4Scale(w + 4, 2 * g + 1));
      if (ASC_FEATURE_RELAXED_SIMD) {
        const a = act + <usize>sb * 256 + <usize>g * 64;
        const lo = i16x8.add(rdot(v128.load(a), v128.and(q0, m4)), rdot(v128.load(a, 16), v128.and(q1, m4)));
        const hi = i16x8.add(rdot(v128.load(a, 32), i8x16.shr_u(q0, 4)), rdot(v128.load(a, 48), i8x16.shr_u(q1, 4)));
        acc = i32x4.add(acc, i32x4.add(i32x4.dot_i16x8_s(lo, scA), i32x4.dot_i16x8_s(hi, scB)));
      } else {
        const a = act + (<usize>sb * 256 + <usize>g * 64) * 2;
        const m = i16x8.splat(0x0f);
        const lo = i32x4.add(
          i32x4.add(i32x4.dot_i16x8_s(v128.and(q0, m), v128.load(a)), i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q0, 8), m), v128.load(a, 16))),
          i32x4.add(i32x4.dot_i16x8_s(v128.and(q1, m), v128.load(a, 32)), i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q1, 8), m), v128.load(a, 48))),
        );
        const hi = i32x4.add(
          i32x4.add(i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q0, 4), m), v128.load(a, 64)), i32x4.dot_i16x8_s(i16x8.shr_u(q0, 12), v128.load(a, 80))),
          i32x4.add(i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q1, 4), m), v128.load(a, 96)), i32x4.dot_i16x8_s(i16x8.shr_u(q1, 12), v128.load(a, 112))),
        );
        acc = i32x4.add(acc, i32x4.add(i32x4.mul(lo, i32x4.splat(k4Scale(w + 4, 2 * g))), i32x4.mul(hi, i32x4.splat(k4Scale(w + 4, 2 * g + 1)))));
      }
    }
    const d = f16ToF32(load<u16>(w)) * da;
    accf = f32x4.add(accf, f32x4.mul(f32x4.convert_i32x4_s(acc), f32x4.splat(d)));
    let ms = 0;
    const bs = abs + (<usize>sb << 5);
    for (let j = 0; j < 8; j++) {
      ms += k4Min(w + 4, j) * (<i32>load<i16>(bs + (<usize>j << 2)) + <i32>load<i16>(bs + (<usize>j << 2), 2));
    }
    mins += f16ToF32(load<u16>(w, 2)) * da * <f32>ms;
  }
  return hsum(accf) - mins;
}

/** The 16 six-bit quants (0..63) of elements 16s..16s+15 of one Q6_K half. */
@inline function q6Vec(L: v128, H: v128, hiNibble: bool, hshift: i32): v128 {
  const m4 = i8x16.splat(0x0f);
  const m30 = i8x16.splat(0x30);
  const lo = hiNibble ? v128.and(i16x8.shr_u(L, 4), m4) : v128.and(L, m4);
  let h: v128;
  if (hshift == 4) h = i16x8.shl(H, 4);
  else if (hshift == 2) h = i16x8.shl(H, 2);
  else if (hshift == 0) h = H;
  else h = i16x8.shr_u(H, 2);
  return v128.or(lo, v128.and(h, m30));
}

/** Scaled dot of one 16-element Q6_K sub-block (quants q, 0..63) with activations at a. */
@inline function q6Sub(q: v128, a: usize, sc: i32): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i32x4.dot_i16x8_s(rdot(v128.load(a), q), i16x8.splat(<i16>sc));
  const ev = v128.and(q, i16x8.splat(0xff));
  const od = i16x8.shr_u(q, 8);
  const s = i32x4.add(i32x4.dot_i16x8_s(ev, v128.load(a)), i32x4.dot_i16x8_s(od, v128.load(a, 16)));
  return i32x4.mul(s, i32x4.splat(sc));
}

/** One Q6_K row (nsb super-blocks of 210 bytes) against a Q8_K-style activation row. */
export function dotQ6_K(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const abs = ad + (<usize>K >> 3);
  let accf = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, w += 210) {
    let acc = i32x4.splat(0);
    for (let n = 0; n < 2; n++) {
      const ql = w + <usize>n * 64;
      const qh = w + 128 + <usize>n * 32;
      const sc = w + 192 + <usize>n * 8;
      const a = act + (<usize>sb * 256 + <usize>n * 128) * QB;
      const L0 = v128.load(ql);
      const L1 = v128.load(ql, 16);
      const L2 = v128.load(ql, 32);
      const L3 = v128.load(ql, 48);
      const H0 = v128.load(qh);
      const H1 = v128.load(qh, 16);
      const st: usize = 16 * QB;
      acc = i32x4.add(acc, q6Sub(q6Vec(L0, H0, false, 4), a, <i32>load<i8>(sc)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L1, H1, false, 4), a + st, <i32>load<i8>(sc, 1)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L2, H0, false, 2), a + 2 * st, <i32>load<i8>(sc, 2)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L3, H1, false, 2), a + 3 * st, <i32>load<i8>(sc, 3)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L0, H0, true, 0), a + 4 * st, <i32>load<i8>(sc, 4)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L1, H1, true, 0), a + 5 * st, <i32>load<i8>(sc, 5)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L2, H0, true, -2), a + 6 * st, <i32>load<i8>(sc, 6)));
      acc = i32x4.add(acc, q6Sub(q6Vec(L3, H1, true, -2), a + 7 * st, <i32>load<i8>(sc, 7)));
    }
    // the -32 offset: 32 * Σ scale[s] * (sum of the activation quants of sub-block s)
    const scv = v128.load(w + 192);
    const bs = abs + (<usize>sb << 5);
    const off = i32x4.add(
      i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(scv), v128.load(bs)),
      i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(scv), v128.load(bs, 16)),
    );
    acc = i32x4.sub(acc, i32x4.shl(off, 5));
    const d = f16ToF32(load<u16>(w, 208)) * load<f32>(ad + (<usize>sb << 2));
    accf = f32x4.add(accf, f32x4.mul(f32x4.convert_i32x4_s(acc), f32x4.splat(d)));
  }
  return hsum(accf);
}
