// Hyper-parameters of a model, read from its GGUF metadata (`{arch}.*` keys) with
// llama.cpp's defaults for keys a file may omit.

import { type GGUFFile, isArrayValue } from '../gguf/index.js';
import { logger } from '../log.js';
import { ModelError } from './errors.js';
import { type ExpertParams, readExpertParams } from './experts.js';

const log = logger('model');

/**
 * How per-token embeddings become one per sequence (llama_pooling_type); 'rank': a
 * reranker's classification head on one token per sequence (its scores).
 */
export type PoolingType = 'none' | 'mean' | 'cls' | 'last' | 'rank';

/** GGUF `{arch}.pooling_type` values. */
const POOLING_BY_ID: Record<number, PoolingType> = { 0: 'none', 1: 'mean', 2: 'cls', 3: 'last', 4: 'rank' };

export type RopeScaling = 'none' | 'linear' | 'yarn' | 'longrope';

/**
 * How a sliding-window layer masks (llama_swa_type): 'standard' hides keys W or more
 * positions behind the query, 'chunked' keys before the query's chunk of W, 'symmetric'
 * keys more than W/2 away on either side (bidirectional encoders).
 */
export type SwaType = 'none' | 'standard' | 'chunked' | 'symmetric';

export interface HParams {
  arch: string;
  /** Context length the model was trained with. */
  nCtxTrain: number;
  nEmbd: number;
  /** Layers the graph evaluates: `block_count` less the multi-token-prediction layers. */
  nLayer: number;
  /**
   * Multi-token-prediction layers (`nextn_predict_layers`): the file's last blocks, from
   * nLayer on, which llama.cpp loads only for drafting; an architecture that has them lists
   * their tensors as skipped (TensorList.skipped), any other refuses their tensors.
   */
  nLayerNextn: number;
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
  /** Mixture of experts (null: a dense model). */
  moe: ExpertParams | null;

  // ---- per layer (a GGUF key may hold one value or one per layer: get_key_or_arr) ----
  nHeadArr: number[];
  nHeadKvArr: number[];
  nFfArr: number[];

  // ---- sliding-window attention ----
  swaType: SwaType;
  /** Window size W in tokens (0 without sliding-window layers). */
  nSwa: number;
  /** Whether layer il attends through the window (all false without). */
  swaLayers: boolean[];
  /** Head sizes and rotated dimensions of sliding-window layers (default: the full layers'). */
  nEmbdHeadKSwa: number;
  nEmbdHeadVSwa: number;
  nRotSwa: number;
  /** RoPE base and scale of sliding-window layers (llama.cpp's defaults: 10000, 1). */
  ropeFreqBaseSwa: number;
  ropeFreqScaleSwa: number;

  // ---- extras some architectures set ----
  /** tanh soft-capping of attention scores (c·tanh(s/c)); 0: none. */
  attnSoftcap: number;
  /** tanh soft-capping of the output logits; 0: none. */
  finalSoftcap: number;
  /**
   * Layers [0, nLayerKv) keep their own K/V; later layers read the cache of the last
   * earlier layer of the same kind (Gemma 3n/4's shared KV). Default nLayer.
   */
  nLayerKv: number;
  /** `rope.scaling.attn_factor` (LongRoPE's magnitude correction), default 1. */
  ropeAttnFactor: number;
  /** Width of Gemma 3n/4's per-layer token embeddings (0: none). */
  nEmbdPerLayer: number;
  /**
   * Qwen3-VL's deepstack (`n_deepstack_layers`, 0: none): an embedding input row is then
   * nEmbd·(1 + nDeepstack) wide, its extra slices added to the outputs of the first layers.
   */
  nDeepstack: number;

  // ---- recurrent layers (Mamba-2, Gated DeltaNet, short convolutions) ----
  /** Whether layer il keeps a recurrent state instead of K/V (an architecture sets it; all false without). */
  recurrentLayers: boolean[];
  /** `ssm.conv_kernel`, `ssm.inner_size`, `ssm.state_size`, `ssm.time_step_rank`, `ssm.group_count` (0: absent). */
  ssmDConv: number;
  ssmDInner: number;
  ssmDState: number;
  ssmDtRank: number;
  ssmNGroup: number;
  /** LFM2's short-convolution length (`shortconv.l_cache`), 0 without. */
  shortConvL: number;
  /** Multi-section RoPE: rotated pairs per position component (`rope.dimension_sections`), [] without. */
  ropeSections: number[];
  /** Granite's multipliers (`embedding_scale`, `residual_scale`, `logit_scale`, `attention.scale`); 0: none. */
  embeddingScale: number;
  residualScale: number;
  logitScale: number;
  attentionScale: number;
  /** `rope.scaling.finetuned` (Granite: false means no RoPE), default true. */
  ropeFinetuned: boolean;
}

