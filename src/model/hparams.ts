// Hyper-parameters of a model, read from its GGUF metadata (`{arch}.*` keys) with
// llama.cpp's defaults for keys a file may omit.

import type { GGUFFile } from '../gguf/index.js';
import { ModelError } from './errors.js';
import { type ExpertParams, readExpertParams } from './experts.js';

/** How per-token embeddings become one per sequence (llama_pooling_type). */
export type PoolingType = 'none' | 'mean' | 'cls' | 'last';

/** GGUF `{arch}.pooling_type` values. */
const POOLING_BY_ID: Record<number, PoolingType> = { 0: 'none', 1: 'mean', 2: 'cls', 3: 'last' };

export type RopeScaling = 'none' | 'linear' | 'yarn';

export interface HParams {
  arch: string;
  /** Context length the model was trained with. */
  nCtxTrain: number;
  nEmbd: number;
  nLayer: number;
  nFf: number;
  nHead: number;
  nHeadKv: number;
  /** Per-head key and value sizes (`attention.key_length`, default nEmbd / nHead). */
  nEmbdHeadK: number;
  nEmbdHeadV: number;
  /** Rotated dimensions per head (`rope.dimension_count`, default the head size). */
  nRot: number;
  /** LayerNorm epsilon (BERT) and RMSNorm epsilon (llama family). */
  normEps: number;
  normRmsEps: number;
  ropeFreqBase: number;
  /** 1 / scaling factor (linear and YaRN scaling), 1 without scaling. */
  ropeFreqScale: number;
  ropeScaling: RopeScaling;
  /** Context length before scaling (YaRN), default nCtxTrain. */
  nCtxOrig: number;
  nVocab: number;
  /** Causal attention (decoders); false for BERT-style encoders. */
  causal: boolean;
  /** The model's pooling for embeddings; 'none' when it does not say. */
  pooling: PoolingType;
  /** Mixture of experts (null: a dense model). */
  moe: ExpertParams | null;
  /** ggml's RoPE attn_factor (default 1; DeepSeek-2 cancels YaRN's magnitude scaling with it). */
  ropeAttnFactor?: number;
}

export function nEmbdK(hp: HParams): number {
  return hp.nEmbdHeadK * hp.nHeadKv;
}

export function nEmbdV(hp: HParams): number {
  return hp.nEmbdHeadV * hp.nHeadKv;
}

/** Reads the hyper-parameters every supported architecture shares. */
export function readHParams(file: GGUFFile, arch: string): HParams {
  const key = (k: string) => `${arch}.${k}`;
  const num = (k: string, fallback?: number): number => {
    const v = fallback === undefined ? file.getNumber(key(k)) : file.getNumber(key(k), fallback);
    return v;
  };
  const nEmbd = num('embedding_length');
  const nHead = num('attention.head_count');
  if (!(nHead > 0) || nEmbd % nHead !== 0) {
    throw new ModelError(`${file.path}: head count ${nHead} does not divide embedding length ${nEmbd}`);
  }
  const nHeadKv = num('attention.head_count_kv', nHead);
  if (!(nHeadKv > 0) || nHead % nHeadKv !== 0) {
    throw new ModelError(`${file.path}: KV head count ${nHeadKv} does not divide head count ${nHead}`);
  }
  const nEmbdHeadK = num('attention.key_length', nEmbd / nHead);
  const nEmbdHeadV = num('attention.value_length', nEmbd / nHead);
  const nCtxTrain = num('context_length');

  let ropeScaling: RopeScaling = 'none';
  const scalingName = file.getString(key('rope.scaling.type'), 'none');
  if (scalingName === 'linear' || scalingName === 'yarn') ropeScaling = scalingName;
  else if (scalingName !== 'none') {
    throw new ModelError(`${file.path}: rope scaling '${scalingName}' is not supported; supported: none, linear, yarn`);
  }
  let factor = num('rope.scaling.factor', 0);
  if (factor === 0) factor = num('rope.scale_linear', 0);
  if (factor !== 0 && ropeScaling === 'none' && !file.has(key('rope.scaling.type'))) ropeScaling = 'linear';
  const ropeFreqScale = factor > 0 && ropeScaling !== 'none' ? 1 / factor : 1;

  let nVocab = num('vocab_size', 0);
  if (nVocab === 0) nVocab = file.getStringArray('tokenizer.ggml.tokens', []).length;

  const poolingId = num('pooling_type', -1);
  return {
    arch,
    nCtxTrain,
    nEmbd,
    nLayer: num('block_count'),
    nFf: num('feed_forward_length', 0),
    nHead,
    nHeadKv,
    nEmbdHeadK,
    nEmbdHeadV,
    nRot: num('rope.dimension_count', nEmbdHeadK),
    normEps: num('attention.layer_norm_epsilon', 1e-5),
    normRmsEps: num('attention.layer_norm_rms_epsilon', 1e-5),
    ropeFreqBase: num('rope.freq_base', 10000),
    ropeFreqScale,
    ropeScaling,
    nCtxOrig: num('rope.scaling.original_context_length', nCtxTrain),
    nVocab,
    causal: file.getBool(key('attention.causal'), true),
    pooling: POOLING_BY_ID[poolingId] ?? 'none',
    moe: readExpertParams(file, arch),
  };
}
