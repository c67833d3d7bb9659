// Row codecs of ggml's tensor types: one table from type id to its (de)quantizer.
//
// dequantize() turns `n` elements stored in `type` into float32; quantize() does the
// reverse with ggml's reference (deterministic, byte-exact) quantizers. Both validate
// their arguments once and then call a per-type function over whole blocks.

import { GGMLType, traitsOf, typeName } from '../types.js';
import type { DequantizeFn, QuantizeFn, RowCodec } from './codec.js';
import { dequantizeBF16, dequantizeF16, dequantizeF32, quantizeBF16, quantizeF16, quantizeF32 } from './float.js';
import { dequantizeIQ4_NL, dequantizeIQ4_XS } from './iq-dequant.js';
import {
  dequantizeQ2_K,
  dequantizeQ3_K,
  dequantizeQ4_K,
  dequantizeQ5_K,
  dequantizeQ6_K,
  dequantizeQ8_K,
} from './k-dequant.js';
import {
  dequantizeQ4_0,
  dequantizeQ4_1,
  dequantizeQ5_0,
  dequantizeQ5_1,
  dequantizeQ8_0,
  dequantizeQ8_1,
  quantizeQ4_0,
  quantizeQ4_1,
  quantizeQ5_0,
  quantizeQ5_1,
  quantizeQ8_0,
  quantizeQ8_1,
} from './legacy.js';
import { dequantizeMXFP4, quantizeMXFP4 } from './mxfp4.js';
import { quantizeQ8_K } from './q8k.js';
import { quantizeIQ4_NL, quantizeIQ4_XS } from './quantize-iq.js';
import { quantizeQ2_K, quantizeQ3_K, quantizeQ4_K, quantizeQ5_K, quantizeQ6_K } from './quantize-k.js';

export type { DequantizeFn, QuantizeFn, RowCodec } from './codec.js';

const CODECS = new Map<number, RowCodec>();

/** Sets (or replaces) the dequantizer of `type`. */
export function registerDequantizer(type: number, fn: DequantizeFn): void {
  traitsOf(type);
  CODECS.set(type, { ...CODECS.get(type), dequantize: fn });
}

/** Sets (or replaces) the reference quantizer of `type`. */
export function registerQuantizer(type: number, fn: QuantizeFn): void {
  traitsOf(type);
  CODECS.set(type, { ...CODECS.get(type), quantize: fn });
}

// ---- the table ----------------------------------------------------------------------
// Dequantizers.
registerDequantizer(GGMLType.F32, dequantizeF32);
registerDequantizer(GGMLType.F16, dequantizeF16);
registerDequantizer(GGMLType.BF16, dequantizeBF16);
registerDequantizer(GGMLType.Q4_0, dequantizeQ4_0);
registerDequantizer(GGMLType.Q4_1, dequantizeQ4_1);
registerDequantizer(GGMLType.Q5_0, dequantizeQ5_0);
registerDequantizer(GGMLType.Q5_1, dequantizeQ5_1);
registerDequantizer(GGMLType.Q8_0, dequantizeQ8_0);
registerDequantizer(GGMLType.Q8_1, dequantizeQ8_1);
registerDequantizer(GGMLType.Q2_K, dequantizeQ2_K);
registerDequantizer(GGMLType.Q3_K, dequantizeQ3_K);
registerDequantizer(GGMLType.Q4_K, dequantizeQ4_K);
registerDequantizer(GGMLType.Q5_K, dequantizeQ5_K);
registerDequantizer(GGMLType.Q6_K, dequantizeQ6_K);
registerDequantizer(GGMLType.Q8_K, dequantizeQ8_K);
registerDequantizer(GGMLType.IQ4_NL, dequantizeIQ4_NL);
registerDequantizer(GGMLType.IQ4_XS, dequantizeIQ4_XS);

// Reference quantizers (byte-exact with ggml's quantize_row_*_ref).
registerQuantizer(GGMLType.F32, quantizeF32);
registerQuantizer(GGMLType.F16, quantizeF16);
registerQuantizer(GGMLType.BF16, quantizeBF16);
registerQuantizer(GGMLType.Q4_0, quantizeQ4_0);
registerQuantizer(GGMLType.Q4_1, quantizeQ4_1);
registerQuantizer(GGMLType.Q5_0, quantizeQ5_0);
registerQuantizer(GGMLType.Q5_1, quantizeQ5_1);
registerQuantizer(GGMLType.Q8_0, quantizeQ8_0);
registerQuantizer(GGMLType.Q8_1, quantizeQ8_1);
registerQuantizer(GGMLType.Q8_K, quantizeQ8_K);