/** Whether layer il keeps a recurrent state (no K/V). */
export function isRecurrent(hp: HParams, il: number): boolean {
  return hp.recurrentLayers[il] === true;
}

/**
 * Width of a sequence's convolution state in each recurrent layer (llama.cpp's n_embd_r):
 * the last (kernel - 1) inputs of every channel.
 */
export function nEmbdR(hp: HParams): number {
  if (hp.shortConvL > 0) return hp.nEmbd * (hp.shortConvL - 1);
  return Math.max(0, hp.ssmDConv - 1) * (hp.ssmDInner + 2 * hp.ssmNGroup * hp.ssmDState);
}

/** Width of an embedding input row (llama.cpp's n_embd_inp): nEmbd, times 1 + the deepstack slices. */
export function embdInputWidth(hp: HParams): number {
  return hp.nEmbd * (1 + hp.nDeepstack);
}

/** Width of a sequence's scan / delta-rule state in each recurrent layer (llama.cpp's n_embd_s). */
export function nEmbdS(hp: HParams): number {
  return hp.ssmDState * hp.ssmDInner;
}

export function isSwa(hp: HParams, il: number): boolean {
  return hp.swaLayers[il] === true;
}

export function headCount(hp: HParams, il: number): number {
  return hp.nHeadArr[il];
}

export function headCountKv(hp: HParams, il: number): number {
  return hp.nHeadKvArr[il];
}

export function ffLength(hp: HParams, il: number): number {
  return hp.nFfArr[il];
}

/** Key size per head of layer il. */
export function headDimK(hp: HParams, il: number): number {
  return isSwa(hp, il) ? hp.nEmbdHeadKSwa : hp.nEmbdHeadK;
}

export function headDimV(hp: HParams, il: number): number {
  return isSwa(hp, il) ? hp.nEmbdHeadVSwa : hp.nEmbdHeadV;
}

/** Rotated dimensions per head of layer il. */
export function ropeDims(hp: HParams, il: number): number {
  return isSwa(hp, il) ? hp.nRotSwa : hp.nRot;
}

export function ropeFreqBase(hp: HParams, il: number): number {
  return isSwa(hp, il) ? hp.ropeFreqBaseSwa : hp.ropeFreqBase;
}

export function ropeFreqScale(hp: HParams, il: number): number {
  return isSwa(hp, il) ? hp.ropeFreqScaleSwa : hp.ropeFreqScale;
}

/** The layer whose K/V cache layer il reads (itself unless it shares an earlier layer's). */
export function kvSourceLayer(hp: HParams, il: number): number {
  if (il < hp.nLayerKv) return il;
  // llama.cpp's reuse rule: the last two KV layers are one sliding-window and one full layer
  return hp.nLayerKv - (isSwa(hp, il) ? 2 : 1);
}

/**
 * llama.cpp's set_swa_pattern: with period n, every n-th layer is full and the others
 * slide (the last of each group of n is full; `denseFirst`: the first); n = 0: all slide.
 */
export function swaPattern(nLayer: number, period: number, denseFirst = false): boolean[] {
  return Array.from({ length: nLayer }, (_, il) =>
    denseFirst ? period === 0 || il % period !== 0 : period === 0 || il % period < period - 1,
  );
}

/** Whether a key at position p0 is hidden from a query at p1 by the window (llama_hparams::is_masked_swa). */
export function maskedBySwa(type: SwaType, nSwa: number, p0: number, p1: number): boolean {
  switch (type) {
    case 'standard':
      return p1 - p0 >= nSwa;
    case 'chunked':
      return p0 < Math.floor(p1 / nSwa) * nSwa;
    case 'symmetric': {
      const half = Math.floor(nSwa / 2);
      const d = p1 - p0;
      return d < -half || d > half;
    }
    default:
      return false;
  }
}

/** K row width (all KV heads) of layer il (default: layer 0). */
export function nEmbdK(hp: HParams, il = 0): number {
  return headDimK(hp, il) * headCountKv(hp, il);
}

/** V row width of layer il (default: layer 0). */
export function nEmbdV(hp: HParams, il = 0): number {
  return headDimV(hp, il) * headCountKv(hp, il);
}

/**
 * A key that holds one number for all layers or an array of one per layer (llama.cpp's
 * get_key_or_arr); an array of another length is an error naming the key.
 */
export function readPerLayer(file: GGUFFile, key: string, nLayer: number, fallback: number | undefined): number[] {
  const kv = file.get(key);
  if (kv && isArrayValue(kv.value)) {
    const items = Array.from(kv.value.items as ArrayLike<unknown>);
    if (items.length !== nLayer) {
      throw new ModelError(`${file.path}: '${key}' has ${items.length} values; expected one per layer (${nLayer})`);
    }
    return items.map((x, il) => {
      const n = typeof x === 'bigint' ? Number(x) : x;
      if (typeof n !== 'number' || !Number.isFinite(n)) {
        throw new ModelError(`${file.path}: '${key}'[${il}] is not a number`);
      }
      return n;
    });
  }
  const v = fallback === undefined ? file.getNumber(key) : file.getNumber(key, fallback);
  return new Array<number>(nLayer).fill(v);
}

