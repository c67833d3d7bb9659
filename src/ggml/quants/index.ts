// Row codecs of ggml's tensor types: one table from type id to its (de)quantizer.
//
// dequantize() turns `n` elements stored in `type` into float32; quantize() does the
// reverse with ggml's reference (deterministic, byte-exact) quantizers. Both validate
// their arguments once and then call a per-type function over whole blocks.

import { GGMLType, traitsOf, typeName } from '../types.js';
import type { DequantizeFn, QuantizeFn, RowCodec, RowQuantizeFn } from './codec.js';
import { dequantizeBF16, dequantizeF16, dequantizeF32, quantizeBF16, quantizeF16, quantizeF32 } from './float.js';
import { dequantizeIQ4_NL, dequantizeIQ4_XS } from './iq-dequant.js';
import {
  dequantizeIQ1_M,
  dequantizeIQ1_S,
  dequantizeIQ2_S,
  dequantizeIQ2_XS,
  dequantizeIQ2_XXS,
  dequantizeIQ3_S,
  dequantizeIQ3_XXS,
} from './iq-lowbit-dequant.js';
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
  quantizeRowQ4_0,
  quantizeRowQ4_1,
  quantizeRowQ5_0,
  quantizeRowQ5_1,
} from './legacy.js';
import { dequantizeMXFP4, quantizeMXFP4 } from './mxfp4.js';
import { quantizeQ8_K } from './q8k.js';
import { quantizeIQ4_NL, quantizeIQ4_NLWeighted, quantizeIQ4_XS, quantizeIQ4_XSWeighted } from './quantize-iq.js';
import { quantizeIQ1_MBlocks, quantizeIQ1_SWeighted } from './quantize-iq1.js';
import {
  quantizeIQ2_SBlocks,
  quantizeIQ2_XSWeighted,
  quantizeIQ2_XXSWeighted,
  quantizeIQ3_SBlocks,
  quantizeIQ3_XXSBlocks,
} from './quantize-iq2.js';
import {
  quantizeQ2_K,
  quantizeQ2_KWeighted,
  quantizeQ3_K,
  quantizeQ3_KWeighted,
  quantizeQ4_K,
  quantizeQ4_KWeighted,
  quantizeQ5_K,
  quantizeQ5_KWeighted,
  quantizeQ6_K,
  quantizeQ6_KWeighted,
} from './quantize-k.js';
import { dequantizeTQ1_0, dequantizeTQ2_0, quantizeTQ1_0, quantizeTQ2_0 } from './ternary.js';

export type { DequantizeFn, QuantizeFn, RowCodec, RowQuantizeFn } from './codec.js';

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

/** Sets (or replaces) the row quantizer of `type` (ggml's quantize_<type>, imatrix path included). */
export function registerRowQuantizer(type: number, fn: RowQuantizeFn): void {
  traitsOf(type);
  CODECS.set(type, { ...CODECS.get(type), quantizeRow: fn });
}

/** A block quantizer taking quant weights (qw[qwOff + blockSize·b ..] for block b). */
type WeightedBlocksFn = (
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
) => void;

/**
 * The importance-matrix quantizer of a type whose blocks are quantized independently
 * (without an imatrix, quantizeRows uses the type's block quantizer).
 */
function blockwise(type: GGMLType, weighted: WeightedBlocksFn): RowQuantizeFn {
  const bs = traitsOf(type).blockSize;
  return (src, so, dst, o, n, qw) => {
    if (!qw) throw new RangeError(`quantize ${typeName(type)}: no importance matrix given`);
    weighted(src, so, dst, o, n / bs, qw, 0);
  };
}

