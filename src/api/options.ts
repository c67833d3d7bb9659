// Option checks for the library API: every bad value is a LlamaError ('ERR_OPTION') that
// names the option, the value and what was expected. Sampling options are checked by
// src/sampling (SamplingError, mapped to the same code).
import { MAX_DRAFT, MAX_LORA } from '../generation/index.js';
import { MAX_SEQ } from '../model/index.js';
import { LlamaError } from './errors.js';
import type {
  CacheTypeOption,
  FlashAttnTypeOption,
  LibVariant,
  LlamaModelOptions,
  PoolingTypeOption,
} from './types.js';

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  if (typeof v === 'function') return 'a function';
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return String(v);
  }
}

export function optionError(name: string, value: unknown, reason: string): LlamaError {
  return new LlamaError('ERR_OPTION', `${name} = ${show(value)}: ${reason}`);
}

/** An integer option ≥ min (undefined/null: the fallback). */
export function intOption<T extends number | undefined>(name: string, v: unknown, fallback: T, min = 0): number | T {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw optionError(name, v, 'must be an integer');
  if (v < min) throw optionError(name, v, `must be at least ${min}`);
  return v;
}

export function boolOption(name: string, v: unknown, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw optionError(name, v, 'must be true or false');
  return v;
}

export function enumOption<T extends string>(name: string, v: unknown, allowed: readonly T[]): T | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v as T)) {
    throw optionError(name, v, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  }
  return v as T;
}

export function stringOption(name: string, v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw optionError(name, v, 'must be a string');
  return v;
}

export const POOLING_TYPES: readonly PoolingTypeOption[] = ['none', 'mean', 'cls', 'last', 'rank'];
export const CACHE_TYPES: readonly CacheTypeOption[] = ['f16', 'f32', 'q8_0'];
export const FLASH_ATTN_TYPES: readonly FlashAttnTypeOption[] = ['auto', 'on', 'off'];
export const LIB_VARIANTS: readonly LibVariant[] = ['default', 'vulkan', 'cuda', 'snapdragon'];

/** The model options the engine worker receives (plain data: no callbacks or signals). */
export interface EngineModelOptions {
  model: string;
  embedding: boolean;
  embd_normalize: number;
  pooling_type?: PoolingTypeOption;
  n_ctx?: number;
  n_batch?: number;
  n_ubatch?: number;
  n_parallel?: number;
  n_threads?: number;
  n_gpu_layers?: number;
  devices?: string[];
  cache_type_k: CacheTypeOption;
  cache_type_v: CacheTypeOption;
  flash_attn_type: FlashAttnTypeOption;
  ctx_shift: boolean;
  swa_full: boolean;
  chat_template?: string;
  lib_variant: LibVariant;
  template_limits?: LlamaModelOptions['template_limits'];
  grammar_limits?: LlamaModelOptions['grammar_limits'];
  lora_list: { path: string; scaled: number }[];
  model_draft?: string;
  spec_type?: 'draft' | 'ngram';
  draft_max: number;
  draft_min: number;
  draft_p_min: number;
  vocab_only: boolean;
}

/** llama-server's speculative defaults: 16 tokens at most, no minimum, p-min 0.8. */
export const DRAFT_DEFAULTS = { max: 16, min: 0, pMin: 0.8 } as const;

/** A list of { path, scaled } (scaled: a finite number, default 1); `name` for messages. */
export function loraListOption(name: string, v: unknown): { path: string; scaled: number }[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw optionError(name, v, 'must be an array of { path, scaled }');
  if (v.length > MAX_LORA) throw optionError(name, v, `must have at most ${MAX_LORA} adapters`);
  return v.map((e, i) => {
    const path = (e as { path?: unknown } | null)?.path;
    const scaled = (e as { scaled?: unknown } | null)?.scaled ?? 1;
    if (typeof path !== 'string' || path === '')
      throw optionError(`${name}[${i}].path`, path, 'must be the path of a LoRA adapter (GGUF)');
    if (typeof scaled !== 'number' || !Number.isFinite(scaled))
      throw optionError(`${name}[${i}].scaled`, scaled, 'must be a finite number');
    return { path, scaled };
  });
}

/** A number option within [min, max] (undefined/null: the fallback). */
function numberOption(name: string, v: unknown, fallback: number, min: number, max: number): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw optionError(name, v, `must be a number in [${min}, ${max}]`);
  }
  return v;
}

/** A plain object of numbers (the untrusted-work limits). */
function limitsOption<T>(name: string, v: unknown): T | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw optionError(name, v, 'must be an object of limits');
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'number' || !(x > 0)) throw optionError(`${name}.${k}`, x, 'must be a number > 0');
  }
  return { ...(v as T) };
}

