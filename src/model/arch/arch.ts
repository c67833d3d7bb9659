// What one architecture file provides (the shape of llama.cpp's src/models/<arch>.cpp):
// the tensors it reads with their shapes, optional adjustments to the shared
// hyper-parameters, and the graph builder for one ubatch.

import type { Tensor } from '../../ggml/tensor.js';
import type { GGUFFile } from '../../gguf/index.js';
import type { GraphBuilder, GraphOutputs, RankHead, RopeConfig } from '../graph.js';
import type { HParams } from '../hparams.js';
import type { TensorList, Weights } from '../weights.js';

export interface Architecture {
  /** `general.architecture` value. */
  readonly name: string;
  /** Whether it keeps a KV cache (decoders) or attends within each batch (encoders). */
  readonly usesKVCache: boolean;
  /** RoPE mode of its keys (for re-rotating shifted cache cells); absent without RoPE. */
  readonly ropeMode?: number;
  /**
   * The RoPE of layer il's keys, for re-rotating shifted cache cells, when it is not
   * `ropeMode` with `rope_freqs.weight` (per-layer factors, layers without RoPE: null).
   */
  keyRope?(hp: HParams, w: Weights, il: number, nCtx: number): RopeConfig | null;
  /** RoPE must rotate the whole head (`rope.dimension_count` = head size) and V heads be K's size, as llama.cpp asserts. */
  readonly ropeWholeHead?: boolean;
  /**
   * `{arch}.*` keys the file must have (llama.cpp's loader reads them without a default and
   * refuses a file without them), e.g. `attention.layer_norm_rms_epsilon`.
   */
  readonly requiredKeys?: readonly string[];
  /** Keys and values must have one head size (`attention.key_length` = `value_length`), as its llama.cpp graph asserts. */
  readonly equalHeadSizes?: boolean;
  /** How it ranks with pooling_type rank (a classification head); absent: it cannot. */
  readonly rank?: RankHead;
  /**
   * Where the rotated part of a cached key row starts (elements; default 0): DeepSeek's
   * latent keys put the RoPE dimensions after the compressed latent.
   */
  keyRopeOffset?(hp: HParams): number;
  /** V rows are read from the K rows (one latent cache, no V written; see KVCache.vFromK). */
  readonly vFromK?: boolean;
  /** Adjust or complete the shared hyper-parameters from architecture-specific keys. */
  hparams?(hp: HParams, file: GGUFFile): HParams;
  /** The tensors it reads, with their expected shapes. */
  tensors(hp: HParams, t: TensorList): void;
  /** The forward graph of one ubatch. */
  build(b: GraphBuilder): GraphOutputs;
  /**
   * Layers applied to pooled embeddings ([nEmbd, nSeq] F32), as llama.cpp's dense output
   * (EmbeddingGemma's projections); null when the file has none.
   */
  pooledHead?(w: Weights, pooled: Tensor): Tensor | null;
}