/** The block quantizer of a type that searches with weights x²-derived when it has no imatrix. */
function unweighted(
  fn: (s: Float32Array, so: number, d: Uint8Array, o: number, nb: number, qw: null, qo: number) => void,
) {
  const q: QuantizeFn = (src, srcOff, dst, dstOff, nb) => fn(src, srcOff, dst, dstOff, nb, null, 0);
  return q;
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
registerDequantizer(GGMLType.IQ2_XXS, dequantizeIQ2_XXS);
registerDequantizer(GGMLType.IQ2_XS, dequantizeIQ2_XS);
registerDequantizer(GGMLType.IQ2_S, dequantizeIQ2_S);
registerDequantizer(GGMLType.IQ3_XXS, dequantizeIQ3_XXS);
registerDequantizer(GGMLType.IQ3_S, dequantizeIQ3_S);
registerDequantizer(GGMLType.IQ1_S, dequantizeIQ1_S);
registerDequantizer(GGMLType.IQ1_M, dequantizeIQ1_M);
registerDequantizer(GGMLType.TQ1_0, dequantizeTQ1_0);
registerDequantizer(GGMLType.TQ2_0, dequantizeTQ2_0);

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

registerQuantizer(GGMLType.TQ1_0, quantizeTQ1_0);
registerQuantizer(GGMLType.TQ2_0, quantizeTQ2_0);
registerQuantizer(GGMLType.IQ2_S, unweighted(quantizeIQ2_SBlocks));
registerQuantizer(GGMLType.IQ3_XXS, unweighted(quantizeIQ3_XXSBlocks));
registerQuantizer(GGMLType.IQ3_S, unweighted(quantizeIQ3_SBlocks));
registerQuantizer(GGMLType.IQ1_M, unweighted(quantizeIQ1_MBlocks));

// ggml's importance-matrix paths (types absent here quantize as above with or without
// one, as ggml ignores it for them; without one every type quantizes as above). IQ2_XXS,
// IQ2_XS and IQ1_S cannot quantize without one (ggml_quantize_requires_imatrix).
registerRowQuantizer(GGMLType.Q4_0, quantizeRowQ4_0);
registerRowQuantizer(GGMLType.Q4_1, quantizeRowQ4_1);
registerRowQuantizer(GGMLType.Q5_0, quantizeRowQ5_0);
registerRowQuantizer(GGMLType.Q5_1, quantizeRowQ5_1);
registerRowQuantizer(GGMLType.Q2_K, blockwise(GGMLType.Q2_K, quantizeQ2_KWeighted));
registerRowQuantizer(GGMLType.Q3_K, blockwise(GGMLType.Q3_K, quantizeQ3_KWeighted));
registerRowQuantizer(GGMLType.Q4_K, blockwise(GGMLType.Q4_K, quantizeQ4_KWeighted));
registerRowQuantizer(GGMLType.Q5_K, blockwise(GGMLType.Q5_K, quantizeQ5_KWeighted));
registerRowQuantizer(GGMLType.Q6_K, blockwise(GGMLType.Q6_K, quantizeQ6_KWeighted));
registerRowQuantizer(GGMLType.IQ4_NL, blockwise(GGMLType.IQ4_NL, quantizeIQ4_NLWeighted));
registerRowQuantizer(GGMLType.IQ4_XS, blockwise(GGMLType.IQ4_XS, quantizeIQ4_XSWeighted));
registerRowQuantizer(GGMLType.IQ2_XXS, blockwise(GGMLType.IQ2_XXS, quantizeIQ2_XXSWeighted));
registerRowQuantizer(GGMLType.IQ2_XS, blockwise(GGMLType.IQ2_XS, quantizeIQ2_XSWeighted));
registerRowQuantizer(GGMLType.IQ2_S, blockwise(GGMLType.IQ2_S, quantizeIQ2_SBlocks));
registerRowQuantizer(GGMLType.IQ3_XXS, blockwise(GGMLType.IQ3_XXS, quantizeIQ3_XXSBlocks));
registerRowQuantizer(GGMLType.IQ3_S, blockwise(GGMLType.IQ3_S, quantizeIQ3_SBlocks));
registerRowQuantizer(GGMLType.IQ1_S, blockwise(GGMLType.IQ1_S, quantizeIQ1_SWeighted));
registerRowQuantizer(GGMLType.IQ1_M, blockwise(GGMLType.IQ1_M, quantizeIQ1_MBlocks));

// MXFP4 (mxfp4.ts): quantize_row_mxfp4_ref, which llama-quantize uses for it (ggml
// ignores an importance matrix for it).
registerDequantizer(GGMLType.MXFP4, dequantizeMXFP4);
registerQuantizer(GGMLType.MXFP4, quantizeMXFP4);
// ---- end of the table ---------------------------------------------------------------

export function canDequantize(type: number): boolean {
  return CODECS.get(type)?.dequantize !== undefined;
}

export function canQuantize(type: number): boolean {
  return CODECS.get(type)?.quantize !== undefined;
}

/** Whether ggml can quantize rows to `type` (with an importance matrix where it needs one). */
export function canQuantizeRows(type: number): boolean {
  const c = CODECS.get(type);
  return c?.quantizeRow !== undefined || c?.quantize !== undefined;
}

/** Whether ggml refuses to quantize `type` without an importance matrix (ggml_quantize_requires_imatrix). */
export function requiresImatrix(type: number): boolean {
  return type === GGMLType.IQ2_XXS || type === GGMLType.IQ2_XS || type === GGMLType.IQ1_S;
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

/**
 * ggml_quantize_chunk: quantizes `nrows` rows of `nPerRow` floats (src[0..)) into `dst`,
 * with an importance matrix (`imatrix`: one weight per column, used for every row) or
 * without (null). Types without an importance-matrix path ignore it, as ggml does.
 */
export function quantizeRows(
  type: number,
  src: Float32Array,
  dst: Uint8Array,
  nrows: number,
  nPerRow: number,
  imatrix: Float32Array | null = null,
): void {
  const c = CODECS.get(type);
  if (!c?.quantizeRow && !c?.quantize) throw new RangeError(`quantize: no quantizer for type ${typeName(type)}`);
  if (!imatrix && (requiresImatrix(type) || !c.quantize)) {
    throw new RangeError(`quantize ${typeName(type)}: this type needs an importance matrix`);
  }
  const { nb, typeSize } = blocksOf(type, nPerRow, 'quantize');
  const rowBytes = nb * typeSize;
  if (!Number.isSafeInteger(nrows) || nrows < 0) throw new RangeError(`quantize: nrows = ${nrows} is not a count`);
  if (src.length < nrows * nPerRow) {
    throw new RangeError(`quantize ${typeName(type)}: src holds ${src.length} < ${nrows * nPerRow} elements`);
  }
  if (dst.length < nrows * rowBytes) {
    throw new RangeError(
      `quantize ${typeName(type)}: ${nrows} rows need ${nrows * rowBytes} bytes, dst has ${dst.length}`,
    );
  }
  if (imatrix && imatrix.length < nPerRow) {
    throw new RangeError(
      `quantize ${typeName(type)}: the importance matrix has ${imatrix.length} < ${nPerRow} entries`,
    );
  }
  const row = imatrix ? c.quantizeRow : undefined;
  // without an imatrix every row quantizes block by block: all rows in one call
  if (!row) {
    c.quantize!(src, 0, dst, 0, nb * nrows);
    return;
  }
  for (let r = 0; r < nrows; r++) row(src, r * nPerRow, dst, r * rowBytes, nPerRow, imatrix);
}