const IGNORED = ['use_mlock', 'use_mmap'];

/** Checks loadModel's options (those that need no model); throws LlamaError. */
export function checkModelOptions(o: LlamaModelOptions): EngineModelOptions {
  if (o === null || typeof o !== 'object') throw optionError('options', o, 'must be an object with a model path');
  if (typeof o.model !== 'string' || o.model === '') {
    throw optionError('model', o.model, 'must be the path of a GGUF file');
  }
  for (const k of IGNORED) boolOption(k, (o as unknown as Record<string, unknown>)[k], false);
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    throw optionError('onProgress', o.onProgress, 'must be a function');
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw optionError('signal', o.signal, 'must be an AbortSignal');
  }
  let devices: string[] | undefined;
  if (o.devices !== undefined && o.devices !== null) {
    if (!Array.isArray(o.devices) || o.devices.length === 0 || !o.devices.every((d) => typeof d === 'string')) {
      throw optionError('devices', o.devices, 'must be a non-empty array of device names');
    }
    devices = [...o.devices];
  }
  const threads = intOption('n_threads', o.n_threads, undefined, -1);
  if (o.n_parallel !== undefined && o.n_parallel !== null && o.n_parallel > MAX_SEQ) {
    throw optionError('n_parallel', o.n_parallel, `must be at most ${MAX_SEQ}`);
  }
  const normalize = intOption('embd_normalize', o.embd_normalize, 2, -1);
  const out: EngineModelOptions = {
    model: o.model,
    embedding: boolOption('embedding', o.embedding, false),
    embd_normalize: normalize,
    pooling_type: enumOption('pooling_type', o.pooling_type, POOLING_TYPES),
    // 0: the model's training context (llama.cpp)
    n_ctx: intOption('n_ctx', o.n_ctx, undefined, 0),
    n_batch: intOption('n_batch', o.n_batch, undefined, 1),
    n_ubatch: intOption('n_ubatch', o.n_ubatch, undefined, 1),
    n_parallel: intOption('n_parallel', o.n_parallel, undefined, 1),
    // ≤ 0: the default, as llama.cpp's -1
    n_threads: threads !== undefined && threads > 0 ? threads : undefined,
    // -1: all layers
    n_gpu_layers: intOption('n_gpu_layers', o.n_gpu_layers, undefined, -1),
    devices,
    cache_type_k: enumOption('cache_type_k', o.cache_type_k, CACHE_TYPES) ?? 'f16',
    cache_type_v: enumOption('cache_type_v', o.cache_type_v, CACHE_TYPES) ?? 'f16',
    flash_attn_type:
      enumOption('flash_attn_type', o.flash_attn_type, FLASH_ATTN_TYPES) ??
      (o.flash_attn === undefined || o.flash_attn === null
        ? 'auto'
        : boolOption('flash_attn', o.flash_attn, true)
          ? 'on'
          : 'off'),
    ctx_shift: boolOption('ctx_shift', o.ctx_shift, true),
    swa_full: boolOption('swa_full', o.swa_full, false),
    chat_template: stringOption('chat_template', o.chat_template),
    lib_variant: enumOption('lib_variant', o.lib_variant, LIB_VARIANTS) ?? 'default',
    template_limits: limitsOption('template_limits', o.template_limits),
    grammar_limits: limitsOption('grammar_limits', o.grammar_limits),
    lora_list: [
      ...(o.lora !== undefined && o.lora !== null && o.lora !== ''
        ? loraListOption('lora', [{ path: o.lora, scaled: o.lora_scaled ?? 1 }])
        : []),
      ...loraListOption('lora_list', o.lora_list),
    ],
    model_draft: stringOption('model_draft', o.model_draft) || undefined,
    spec_type: enumOption('spec_type', o.spec_type, ['draft', 'ngram'] as const),
    draft_max: intOption('draft_max', o.draft_max, DRAFT_DEFAULTS.max, 0),
    draft_min: intOption('draft_min', o.draft_min, DRAFT_DEFAULTS.min, 0),
    draft_p_min: numberOption('draft_p_min', o.draft_p_min, DRAFT_DEFAULTS.pMin, 0, 1),
    vocab_only: boolOption('vocab_only', o.vocab_only, false),
  };
  if (out.draft_max > MAX_DRAFT) throw optionError('draft_max', out.draft_max, `must be at most ${MAX_DRAFT}`);
  if (out.spec_type === 'draft' && !out.model_draft) {
    throw optionError('spec_type', 'draft', 'needs a draft model (model_draft)');
  }
  return out;
}
