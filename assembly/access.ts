// Element access by type, for kernels that work on any float layout.

import { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from './math';
import { T_BF16, T_F16, T_F32, T_I8, T_I16, T_I32, T_I64 } from './types';

@inline export function ldf(p: usize, t: i32): f32 {
  if (t == T_F32) return load<f32>(p);
  if (t == T_F16) return f16ToF32(load<u16>(p));
  if (t == T_BF16) return bf16ToF32(load<u16>(p));
  return ldfSlow(p, t);
}

function ldfSlow(p: usize, t: i32): f32 {
  switch (t) {
    case T_I32:
      return <f32>load<i32>(p);
    case T_I16:
      return <f32>load<i16>(p);
    case T_I8:
      return <f32>load<i8>(p);
    case T_I64:
      return <f32>load<i64>(p);
    default:
      unreachable();
      return 0;
  }
}

@inline export function stf(p: usize, t: i32, v: f32): void {
  if (t == T_F32) store<f32>(p, v);
  else if (t == T_F16) store<u16>(p, <u16>f32ToF16(v));
  else if (t == T_BF16) store<u16>(p, <u16>f32ToBF16(v));
  else stfSlow(p, t, v);
}

function stfSlow(p: usize, t: i32, v: f32): void {
  switch (t) {
    case T_I32:
      store<i32>(p, <i32>v);
      return;
    case T_I16:
      store<i16>(p, <i16>(<i32>v));
      return;
    case T_I8:
      store<i8>(p, <i8>(<i32>v));
      return;
    default:
      unreachable();
  }
}

/** An index value (I32 or I64) at p. */
@inline export function ldIndex(p: usize, t: i32): i64 {
  return t == T_I64 ? load<i64>(p) : <i64>load<i32>(p);
}
