// Vector constants, read from a fixed place in memory rather than written as v128.const:
// V8 rematerializes constants inside loops (three instructions each, every iteration),
// while a load folds into the instruction using it. The host writes this table into every
// arena when it creates it (src/backends/cpu/arena.ts, CONSTANTS; keep the two in step).

const BASE: usize = 1024;

/** 0x0f in every byte. */
@inline export function C_M4(): v128 {
  return v128.load(BASE);
}
/** 0x30 in every byte. */
@inline export function C_M30(): v128 {
  return v128.load(BASE, 16);
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
/** 2^112 (f32) in every lane. */
@inline export function C_P112(): v128 {
  return v128.load(BASE, 80);
}
/** 0x7bff in every i32 lane. */
@inline export function C_7BFF(): v128 {
  return v128.load(BASE, 96);
}
/** 0x70000000 in every i32 lane. */
@inline export function C_INF_ADJ(): v128 {
  return v128.load(BASE, 112);
}
/** 0x00ff in every i16 lane. */
@inline export function C_W8(): v128 {
  return v128.load(BASE, 128);
}
/** Byte indices selecting i16 lane j (0..7) into every lane (for i8x16.swizzle). */
@inline export function C_LANE16(j: i32): v128 {
  return v128.load(BASE + 144 + (<usize>j << 4));
}

/** f16 (low 16 bits of each i32 lane) to f32, using the constant table. */
@inline export function f16x4(h: v128): v128 {
  const em = v128.and(h, C_7FFF());
  // exponent 31 (inf, NaN) must land on f32's 255: add 224 to it before the 2^112 scaling
  const sh = i32x4.add(i32x4.shl(em, 13), v128.and(i32x4.gt_s(em, C_7BFF()), C_INF_ADJ()));
  return v128.or(f32x4.mul(sh, C_P112()), i32x4.shl(v128.xor(h, em), 16));
}
