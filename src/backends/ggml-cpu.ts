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