/**
 * `attention.sliding_window_pattern`: a period (every n-th layer full, as set_swa_pattern)
 * or one bool per layer (true: sliding window). Absent: the period `defaultPeriod`.
 * `arrays` false: the architecture's llama.cpp loader reads a period only, and passes over
 * an array (its get_key_or_arr into one number), so an array means the default period too.
 */
export function readSwaPattern(
  file: GGUFFile,
  key: string,
  nLayer: number,
  defaultPeriod: number,
  arrays = true,
): boolean[] {
  const kv = file.get(key);
  if (kv && isArrayValue(kv.value) && !arrays) {
    log.warn(
      `${file.path}: '${key}' is an array; llama.cpp reads only a period here and uses ${defaultPeriod}, as we do`,
    );
    return swaPattern(nLayer, defaultPeriod);
  }
  if (kv && isArrayValue(kv.value)) {
    const items = Array.from(kv.value.items as ArrayLike<unknown>);
    if (items.length !== nLayer) {
      throw new ModelError(`${file.path}: '${key}' has ${items.length} values; expected one per layer (${nLayer})`);
    }
    return items.map((x) => x === true || (typeof x === 'number' && x !== 0));
  }
  return swaPattern(nLayer, file.getNumber(key, defaultPeriod));
}

/**
 * A flag per layer from an array of one per layer, or one value for every layer
 * (llama.cpp's get_key_or_arr into per-layer flags, as gemma4's sliding-window pattern).
 */
