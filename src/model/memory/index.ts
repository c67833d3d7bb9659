// The memory a context gets for its model (llama.cpp's llama_model::create_memory): one KV
// cache, or a full and a sliding-window one when the model has sliding-window layers.

import type { BufferType } from '../../backends/index.js';
import { type HParams, isRecurrent, isSwa, kvSourceLayer, nEmbdR, nEmbdS } from '../hparams.js';
import { HybridMemory } from './hybrid.js';
import { type AttentionMemory, KVCache } from './kv-cache.js';
import { KVCacheISWA } from './kv-cache-iswa.js';
import type { CacheType } from './memory.js';
import { RecurrentState } from './recurrent.js';

export { HybridMemory } from './hybrid.js';
export { type AttentionMemory, KVCache, type KVCacheOptions } from './kv-cache.js';
export { KVCacheISWA, swaCacheSize } from './kv-cache-iswa.js';
export {
  CACHE_TYPES,
  type CacheType,
  type LayerKV,
  MAX_SEQ,
  type Memory,
  type StateCheck,
  type StateSink,
  type StateSource,
  type UbatchSeqs,
} from './memory.js';
export { RecurrentState } from './recurrent.js';

export interface MemoryParams {
  nCtx: number;
  nSeqMax: number;
  nUbatch: number;
  typeK: CacheType;
  typeV: CacheType;
  /** Buffer type of each layer's cache (its device). */
  layerBufts: readonly BufferType[];
  /** Sliding-window layers get a full-size cache too (no cell is ever reused). */
  swaFull: boolean;
  /** Recurrent states kept per sequence at known positions (models with recurrent layers). */
  checkpoints: number;
  /** V rows are the leading part of the K rows (a latent cache: KVCacheOptions.vFromK). */
  vFromK?: boolean;
}

export function createMemory(hp: HParams, p: MemoryParams): AttentionMemory {
  const attn = createAttentionMemory(hp, p);
  const recurrent = hp.recurrentLayers.flatMap((r, il) => (r ? [il] : []));
  if (recurrent.length === 0) return attn;
  const state = new RecurrentState({
    layers: recurrent,
    widthR: nEmbdR(hp),
    widthS: nEmbdS(hp),
    nSeqMax: p.nSeqMax,
    layerBufts: p.layerBufts,
    checkpoints: p.checkpoints,
  });
  return new HybridMemory(attn, state);
}

/** The recurrent state of a memory, or null. */
export function recurrentState(m: AttentionMemory | null): RecurrentState | null {
  return m instanceof HybridMemory ? m.recurrent : null;
}

function createAttentionMemory(hp: HParams, p: MemoryParams): AttentionMemory {
  const own: number[] = [];
  const reuse = new Map<number, number>();
  for (let il = 0; il < hp.nLayer; il++) {
    if (isRecurrent(hp, il)) continue;
    if (il < hp.nLayerKv) own.push(il);
    else reuse.set(il, kvSourceLayer(hp, il));
  }
  const common = { typeK: p.typeK, typeV: p.typeV, layerBufts: p.layerBufts, vFromK: p.vFromK ?? false };
  if (hp.swaType === 'none' || !hp.swaLayers.some((x) => x)) {
    return new KVCache(hp, { ...common, layers: own, reuse, size: p.nCtx, label: 'kv' });
  }
  return new KVCacheISWA(hp, {
    ...common,
    fullLayers: own.filter((il) => !isSwa(hp, il)),
    swaLayers: own.filter((il) => isSwa(hp, il)),
    reuse,
    swa: { type: hp.swaType, window: hp.nSwa },
    nCtx: p.nCtx,
    nSeqMax: p.nSeqMax,
    nUbatch: p.nUbatch,
    swaFull: p.swaFull,
  });
}
