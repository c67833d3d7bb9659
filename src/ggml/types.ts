// ggml's tensor types: ids as stored in GGUF files, block sizes and bytes per block.
// The ids are part of the file format, so they never change; removed ids stay listed
// so that an old or exotic file is rejected by name instead of being misread.

export enum GGMLType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
}

export interface TypeTraits {
  readonly id: number;
  readonly name: string;
  /** Elements per block (1 for plain scalar types). */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
  /** Whether llama-ts can read tensors of this type (dequantize / compute with them). */
  readonly supported: boolean;
  /** Whether the type is quantized (block-structured). */
  readonly quantized: boolean;
}

function t(id: number, name: string, blockSize: number, typeSize: number, supported: boolean): TypeTraits {
  return { id, name, blockSize, typeSize, supported, quantized: blockSize > 1 };
}

/** QK_K: elements per super-block of the K-quants and IQ*_XS/S types. */
export const QK_K = 256;

const TABLE: readonly TypeTraits[] = [
  t(GGMLType.F32, 'F32', 1, 4, true),
  t(GGMLType.F16, 'F16', 1, 2, true),
  t(GGMLType.Q4_0, 'Q4_0', 32, 18, true),
  t(GGMLType.Q4_1, 'Q4_1', 32, 20, true),
  t(GGMLType.Q5_0, 'Q5_0', 32, 22, true),
  t(GGMLType.Q5_1, 'Q5_1', 32, 24, true),
  t(GGMLType.Q8_0, 'Q8_0', 32, 34, true),
  t(GGMLType.Q8_1, 'Q8_1', 32, 36, true),
  t(GGMLType.Q2_K, 'Q2_K', QK_K, 84, true),
  t(GGMLType.Q3_K, 'Q3_K', QK_K, 110, true),
  t(GGMLType.Q4_K, 'Q4_K', QK_K, 144, true),
  t(GGMLType.Q5_K, 'Q5_K', QK_K, 176, true),
  t(GGMLType.Q6_K, 'Q6_K', QK_K, 210, true),
  t(GGMLType.Q8_K, 'Q8_K', QK_K, 292, true),
  t(GGMLType.IQ2_XXS, 'IQ2_XXS', QK_K, 66, true),
  t(GGMLType.IQ2_XS, 'IQ2_XS', QK_K, 74, true),
  t(GGMLType.IQ3_XXS, 'IQ3_XXS', QK_K, 98, true),
  t(GGMLType.IQ1_S, 'IQ1_S', QK_K, 50, true),
  t(GGMLType.IQ4_NL, 'IQ4_NL', 32, 18, true),
  t(GGMLType.IQ3_S, 'IQ3_S', QK_K, 110, true),
  t(GGMLType.IQ2_S, 'IQ2_S', QK_K, 82, true),
  t(GGMLType.IQ4_XS, 'IQ4_XS', QK_K, 136, true),
  t(GGMLType.I8, 'I8', 1, 1, true),
  t(GGMLType.I16, 'I16', 1, 2, true),
  t(GGMLType.I32, 'I32', 1, 4, true),
  t(GGMLType.I64, 'I64', 1, 8, false),
  t(GGMLType.F64, 'F64', 1, 8, false),
  t(GGMLType.IQ1_M, 'IQ1_M', QK_K, 56, true),
  t(GGMLType.BF16, 'BF16', 1, 2, true),
  t(GGMLType.TQ1_0, 'TQ1_0', QK_K, 54, true),
  t(GGMLType.TQ2_0, 'TQ2_0', QK_K, 66, true),
  t(GGMLType.MXFP4, 'MXFP4', 32, 17, true),
];

/** Ids that ggml once used and removed; a file carrying one is rejected by this name. */
const REMOVED: ReadonlyMap<number, string> = new Map([
  [4, 'Q4_2 (removed from ggml)'],
  [5, 'Q4_3 (removed from ggml)'],
  [31, 'Q4_0_4_4 (removed from ggml; repacking now happens at load)'],
  [32, 'Q4_0_4_8 (removed from ggml; repacking now happens at load)'],
  [33, 'Q4_0_8_8 (removed from ggml; repacking now happens at load)'],
  [36, 'IQ4_NL_4_4 (removed from ggml; repacking now happens at load)'],
  [37, 'IQ4_NL_4_8 (removed from ggml; repacking now happens at load)'],
  [38, 'IQ4_NL_8_8 (removed from ggml; repacking now happens at load)'],
]);

const BY_ID: ReadonlyMap<number, TypeTraits> = new Map(TABLE.map((tr) => [tr.id, tr]));
const BY_NAME: ReadonlyMap<string, TypeTraits> = new Map(TABLE.map((tr) => [tr.name, tr]));

/** Traits of a known type id, or undefined for an id ggml never defined (or removed). */
export function typeTraits(id: number): TypeTraits | undefined {
  return BY_ID.get(id);
}

/** Traits of a type id that must be known (throws otherwise: programming error). */
export function traitsOf(id: number): TypeTraits {
  const tr = BY_ID.get(id);
  if (!tr) throw new RangeError(`unknown ggml type id ${id}`);
  return tr;
}

export function typeByName(name: string): TypeTraits | undefined {
  return BY_NAME.get(name.toUpperCase());
}

/** Human-readable name of any id, including removed and unknown ones. */
export function typeName(id: number): string {
  return BY_ID.get(id)?.name ?? REMOVED.get(id) ?? `unknown type id ${id}`;
}

export function allTypes(): readonly TypeTraits[] {
  return TABLE;
}

/** Bytes taken by one row of `n` elements; n must be a multiple of the block size. */
export function rowSize(type: number, n: number): number {
  const tr = traitsOf(type);
  return (n / tr.blockSize) * tr.typeSize;
}