export function readLayerFlags(file: GGUFFile, key: string, nLayer: number): boolean[] {
  const kv = file.get(key);
  if (kv && isArrayValue(kv.value)) return readSwaPattern(file, key, nLayer, 0);
  const v = kv?.value;
  const on = v === true || (typeof v === 'number' && v !== 0) || (typeof v === 'bigint' && v !== 0n);
  return new Array<boolean>(nLayer).fill(on);
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
  /** A finite real, 0 when absent. */
  const finite = (k: string): number => {
    const v = num(k, 0);
    if (!Number.isFinite(v)) throw bad(k, v, 'must be a finite number');
    return v;
  };
  /** A count per layer (one value or one per layer), each an integer ≥ min. */
  const perLayer = (k: string, fallback: number | undefined, min: number): number[] => {
    const vs = readPerLayer(file, key(k), nLayer, fallback);
    for (const v of vs) if (!Number.isInteger(v) || v < min) throw bad(k, v, `is not an integer ≥ ${min}`);
    return vs;
  };
  const nEmbd = int('embedding_length', undefined, 1);
  const nLayer = int('block_count', undefined, 1);
  if (nLayer > MAX_LAYERS) throw bad('block_count', nLayer, `is more than ${MAX_LAYERS} layers`);
  const nLayerNextn = int('nextn_predict_layers', 0, 0);
  if (nLayerNextn >= nLayer) throw bad('nextn_predict_layers', nLayerNextn, `must be less than block_count ${nLayer}`);
  const nHeadArr = perLayer('attention.head_count', undefined, 1);
  // 0 KV heads marks a layer without attention (a recurrent layer: LFM2, Granite 4, Nemotron-H)
  const nHeadKvArr = file.has(key('attention.head_count_kv'))
    ? perLayer('attention.head_count_kv', undefined, 0)
    : nHeadArr.slice();
  const nFfArr = perLayer('feed_forward_length', 0, 0);
  const nHead = nHeadArr[0];
  // a head size given by the file need not divide the embedding length (Gemma)
  const explicitHeadSize = file.has(key('attention.key_length')) && file.has(key('attention.value_length'));
  if (!explicitHeadSize && nEmbd % nHead !== 0) {
    throw new ModelError(`${file.path}: head count ${nHead} does not divide embedding length ${nEmbd}`);
  }
  for (let il = 0; il < nLayer; il++) {
    if (nHeadKvArr[il] !== 0 && nHeadArr[il] % nHeadKvArr[il] !== 0) {
      throw new ModelError(
        `${file.path}: layer ${il}: KV head count ${nHeadKvArr[il]} does not divide head count ${nHeadArr[il]}`,
      );
    }
  }
  const nHeadKv = nHeadKvArr[0];
  const nEmbdHeadK = int('attention.key_length', Math.floor(nEmbd / nHead), 1);
  const nEmbdHeadV = int('attention.value_length', Math.floor(nEmbd / nHead), 1);
  const nCtxTrain = int('context_length', undefined, 0);

  let ropeScaling: RopeScaling = 'none';
  const scalingName = file.getString(key('rope.scaling.type'), 'none');
  if (scalingName === 'linear' || scalingName === 'yarn' || scalingName === 'longrope') ropeScaling = scalingName;
  else if (scalingName !== 'none') {
    throw new ModelError(
      `${file.path}: rope scaling '${scalingName}' is not supported; supported: none, linear, yarn, longrope`,
    );
  }
  const factorKey = file.has(key('rope.scaling.factor')) ? 'rope.scaling.factor' : 'rope.scale_linear';
  const factor = num(factorKey, 0);
  if (!Number.isFinite(factor) || factor < 0) throw bad(factorKey, factor, 'must be a finite number ≥ 0 (0: none)');
  if (factor !== 0 && ropeScaling === 'none' && !file.has(key('rope.scaling.type'))) ropeScaling = 'linear';
  const ropeFreqScale = factor > 0 && ropeScaling !== 'none' ? 1 / factor : 1;

  let nVocab = int('vocab_size', 0, 0);
  if (nVocab === 0) nVocab = file.getStringArray('tokenizer.ggml.tokens', []).length;

  const poolingId = num('pooling_type', -1);
  const nRot = int('rope.dimension_count', nEmbdHeadK, 0);
  const nEmbdHeadKSwa = int('attention.key_length_swa', nEmbdHeadK, 1);
  return {
    arch,
    nCtxTrain,
    nEmbd,
    nLayer: nLayer - nLayerNextn,
    nLayerNextn,
    nFf: nFfArr[0],
    nHead,
    nHeadKv,
    nEmbdHeadK,
    nEmbdHeadV,
    nRot,
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
    moe: readExpertParams(file, arch, (k) => readPerLayer(file, k, nLayer, 0)),
    nHeadArr,
    nHeadKvArr,
    nFfArr,
    // an architecture with sliding-window layers sets the kind, window and pattern
    swaType: 'none',
    nSwa: 0,
    swaLayers: new Array<boolean>(nLayer).fill(false),
    nEmbdHeadKSwa,
    nEmbdHeadVSwa: int('attention.value_length_swa', nEmbdHeadV, 1),
    nRotSwa: int('rope.dimension_count_swa', nRot, 0),
    ropeFreqBaseSwa: 10000,
    ropeFreqScaleSwa: 1,
    attnSoftcap: 0,
    finalSoftcap: 0,
    nLayerKv: nLayer - nLayerNextn,
    ropeAttnFactor: positive('rope.scaling.attn_factor', 1),
    nEmbdPerLayer: int('embedding_length_per_layer_input', 0, 0),
    nDeepstack: int('n_deepstack_layers', 0, 0),
    recurrentLayers: new Array<boolean>(nLayer).fill(false),
    ssmDConv: int('ssm.conv_kernel', 0, 0),
    ssmDInner: int('ssm.inner_size', 0, 0),
    ssmDState: int('ssm.state_size', 0, 0),
    ssmDtRank: int('ssm.time_step_rank', 0, 0),
    ssmNGroup: int('ssm.group_count', 0, 0),
    shortConvL: int('shortconv.l_cache', 0, 0),
    ropeSections: file.has(key('rope.dimension_sections'))
      ? readPerLayer(file, key('rope.dimension_sections'), 4, 0)
      : [],
    embeddingScale: finite('embedding_scale'),
    residualScale: finite('residual_scale'),
    logitScale: finite('logit_scale'),
    attentionScale: finite('attention.scale'),
    ropeFinetuned: file.getBool(key('rope.scaling.finetuned'), true),
  };
}

/**
 * What an architecture with RoPE needs of the rotated dimensions: an even count, at most
 * the head size (ggml's rope rotates pairs within a head); `exact` (llama, qwen2moe,
 * qwen3moe, as llama.cpp asserts for them): the whole head, and values of the keys' size.
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
  if (exact && hp.nEmbdHeadV !== hp.nEmbdHeadK) {
    throw new ModelError(
      `${path}: ${hp.arch}.attention.value_length = ${hp.nEmbdHeadV} must equal key_length ${hp.nEmbdHeadK} for ${hp.arch} (as llama.cpp requires)`,
    );
  }
  if (hp.swaLayers.some((x) => x)) {
    const ks = `${hp.arch}.rope.dimension_count_swa`;
    if (hp.nRotSwa > hp.nEmbdHeadKSwa || hp.nRotSwa === 0 || hp.nRotSwa % 2 !== 0) {
      throw new ModelError(
        `${path}: ${ks} = ${hp.nRotSwa} must be even, > 0 and at most the sliding-window head size ${hp.nEmbdHeadKSwa}`,
      );
    }
  }
}
