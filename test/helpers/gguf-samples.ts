// Small GGUF files built in memory with our writer, for reader tests and fuzzing.

import { GGMLType } from '../../src/ggml/types.js';
import { GGUFValueType, GGUFWriter } from '../../src/gguf/index.js';

/** A file with one key of every value type (arrays of strings and of arrays too) and three tensors. */
export function sampleWriter(alignment?: number): GGUFWriter {
  const w = new GGUFWriter(alignment ? { alignment } : {});
  w.setString('general.architecture', 'llama');
  w.set('test.u8', GGUFValueType.UINT8, 200);
  w.set('test.i8', GGUFValueType.INT8, -100);
  w.set('test.u16', GGUFValueType.UINT16, 60000);
  w.set('test.i16', GGUFValueType.INT16, -30000);
  w.setU32('test.u32', 4000000000);
  w.setI32('test.i32', -2000000000);
  w.setF32('test.f32', 0.1);
  w.setBool('test.bool', true);
  w.setString('test.string', 'héllo ▁wörld 🦙');
  w.setU64('test.u64', 18446744073709551615n);
  w.set('test.i64', GGUFValueType.INT64, -9223372036854775808n);
  w.set('test.f64', GGUFValueType.FLOAT64, Math.PI);
  w.setArray('test.arr_f32', GGUFValueType.FLOAT32, new Float32Array([1.5, -2.25, 3]));
  w.setArray('test.arr_i32', GGUFValueType.INT32, new Int32Array([1, -2, 3, 2147483647]));
  w.setArray('test.arr_bool', GGUFValueType.BOOL, [true, false, true]);
  w.setStringArray('test.arr_str', ['a', '', '\u2581b', 'ü']);
  w.setArray('test.arr_arr', GGUFValueType.ARRAY, [
    { itemType: GGUFValueType.UINT8, items: new Uint8Array([1, 2]) },
    { itemType: GGUFValueType.STRING, items: ['x', 'yz'] },
    { itemType: GGUFValueType.ARRAY, items: [{ itemType: GGUFValueType.INT64, items: new BigInt64Array([-1n]) }] },
  ]);
  w.setArray('test.arr_u64', GGUFValueType.UINT64, new BigUint64Array([0n, 1n << 63n]));
  w.setArray('test.arr_empty', GGUFValueType.UINT32, new Uint32Array(0));
  const f32 = new Float32Array(64 * 3).map((_, i) => i * 0.5 - 7);
  w.addTensor('a.weight', GGMLType.F32, [64, 3], new Uint8Array(f32.buffer));
  const q = new Uint8Array(34 * 4).map((_, i) => (i * 37) & 0xff);
  w.addTensor('b.weight', GGMLType.Q8_0, [64, 2], q);
  w.addTensor('c.bias', GGMLType.F16, [5], new Uint8Array(10).fill(0x3c));
  return w;
}

export function sampleBytes(alignment?: number): Uint8Array {
  return sampleWriter(alignment).toBytes();
}
