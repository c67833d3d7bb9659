// Hyper-parameters of a model, read from its GGUF metadata (`{arch}.*` keys) with
// llama.cpp's defaults for keys a file may omit.

import type { GGUFFile } from '../gguf/index.js';
import { ModelError } from './errors.js';

/**
 * How per-token embeddings become one per sequence (llama_pooling_type); 'rank': a
 * reranker's classification head on one token per sequence (its scores).
 */
export type PoolingType = 'none' | 'mean' | 'cls' | 'last' | 'rank';

/** GGUF `{arch}.pooling_type` values. */
const POOLING_BY_ID: Record<number, PoolingType> = { 0: 'none', 1: 'mean', 2: 'cls', 3: 'last', 4: 'rank' };

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
  /** Outputs of a classification head (`classifier.output_labels`' length, default 1). */
  nClsOut: number;
}

export function nEmbdK(hp: HParams): number {
  return hp.nEmbdHeadK * hp.nHeadKv;
}

export function nEmbdV(hp: HParams): number {
  return hp.nEmbdHeadV * hp.nHeadKv;
}

/** llama.cpp's LLAMA_MAX_LAYERS. */
export const MAX_LAYERS = 512;

/** Reads the hyper-parameters every supported architecture shares. */
export function readHParams(file: GGUFFile, arch: string): HParams {
  const key = (k: string) => `${arch}.${k}`;
  const bad = (k: string, v: number, why: string) => new ModelError(`${file.path}: ${key(k)} = ${v} ${why}`);
  const num = (k: string, fallback?: number): number => {
    const v = fallback === undefined ? file.getNumber(key(k)) : file.getNumber(key(k), fallback);
    return v;
  };
  /** A count or size: an integer ≥ min (a float key with a fraction, or a negative one, cannot be one). */
  const int = (k: string, fallback: number | undefined, min: number): number => {
    const v = num(k, fallback);
    if (!Number.isInteger(v) || v < min) throw bad(k, v, `is not ${min === 0 ? 'a count' : `an integer ≥ ${min}`}`);
    return v;
  };
  /** A positive finite real (RoPE base, scaling factor). */
  const positive = (k: string, fallback: number): number => {
    const v = num(k, fallback);
    if (!Number.isFinite(v) || v <= 0) throw bad(k, v, 'must be a finite number > 0');
    return v;
  };
  /** An epsilon: finite and ≥ 0 (NaN or a negative one turns every norm into NaN). */
  const epsilon = (k: string): number => {
    const v = num(k, 1e-5);
    if (!Number.isFinite(v) || v < 0) throw bad(k, v, 'must be a finite number ≥ 0');
    return v;
  };
  const nEmbd = int('embedding_length', undefined, 1);
  const nHead = int('attention.head_count', undefined, 1);
  if (nEmbd % nHead !== 0) {
    throw new ModelError(`${file.path}: head count ${nHead} does not divide embedding length ${nEmbd}`);
  }
  const nHeadKv = int('attention.head_count_kv', nHead, 1);
  if (nHead % nHeadKv !== 0) {
    throw new ModelError(`${file.path}: KV head count ${nHeadKv} does not divide head count ${nHead}`);
  }
  const nExpert = int('expert_count', 0, 0);
  if (nExpert > 0) throw bad('expert_count', nExpert, 'experts: mixture-of-experts models are not supported');
  const nLayer = int('block_count', undefined, 1);
  if (nLayer > MAX_LAYERS) throw bad('block_count', nLayer, `is more than ${MAX_LAYERS} layers`);
  const nEmbdHeadK = int('attention.key_length', nEmbd / nHead, 1);
  const nEmbdHeadV = int('attention.value_length', nEmbd / nHead, 1);
  const nCtxTrain = int('context_length', undefined, 0);

  let ropeScaling: RopeScaling = 'none';
  const scalingName = file.getString(key('rope.scaling.type'), 'none');
  if (scalingName === 'linear' || scalingName === 'yarn') ropeScaling = scalingName;
  else if (scalingName !== 'none') {
    throw new ModelError(`${file.path}: rope scaling '${scalingName}' is not supported; supported: none, linear, yarn`);
  }
  const factorKey = file.has(key('rope.scaling.factor')) ? 'rope.scaling.factor' : 'rope.scale_linear';
  const factor = num(factorKey, 0);
  if (!Number.isFinite(factor) || factor < 0) throw bad(factorKey, factor, 'must be a finite number ≥ 0 (0: none)');
  if (factor !== 0 && ropeScaling === 'none' && !file.has(key('rope.scaling.type'))) ropeScaling = 'linear';
  const ropeFreqScale = factor > 0 && ropeScaling !== 'none' ? 1 / factor : 1;

  let nVocab = int('vocab_size', 0, 0);
  if (nVocab === 0) nVocab = file.getStringArray('tokenizer.ggml.tokens', []).length;

  const poolingId = num('pooling_type', -1);
  return {
    arch,
    nCtxTrain,
    nEmbd,
    nLayer,
    nFf: int('feed_forward_length', 0, 0),
    nHead,
    nHeadKv,
    nEmbdHeadK,
    nEmbdHeadV,
    nRot: int('rope.dimension_count', nEmbdHeadK, 0),
    normEps: epsilon('attention.layer_norm_epsilon'),
    normRmsEps: epsilon('attention.layer_norm_rms_epsilon'),
    ropeFreqBase: positive('rope.freq_base', 10000),
    ropeFreqScale,
    ropeScaling,
    nCtxOrig: int('rope.scaling.original_context_length', nCtxTrain, 0),
    nVocab,
    causal: file.getBool(key('attention.causal'), true),
    pooling: POOLING_BY_ID[poolingId] ?? 'none',
    nClsOut: Math.max(1, file.getStringArray(key('classifier.output_labels'), []).length),
  };
}

/**
 * What an architecture with RoPE needs of the rotated dimensions: an even count, at most
 * the head size (ggml's rope rotates pairs within a head); `exact` (llama, as llama.cpp
 * requires for it): the whole head.
 */
export function checkRope(hp: HParams, path: string, exact: boolean): void {
  const k = `${hp.arch}.rope.dimension_count`;
  const head = `the head size ${hp.nEmbdHeadK}`;
  if (hp.nRot > hp.nEmbdHeadK) throw new ModelError(`${path}: ${k} = ${hp.nRot} is larger than ${head}`);
  if (hp.nRot === 0 || hp.nRot % 2 !== 0) {
    throw new ModelError(`${path}: ${k} = ${hp.nRot} must be even and > 0 (RoPE rotates pairs of dimensions)`);
  }
  if (exact && hp.nRot !== hp.nEmbdHeadK) {
    throw new ModelError(`${path}: ${k} = ${hp.nRot} must equal ${head} for ${hp.arch} (as llama.cpp requires)`);
  }
}
