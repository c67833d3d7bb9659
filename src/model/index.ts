// The model layer: architectures (one file each), loading, contexts with their memory (KV caches).
export type { Architecture } from './arch/arch.js';
export { architecture, supportedArchitectures } from './arch/registry.js';
export { type Batch, Context, type ContextParams, type Intermediate, l2Normalize } from './context.js';
export { ContextError, KVCacheFullError, ModelError } from './errors.js';
export { GraphBuilder, type GraphInputs, type GraphOutputs, type RankHead, type UbatchShape } from './graph.js';
export { type HParams, type PoolingType, readHParams } from './hparams.js';
export { type ActiveLora, LoraAdapter, type LoraWeight, loraKey } from './lora.js';
export {
  type AttentionMemory,
  CACHE_TYPES,
  type CacheType,
  createMemory,
  HybridMemory,
  KVCache,
  KVCacheISWA,
  MAX_SEQ,
  type Memory,
  RecurrentState,
} from './memory/index.js';
export { defaultDevices, type LoadOptions, Model } from './model.js';
export { rerankScore, rerankTokens } from './rerank.js';
export { TensorList, type TensorSpec, Weights } from './weights.js';
