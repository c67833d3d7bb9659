// Row quantizers from f32 (ggml's reference quantizers, byte for byte) for the types a
// graph may write: F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (KV caches, CPY, SET_ROWS).

import { qQs, qrow, qScale, qStride } from './desc';
import { f32ToBF16, f32ToF16 } from './math';
import { T_BF16, T_F16, T_F32, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0 } from './types';

const FLT_MAX: f32 = 3.4028234663852886e38;

/** C roundf: half away from zero. */
@inline function roundf(x: f32): f32 {
  const a = Mathf.abs(x);
  let r = Mathf.floor(a);
  if (a - r >= 0.5) r += 1;
  return x < 0 ? -r : r;
}

/** The element of largest magnitude (sign kept; the first on ties). */
@inline function signedAbsMax(x: usize): f32 {
  let amax: f32 = 0;
  let max: f32 = 0;
  for (let j = 0; j < 32; j++) {
    const v = load<f32>(x + (<usize>j << 2));
    if (amax < Mathf.abs(v)) {
      amax = Mathf.abs(v);
      max = v;
    }
  }
  return max;
}

function quantQ8_0(x: usize, sc: usize, qs: usize, stride: usize, nb: i32): void {
  for (let b = 0; b < nb; b++, x += 128, sc += stride, qs += stride) {
    let amax: f32 = 0;
    for (let j = 0; j < 32; j++) {
      const a = Mathf.abs(load<f32>(x + (<usize>j << 2)));
      if (a > amax) amax = a;
    }
    const d: f32 = amax / 127;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(sc, <u16>f32ToF16(d));
    for (let j = 0; j < 32; j++) store<i8>(qs + j, <i8>(<i32>roundf(load<f32>(x + (<usize>j << 2)) * id)));
  }
}

function quantQ4_0(x: usize, sc: usize, qs: usize, stride: usize, nb: i32): void {
  for (let b = 0; b < nb; b++, x += 128, sc += stride, qs += stride) {
    const d: f32 = signedAbsMax(x) / -8;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(sc, <u16>f32ToF16(d));
    for (let j = 0; j < 16; j++) {
      const x0 = load<f32>(x + (<usize>j << 2)) * id;
      const x1 = load<f32>(x + (<usize>(j + 16) << 2)) * id;
      const q0 = min(15, <i32>(x0 + <f32>8.5));
      const q1 = min(15, <i32>(x1 + <f32>8.5));
      store<u8>(qs + j, <u8>((q0 & 15) | ((q1 & 15) << 4)));
    }
  }
}

function quantQ4_1(x: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++, x += 128, dst += 20) {
    let mn = FLT_MAX;
    let mx = -FLT_MAX;
    for (let j = 0; j < 32; j++) {
      const v = load<f32>(x + (<usize>j << 2));
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    const d: f32 = (mx - mn) / 15;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(dst, <u16>f32ToF16(d));
    store<u16>(dst, <u16>f32ToF16(mn), 2);
    for (let j = 0; j < 16; j++) {
      const x0 = (load<f32>(x + (<usize>j << 2)) - mn) * id;
      const x1 = (load<f32>(x + (<usize>(j + 16) << 2)) - mn) * id;
      const q0 = min(15, <i32>(x0 + <f32>0.5));
      const q1 = min(15, <i32>(x1 + <f32>0.5));
      store<u8>(dst + 4 + j, <u8>((q0 & 15) | ((q1 & 15) << 4)));
    }
  }
}

function quantQ5_0(x: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++, x += 128, dst += 22) {
    const d: f32 = signedAbsMax(x) / -16;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(dst, <u16>f32ToF16(d));
    let qh: u32 = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = load<f32>(x + (<usize>j << 2)) * id;
      const x1 = load<f32>(x + (<usize>(j + 16) << 2)) * id;
      const q0 = min(31, <i32>(x0 + <f32>16.5));
      const q1 = min(31, <i32>(x1 + <f32>16.5));
      store<u8>(dst + 6 + j, <u8>((q0 & 15) | ((q1 & 15) << 4)));
      qh |= <u32>((q0 & 0x10) >> 4) << j;
      qh |= <u32>((q1 & 0x10) >> 4) << (j + 16);
    }
    store<u32>(dst, qh, 2);
  }
}

function quantQ5_1(x: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++, x += 128, dst += 24) {
    let mn = FLT_MAX;
    let mx = -FLT_MAX;
    for (let j = 0; j < 32; j++) {
      const v = load<f32>(x + (<usize>j << 2));
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    const d: f32 = (mx - mn) / 31;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(dst, <u16>f32ToF16(d));
    store<u16>(dst, <u16>f32ToF16(mn), 2);
    let qh: u32 = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = (load<f32>(x + (<usize>j << 2)) - mn) * id;
      const x1 = (load<f32>(x + (<usize>(j + 16) << 2)) - mn) * id;
      const q0 = <i32>(x0 + <f32>0.5);
      const q1 = <i32>(x1 + <f32>0.5);
      store<u8>(dst + 8 + j, <u8>((q0 & 15) | ((q1 & 15) << 4)));
      qh |= <u32>((q0 & 0x10) >> 4) << j;
      qh |= <u32>((q1 & 0x10) >> 4) << (j + 16);
    }
    store<u32>(dst, qh, 4);
  }
}

/** Whether rows of `type` can be written by quantRow. */
export function writable(type: i32): bool {
  return (
    type == T_F32 || type == T_F16 || type == T_BF16 || type == T_Q4_0 || type == T_Q4_1 || type == T_Q5_0 ||
    type == T_Q5_1 || type == T_Q8_0
  );
}

/**
 * Store n f32 values at x as the row of tensor t that starts `o` logical bytes after its
 * element [0,0,0,0] (rows contiguous).
 */
export function quantRow(node: usize, t: i32, type: i32, o: usize, x: usize, n: i32): void {
  const dst = <usize>load<u32>(node + ((<usize>t * 16) << 2)) + o;
  switch (type) {
    case T_F32:
      memory.copy(dst, x, <usize>n << 2);
      return;
    case T_F16:
      for (let i = 0; i < n; i++) store<u16>(dst + (<usize>i << 1), <u16>f32ToF16(load<f32>(x + (<usize>i << 2))));
      return;
    case T_BF16:
      for (let i = 0; i < n; i++) store<u16>(dst + (<usize>i << 1), <u16>f32ToBF16(load<f32>(x + (<usize>i << 2))));
      return;
    case T_Q8_0:
      qrow(node, t, o, 34);
      quantQ8_0(x, qScale, qQs, qStride, n >> 5);
      return;
    case T_Q4_0:
      qrow(node, t, o, 18);
      quantQ4_0(x, qScale, qQs, qStride, n >> 5);
      return;
    case T_Q4_1:
      quantQ4_1(x, dst, n >> 5);
      return;
    case T_Q5_0:
      quantQ5_0(x, dst, n >> 5);
      return;
    case T_Q5_1:
      quantQ5_1(x, dst, n >> 5);
      return;
    default:
      unreachable();
  }
}
