// llama.cpp's file types (llama_ftype): what general.file_type records and what
// llama-quantize's TYPE argument names, each with the tensor type most tensors get.

import { GGMLType } from '../ggml/types.js';

/** The file types llama-ts can write (llama-quantize's, less those of types it cannot compute). */
export const FILE_TYPES = {
  F32: { ftype: 0, base: GGMLType.F32 },
  F16: { ftype: 1, base: GGMLType.F16 },
  Q4_0: { ftype: 2, base: GGMLType.Q4_0 },
  Q4_1: { ftype: 3, base: GGMLType.Q4_1 },
  Q8_0: { ftype: 7, base: GGMLType.Q8_0 },
  Q5_0: { ftype: 8, base: GGMLType.Q5_0 },
  Q5_1: { ftype: 9, base: GGMLType.Q5_1 },
  Q2_K: { ftype: 10, base: GGMLType.Q2_K },
  Q3_K_S: { ftype: 11, base: GGMLType.Q3_K },
  Q3_K_M: { ftype: 12, base: GGMLType.Q3_K },
  Q3_K_L: { ftype: 13, base: GGMLType.Q3_K },
  Q4_K_S: { ftype: 14, base: GGMLType.Q4_K },
  Q4_K_M: { ftype: 15, base: GGMLType.Q4_K },
  Q5_K_S: { ftype: 16, base: GGMLType.Q5_K },
  Q5_K_M: { ftype: 17, base: GGMLType.Q5_K },
  Q6_K: { ftype: 18, base: GGMLType.Q6_K },
  IQ2_XXS: { ftype: 19, base: GGMLType.IQ2_XXS },
  IQ2_XS: { ftype: 20, base: GGMLType.IQ2_XS },
  Q2_K_S: { ftype: 21, base: GGMLType.Q2_K },
  IQ3_XS: { ftype: 22, base: GGMLType.IQ3_S },
  IQ3_XXS: { ftype: 23, base: GGMLType.IQ3_XXS },
  IQ1_S: { ftype: 24, base: GGMLType.IQ1_S },
  IQ4_NL: { ftype: 25, base: GGMLType.IQ4_NL },
  IQ3_S: { ftype: 26, base: GGMLType.IQ3_S },
  IQ3_M: { ftype: 27, base: GGMLType.IQ3_S },
  // llama.cpp's IQ2_S file type is mostly IQ2_XS tensors; IQ2_M is mostly IQ2_S
  IQ2_S: { ftype: 28, base: GGMLType.IQ2_XS },
  IQ2_M: { ftype: 29, base: GGMLType.IQ2_S },
  IQ4_XS: { ftype: 30, base: GGMLType.IQ4_XS },
  IQ1_M: { ftype: 31, base: GGMLType.IQ1_M },
  BF16: { ftype: 32, base: GGMLType.BF16 },
  TQ1_0: { ftype: 36, base: GGMLType.TQ1_0 },
  TQ2_0: { ftype: 37, base: GGMLType.TQ2_0 },
  /** MXFP4_MOE: expert stacks MXFP4, every other matrix Q8_0. */
  MXFP4_MOE: { ftype: 38, base: GGMLType.MXFP4 },
} as const satisfies Record<string, { ftype: number; base: GGMLType }>;

export type FileTypeName = keyof typeof FILE_TYPES;

export function isFileTypeName(s: string): s is FileTypeName {
  return Object.hasOwn(FILE_TYPES, s);
}

/** llama-quantize's short names for the _M mixes. */
const ALIASES: Readonly<Record<string, FileTypeName>> = { Q3_K: 'Q3_K_M', Q4_K: 'Q4_K_M', Q5_K: 'Q5_K_M' };

/** The file type named (any case, or an alias) or numbered by `s`, as llama-quantize parses its TYPE. */
export function parseFileType(s: string): FileTypeName | undefined {
  const up = s.toUpperCase();
  if (isFileTypeName(up)) return up;
  if (ALIASES[up]) return ALIASES[up];
  if (/^\d+$/.test(s)) {
    const n = Number(s);
    return (Object.keys(FILE_TYPES) as FileTypeName[]).find((k) => FILE_TYPES[k].ftype === n);
  }
  return undefined;
}

/** The name of file type id `ftype` (general.file_type), if llama-ts knows it. */
export function fileTypeName(ftype: number): FileTypeName | undefined {
  return (Object.keys(FILE_TYPES) as FileTypeName[]).find((k) => FILE_TYPES[k].ftype === ftype);
}