// K-quant and IQ4 quantizers (quantize-k.ts, quantize-iq.ts): what llama-quantize writes
// without an imatrix (IQ4_NL/IQ4_XS through quantize_iq4_*, not the _ref entry points).
registerQuantizer(GGMLType.Q2_K, quantizeQ2_K);
registerQuantizer(GGMLType.Q3_K, quantizeQ3_K);
registerQuantizer(GGMLType.Q4_K, quantizeQ4_K);
registerQuantizer(GGMLType.Q5_K, quantizeQ5_K);
registerQuantizer(GGMLType.Q6_K, quantizeQ6_K);
registerQuantizer(GGMLType.IQ4_NL, quantizeIQ4_NL);
registerQuantizer(GGMLType.IQ4_XS, quantizeIQ4_XS);

// MXFP4 (mxfp4.ts): quantize_row_mxfp4_ref, which llama-quantize uses for it.
registerDequantizer(GGMLType.MXFP4, dequantizeMXFP4);
registerQuantizer(GGMLType.MXFP4, quantizeMXFP4);
// ---- end of the table ---------------------------------------------------------------

export function canDequantize(type: number): boolean {
  return CODECS.get(type)?.dequantize !== undefined;
}

export function canQuantize(type: number): boolean {
  return CODECS.get(type)?.quantize !== undefined;
}

/** The raw per-block dequantizer of `type` (no validation), for hot loops. */
export function dequantizerOf(type: number): DequantizeFn | undefined {
  return CODECS.get(type)?.dequantize;
}

/** The raw per-block reference quantizer of `type` (no validation), for hot loops. */
export function quantizerOf(type: number): QuantizeFn | undefined {
  return CODECS.get(type)?.quantize;
}

/** Blocks in `n` elements of `type`, checking that n is a whole number of blocks. */
function blocksOf(type: number, n: number, what: string): { nb: number; typeSize: number } {
  const tr = traitsOf(type);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} ${tr.name}: n = ${n} is not a count`);
  if (n % tr.blockSize !== 0) {
    throw new RangeError(`${what} ${tr.name}: n = ${n} is not a multiple of the block size ${tr.blockSize}`);
  }
  return { nb: n / tr.blockSize, typeSize: tr.typeSize };
}

/** Dequantizes the first `n` elements stored in `src` (type `type`) into dst[0..n). */
export function dequantize(type: number, src: Uint8Array, dst: Float32Array, n: number): void {
  const fn = CODECS.get(type)?.dequantize;
  if (!fn) throw new RangeError(`dequantize: no dequantizer for type ${typeName(type)}`);
  const { nb, typeSize } = blocksOf(type, n, 'dequantize');
  const bytes = nb * typeSize;
  if (src.length < bytes) {
    throw new RangeError(`dequantize ${typeName(type)}: ${n} elements need ${bytes} bytes, src has ${src.length}`);
  }
  if (dst.length < n) throw new RangeError(`dequantize ${typeName(type)}: dst holds ${dst.length} < ${n} elements`);
  fn(src, 0, dst, 0, nb);
}

/** Quantizes src[0..n) into `dst` (type `type`) with ggml's reference quantizer. */
export function quantize(type: number, src: Float32Array, dst: Uint8Array, n: number): void {
  const fn = CODECS.get(type)?.quantize;
  if (!fn) throw new RangeError(`quantize: no quantizer for type ${typeName(type)}`);
  const { nb, typeSize } = blocksOf(type, n, 'quantize');
  const bytes = nb * typeSize;
  if (src.length < n) throw new RangeError(`quantize ${typeName(type)}: src holds ${src.length} < ${n} elements`);
  if (dst.length < bytes) {
    throw new RangeError(`quantize ${typeName(type)}: ${n} elements need ${bytes} bytes, dst has ${dst.length}`);
  }
  fn(src, 0, dst, 0, nb);
}
