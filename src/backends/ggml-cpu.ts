// Facts about ggml-cpu's arithmetic that both the reference device's ggml-cpu numerics and
// the CPU device follow, so that their results match llama.cpp's CPU backend.

import { GGMLType } from '../ggml/types.js';

/** ggml-cpu's GGML_FA_TILE_Q: flash attention over fewer query rows runs row by row. */
export const FA_TILE_Q = 64;

/**
 * Whether ggml-cpu computes a FLASH_ATTN_EXT with its tiled kernel (F32 queries, K and V
 * of one type, F32 or F16, at least FA_TILE_Q query rows) rather than its one-chunk kernel
 * (each query row over the keys in order, V summed in f16 when V is F16).
 */
export function flashAttnTiled(q: { type: number; ne: readonly number[] }, kType: number, vType: number): boolean {
  const kvOk = kType === GGMLType.F32 || kType === GGMLType.F16;
  return q.type === GGMLType.F32 && kvOk && kType === vType && q.ne[1] >= FA_TILE_Q;
}

/**
 * ggml-cpu's split-KV case: one query token (decoding one sequence) against at least 512
 * keys of an F16/F32 cache. ggml-cpu cuts the keys into one chunk per thread, so its
 * results depend on the thread count; llama-ts cuts them into chunks of FA_SPLIT_KEYS and
 * runs each chunk with the tiled arithmetic, then folds the chunks in order as ggml-cpu
 * does (ggml_flash_attn_ext_reduce_partials).
 */
export function flashAttnSplit(
  q: { type: number; ne: readonly number[] },
  kType: number,
  vType: number,
  nKV: number,
): boolean {
  const kvOk = kType === GGMLType.F32 || kType === GGMLType.F16;
  return q.type === GGMLType.F32 && kvOk && kType === vType && q.ne[1] === 1 && q.ne[3] === 1 && nKV >= 512;
}

/** Keys per chunk of the split case (a multiple of the tiled kernel's 32-key blocks). */
export const FA_SPLIT_KEYS = 256;
