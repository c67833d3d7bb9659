// The library API's public types, in @fugood/llama.node's shapes (0.3.3, plus what later
// versions made standard). Field names are llama.node's (snake_case options and results,
// camelCase model info) so code written for it type-checks against llama-ts.
import type { FormattedChatResult, GetFormattedChatParams, TemplateLimits } from '../chat/index.js';
import type { GrammarLimits } from '../sampling/grammar/index.js';

export type { ChatMessage, ChatMessagePart, FormattedChatResult, Tool, ToolCall } from '../chat/index.js';

/** llama.node's native-library variants; llama-ts maps them onto its backend registry. */
export type LibVariant = 'default' | 'vulkan' | 'cuda' | 'snapdragon';

export type PoolingTypeOption = 'none' | 'mean' | 'cls' | 'last' | 'rank';

export type CacheTypeOption = 'f16' | 'f32' | 'q8_0';
/** llama.cpp's flash_attn_type. */
export type FlashAttnTypeOption = 'auto' | 'on' | 'off';

export interface LlamaModelOptions {
  /** Path of the GGUF file. */
  model: string;
  /** Open the context for embeddings (BERT-style models always are). */
  embedding?: boolean;
  /** Default normalization of `embedding()` results: -1 none, 0 max-abs, 1 taxicab, 2 L2 (default), >2 p-norm. */
  embd_normalize?: number;
  /** Pooling for embeddings. Default: the model's (`{arch}.pooling_type`); 'mean' for generative models. */
  pooling_type?: PoolingTypeOption;
  /** Context size in tokens. Default 512, at most the model's training context. */
  n_ctx?: number;
  /** Most prompt tokens per decode call. Default 512. */
  n_batch?: number;
  /** Most tokens per graph evaluation. Default min(512, n_batch). */
  n_ubatch?: number;
  /**
   * Sequences that share the context (llama.node's n_parallel): n_ctx may then be up to
   * this many times the training context. Default 1. `parallel.enable()` takes up to 32
   * in any case; each of its slots gets n_ctx / n_parallel tokens.
   */
  n_parallel?: number;
  /** Kernel threads. Default min(4, cores). */
  n_threads?: number;
  /** Layers on the first offload device (when one is registered). Default all. */
  n_gpu_layers?: number;
  /** Devices by name (see `llama-ts devices`), in priority order, the host device last. */
  devices?: string[];
  cache_type_k?: CacheTypeOption;
  cache_type_v?: CacheTypeOption;
  /** Shift the context when generation fills it (keeping n_keep tokens). Default true. */
  ctx_shift?: boolean;
  /**
   * Models with sliding-window layers (Gemma 2/3/4, …): a full-size KV cache for those
   * layers too, so any cached prefix stays reusable, at the memory cost of a full cache
   * (llama.cpp's swa_full). Default false: a ring of n_parallel × window + n_ubatch cells.
   */
  swa_full?: boolean;
  /** Chat template (Jinja text or a built-in format name) replacing the model's. */
  chat_template?: string;
  /**
   * Read the vocabulary, metadata and chat templates only, no weights (llama.node's
   * vocab_only): tokenize, detokenize, getFormattedChat and getModelInfo work, on any
   * GGUF with a vocabulary (llama.cpp's ggml-vocab-*.gguf too); completion, embedding,
   * sessions and parallel mode are ERR_CONTEXT errors.
   */
  vocab_only?: boolean;
  /**
   * llama-ts: bounds on rendering a chat template (time, output characters, list items;
   * TemplateLimits' defaults: 5 s, 16 Mi characters, 100,000 items) and on compiling a
   * grammar or JSON schema (GrammarLimits, timeMs default 10 s). Both run on a bounded,
   * terminable worker; beyond a bound the completion fails with ERR_OPTION naming it.
   */
  template_limits?: Omit<TemplateLimits, 'shouldStop'>;
  grammar_limits?: GrammarLimits & { timeMs?: number };
  /** Accepted for compatibility; weights are always read into memory (no effect). */
  use_mlock?: boolean;
  /** Accepted for compatibility; weights are always read into memory (no effect). */
  use_mmap?: boolean;
  /**
   * Attention as one fused op ('on'; 'auto' resolves to it on every device here, as
   * llama.cpp's auto does on CPU) or, 'off', as two matrix products with the
   * probabilities rounded to F16 (llama.cpp's path without flash attention: the answers
   * of bindings that turn it off, such as node-llama-cpp for Gemma 2). A quantized V cache
   * needs it on. Default 'auto'.
   */
  flash_attn_type?: FlashAttnTypeOption;
  /** llama.node's older switch, read when flash_attn_type is not given: true 'on', false 'off'. */
  flash_attn?: boolean;
  /** 'default' uses the fastest devices; 'cuda' / 'vulkan' prefer GPU devices when registered. */
  lib_variant?: LibVariant;
  /** llama.node: a LoRA adapter (GGUF) to apply, at `lora_scaled` (default 1). */
  lora?: string;
  lora_scaled?: number;
  /** LoRA adapters to apply, each at its scale (`scaled`, default 1); see applyLoraAdapters(). */
  lora_list?: LoraAdapterOption[];
  /** A draft model for speculative decoding: a smaller model with the same vocabulary. */
  model_draft?: string;
  /**
   * Speculative decoding's drafter: 'draft' (the default with model_draft) or 'ngram'
   * (prompt lookup: tokens that followed the latest earlier occurrence of the last few).
   */
  spec_type?: 'draft' | 'ngram';
  /** Tokens drafted per step at most (default 16; 0 turns speculative decoding off). */
  draft_max?: number;
  /** Drafts shorter than this are not used (default 0). */
  draft_min?: number;
  /** A draft model's draft ends at a token it gives less than this probability among its top 10 (default 0.8). */
  draft_p_min?: number;
  /** Load progress, 0..1 (also loadModel's second argument). */
  onProgress?: (progress: number) => void;
  /** Cancels loading: loadModel rejects with an AbortError. */
  signal?: AbortSignal;
}

