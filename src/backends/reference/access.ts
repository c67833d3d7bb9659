// Element and row access to tensors in host memory, by strides: the reference kernels
// read and write through these only, so every layout (views, permutations, broadcast)
// goes through one obviously-correct path.

import { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from '../../ggml/fp16.js';
import { canDequantize, canQuantize, dequantize, quantize } from '../../ggml/quants/index.js';
import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';
import { bufferOf } from '../impl.js';

export class HostView {
  readonly bytes: Uint8Array;
  readonly dv: DataView;
  readonly base: number;
  readonly nb: readonly number[];
  readonly ne: readonly number[];
  readonly type: number;
  readonly quantized: boolean;

  constructor(readonly t: Tensor) {
    const bytes = bufferOf(t)?.hostBytes();
    if (!bytes) throw new Error(`reference backend: tensor ${t} is not in host memory`);
    this.bytes = bytes;
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.base = t.offset;
    this.nb = t.nb;
    this.ne = t.ne;
    this.type = t.type;
    this.quantized = traitsOf(t.type).quantized;
  }

  /** Byte position of element (or block start) [i0, i1, i2, i3]. */
  pos(i0: number, i1: number, i2: number, i3: number): number {
    return this.base + i0 * this.nb[0] + i1 * this.nb[1] + i2 * this.nb[2] + i3 * this.nb[3];
  }

  /** One element as a number (plain types only). */
  get(i0: number, i1 = 0, i2 = 0, i3 = 0): number {
    const p = this.pos(i0, i1, i2, i3);
    switch (this.type) {
      case GGMLType.F32:
        return this.dv.getFloat32(p, true);
      case GGMLType.F16:
        return f16ToF32(this.dv.getUint16(p, true));
      case GGMLType.BF16:
        return bf16ToF32(this.dv.getUint16(p, true));
      case GGMLType.I32:
        return this.dv.getInt32(p, true);
      case GGMLType.I64:
        return Number(this.dv.getBigInt64(p, true));
      case GGMLType.I16:
        return this.dv.getInt16(p, true);
      case GGMLType.I8:
        return this.dv.getInt8(p);
      case GGMLType.F64:
        return this.dv.getFloat64(p, true);
      default:
        throw new Error(`reference backend: element access to ${traitsOf(this.type).name}`);
    }
  }

  /** Store one element (plain types only), rounding to the tensor's type. */
  set(x: number, i0: number, i1 = 0, i2 = 0, i3 = 0): void {
    const p = this.pos(i0, i1, i2, i3);
    switch (this.type) {
      case GGMLType.F32:
        this.dv.setFloat32(p, x, true);
        return;
      case GGMLType.F16:
        this.dv.setUint16(p, f32ToF16(x), true);
        return;
      case GGMLType.BF16:
        this.dv.setUint16(p, f32ToBF16(x), true);
        return;
      case GGMLType.I32:
        this.dv.setInt32(p, x, true);
        return;
      case GGMLType.I64:
        this.dv.setBigInt64(p, BigInt(x), true);
        return;
      case GGMLType.I16:
        this.dv.setInt16(p, x, true);
        return;
      case GGMLType.I8:
        this.dv.setInt8(p, x);
        return;
      case GGMLType.F64:
        this.dv.setFloat64(p, x, true);
        return;
      default:
        throw new Error(`reference backend: element access to ${traitsOf(this.type).name}`);
    }
  }

  /** Row [*, i1, i2, i3] as float32 (any readable type; quantized rows must be contiguous). */
  readRow(dst: Float32Array, i1: number, i2 = 0, i3 = 0): Float32Array {
    const n = this.ne[0];
    if (this.quantized || this.nb[0] === traitsOf(this.type).typeSize) {
      const p = this.pos(0, i1, i2, i3);
      const len = (n / traitsOf(this.type).blockSize) * traitsOf(this.type).typeSize;
      dequantize(this.type, this.bytes.subarray(p, p + len), dst, n);
    } else {
      for (let i0 = 0; i0 < n; i0++) dst[i0] = this.get(i0, i1, i2, i3);
    }
    return dst;
  }

  /** Store a float32 row at [*, i1, i2, i3], converting (and quantizing) to the tensor's type. */
  writeRow(src: Float32Array, i1: number, i2 = 0, i3 = 0): void {
    const n = this.ne[0];
    if (this.quantized) {
      const p = this.pos(0, i1, i2, i3);
      const len = (n / traitsOf(this.type).blockSize) * traitsOf(this.type).typeSize;
      quantize(this.type, src.subarray(0, n), this.bytes.subarray(p, p + len), n);
    } else {
      for (let i0 = 0; i0 < n; i0++) this.set(src[i0], i0, i1, i2, i3);
    }
  }
}

/** Whether rows of this type can be read as floats. */
export function readable(type: number): boolean {
  return canDequantize(type);
}

/** Whether float rows can be stored in this type. */
export function writable(type: number): boolean {
  return !traitsOf(type).quantized || canQuantize(type);
}

/** Calls fn(i1, i2, i3) for every row of extents ne. */
export function forEachRow(ne: readonly number[], fn: (i1: number, i2: number, i3: number) => void): void {
  for (let i3 = 0; i3 < ne[3]; i3++) {
    for (let i2 = 0; i2 < ne[2]; i2++) {
      for (let i1 = 0; i1 < ne[1]; i1++) fn(i1, i2, i3);
    }
  }
}