/** @deprecated llama.node's name for the options with lib_variant. */
export type LlamaModelOptionsExtended = LlamaModelOptions;

export type {
  CompletionOptionValues,
  CompletionProbability,
  CompletionResponseFormat,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionTimings,
  LlamaCompletionToken,
  TokenLogprob,
  TokenProbability,
} from '../generation/index.js';

export interface TokenizeResult {
  tokens: Int32Array;
  has_media: boolean;
  /** With media (llama.node's): each media item's hash, and where each chunk (each media chunk) starts. */
  bitmap_hashes?: string[];
  chunk_pos?: number[];
  chunk_pos_media?: number[];
  /** With `with_pieces`: each token's text, or its bytes when they are not valid UTF-8 (llama-server's /tokenize). */
  pieces?: (string | number[])[];
}

/** tokenize()'s options (a llama-ts extension; llama.node's tokenize adds and parses no special tokens). */
export interface TokenizeOptions {
  /** Add BOS/EOS as the model does. Default false. */
  add_special?: boolean;
  /** Parse special-token text (e.g. `<|im_start|>`). Default false. */
  parse_special?: boolean;
  /** Also return each token's text. Default false. */
  with_pieces?: boolean;
}

export interface EmbeddingParams {
  /** -1 none, 0 max-abs (int16 range), 1 taxicab, 2 L2 (default), >2 p-norm. */
  embd_normalize?: number;
  /** (llama-ts) With pooling 'none': every token's vector too, not normalized (`embeddings`), as llama-server's /embedding gives them. */
  per_token?: boolean;
}

export interface EmbeddingResult {
  embedding: Float32Array;
  /** With `per_token` and pooling 'none': each token's vector, in order, not normalized. */
  embeddings?: Float32Array[];
}

/** A LoRA adapter and its scale (llama.node's { path, scaled }). */
export interface LoraAdapterOption {
  path: string;
  scaled?: number;
}

export interface RerankParams {
  /** > 0 (or true): scores through a sigmoid, in [0, 1] (a softmax head's, e.g. Qwen3's, are already); else the raw score (default, as llama.node). */
  normalize?: number | boolean;
}

/** llama.node's rerank result: the document's index and score; rerank() adds the text and sorts, best first. */
export interface RerankResult {
  score: number;
  index: number;
  /** llama-ts: tokens evaluated for the pair (query and document laid out for the model). */
  n_tokens?: number;
}

export type RerankedDocument = RerankResult & { document: string };

export interface TemplateCapsInfo {
  tools: boolean;
  toolCalls: boolean;
  toolResponses: boolean;
  systemRole: boolean;
  parallelToolCalls: boolean;
  toolCallId: boolean;
}

export interface ModelInfo {
  /** "llama 260K F32", as llama.cpp's llama_model_desc. */
  desc: string;
  /** Bytes of weights. */
  size: number;
  nEmbd: number;
  nParams: number;
  chatTemplates: {
    llamaChat: boolean;
    minja: { default: boolean; defaultCaps: TemplateCapsInfo; toolUse: boolean; toolUseCaps?: TemplateCapsInfo };
  };
  /** Scalar metadata as text (arrays left out), as llama.cpp's llama_model_meta_val_str. */
  metadata: Record<string, string>;
  isChatTemplateSupported: boolean;
  is_hybrid: boolean;
  is_recurrent: boolean;
  /** llama-ts: tokens in the vocabulary, its kind (spm, bpe, wpm, …), the training context, the GGUF file's bytes. */
  nVocab: number;
  vocabType: string;
  nCtxTrain: number;
  fileSize: number;
}

/** loadLlamaModelInfo(path): the GGUF header's scalar metadata. */
export interface GGUFModelInfo {
  version?: number;
  alignment?: number;
  data_offset?: number;
  [key: string]: string | number | undefined;
}

export interface SessionLoadResult {
  /** Tokens restored into the cache. */
  tokens_loaded: number;
  /** Their text. */
  prompt: string;
}

export type FormattedChatParams = GetFormattedChatParams;
export type { FormattedChatResult as LlamaFormattedChat };

/** One compute device (getBackendDevicesInfo), as llama.node reports it. */
export interface BackendDeviceInfo {
  /** The backend family: CPU, WebGPU, Reference. */
  backend: string;
  /** cpu, gpu or accel. */
  type: string;
  /** The name loadModel's `devices` takes. */
  deviceName: string;
  /** Bytes (a WebGPU device: its largest buffer, since WebGPU reports no memory size). */
  maxMemorySize: number;
  /** Description, free memory and capabilities. */
  metadata?: Record<string, unknown>;
}
