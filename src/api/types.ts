// The library API's public types, in @fugood/llama.node's shapes (0.3.3, plus what later
// versions made standard). Field names are llama.node's (snake_case options and results,
// camelCase model info) so code written for it type-checks against llama-ts.
import type { ChatMessage, FormattedChatResult, GetFormattedChatParams, Tool, ToolCall } from './chat/index.js';

export type { ChatMessage, ChatMessagePart, FormattedChatResult, Tool, ToolCall } from './chat/index.js';

/** llama.node's native-library variants; llama-ts maps them onto its backend registry. */
export type LibVariant = 'default' | 'vulkan' | 'cuda' | 'snapdragon';

export type PoolingTypeOption = 'none' | 'mean' | 'cls' | 'last';

export type CacheTypeOption = 'f16' | 'f32' | 'q8_0';

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
  /** Chat template (Jinja text or a built-in format name) replacing the model's. */
  chat_template?: string;
  /** Accepted for compatibility; weights are always read into memory (no effect). */
  use_mlock?: boolean;
  /** Accepted for compatibility; weights are always read into memory (no effect). */
  use_mmap?: boolean;
  /** Accepted for compatibility (flash attention is always on). */
  flash_attn?: boolean;
  /** 'default' uses the fastest devices; 'cuda' / 'vulkan' prefer GPU devices when registered. */
  lib_variant?: LibVariant;
  /** Load progress, 0..1 (also loadModel's second argument). */
  onProgress?: (progress: number) => void;
  /** Cancels loading: loadModel rejects with an AbortError. */
  signal?: AbortSignal;
}

/** @deprecated llama.node's name for the options with lib_variant. */
export type LlamaModelOptionsExtended = LlamaModelOptions;

export interface CompletionResponseFormat {
  type: 'text' | 'json_object' | 'json_schema';
  json_schema?: { strict?: boolean; schema?: Record<string, unknown>; name?: string };
  /** For 'json_object': an optional schema. */
  schema?: Record<string, unknown>;
}

export interface LlamaCompletionOptions {
  /** A raw prompt (tokenized with BOS, special tokens parsed). Either this or `messages`. */
  prompt?: string;
  /** A conversation, formatted with the model's chat template. Messages take `content` (or `text`). */
  messages?: ChatMessage[];
  /** Use the Jinja chat template (default true when the model has one). */
  jinja?: boolean;
  chat_template?: string;
  tools?: Tool[];
  parallel_tool_calls?: boolean;
  tool_choice?: string;
  enable_thinking?: boolean;
  chat_template_kwargs?: Record<string, unknown>;
  /** gpt-oss (harmony templates): how much the model reasons, 'low', 'medium' or 'high'. */
  reasoning_effort?: 'low' | 'medium' | 'high';
  /** Constrain the output to JSON ('json_object') or a JSON Schema ('json_schema'). */
  response_format?: CompletionResponseFormat;

  /** Tokens to generate; -1 (default): until end of text or a full context. */
  n_predict?: number;
  /** Alias of n_predict (OpenAI name). */
  max_tokens?: number;
  /** Accepted for compatibility (no effect). */
  max_length?: number;
  /** Prompt tokens kept when the context shifts (-1: all of the prompt). Default 0 (+ BOS). */
  n_keep?: number;
  /** Generation ends before any of these strings; they never reach the streamed text. */
  stop?: string[];
  /** Keep generating past end-of-generation tokens. */
  ignore_eos?: boolean;
  /** Top-N token probabilities per generated token (`completion_probabilities`). */
  n_probs?: number;
  post_sampling_probs?: boolean;
  /** Stops generation (the result has `interrupted: true`), like stopCompletion(). */
  signal?: AbortSignal;

  // sampling (llama.cpp's names and defaults)
  temperature?: number;
  dynatemp_range?: number;
  dynatemp_exponent?: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
  typical_p?: number;
  typ_p?: number;
  top_n_sigma?: number;
  xtc_probability?: number;
  xtc_threshold?: number;
  mirostat?: number;
  mirostat_tau?: number;
  mirostat_eta?: number;
  penalty_last_n?: number;
  penalty_repeat?: number;
  penalty_freq?: number;
  penalty_present?: number;
  repeat_last_n?: number;
  repeat_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  dry_multiplier?: number;
  dry_base?: number;
  dry_allowed_length?: number;
  dry_penalty_last_n?: number;
  dry_sequence_breakers?: string[];
  seed?: number;
  logit_bias?: [number | string, number | boolean][] | Record<string, number | boolean>;
  min_keep?: number;
  samplers?: string[] | string;
  /** GBNF grammar. */
  grammar?: string;
  /** JSON Schema (object or JSON text). */
  json_schema?: unknown;
  /** Lazy grammars are not supported: true is an error. */
  grammar_lazy?: boolean;
  /** Accepted for compatibility (lazy-grammar triggers; unused). */
  grammar_triggers?: { type?: number; value?: string; word?: string; token?: number; at_start?: boolean }[];
  /** Accepted for compatibility (unused). */
  preserved_tokens?: string[];
}

/** One token's probabilities (llama.node's shape). */
export interface TokenProbability {
  tok_str: string;
  prob: number;
}

/** A generated piece of text with the top-N candidates at its position. */
export interface CompletionProbability {
  content: string;
  probs: TokenProbability[];
}

export interface LlamaCompletionTimings {
  prompt_n: number;
  prompt_ms: number;
  prompt_per_token_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_token_ms: number;
  predicted_per_second: number;
}

export interface LlamaCompletionResult {
  /** The generated text (stop strings excluded). */
  text: string;
  /** With messages: the text without tool calls. */
  content?: string;
  /** With messages, for formats that keep reasoning apart (gpt-oss's analysis channel). */
  reasoning_content?: string;
  /** With tools: the calls parsed from the text. */
  tool_calls?: ToolCall[];
  /** The chat format the reply was parsed with (0: content only). */
  chat_format: number;
  /** Tokens sampled (an end-of-generation token counts). */
  tokens_predicted: number;
  /** Prompt tokens (after truncation). */
  tokens_evaluated: number;
  /** Prompt tokens reused from the cache (not evaluated again). */
  tokens_cached: number;
  /** The prompt did not fit the context and was cut. */
  truncated: boolean;
  stopped_eos: boolean;
  /** A stop string ended generation (`stopping_word`). */
  stopped_word: boolean;
  /** n_predict (or the context, with n_predict -1) ended generation. */
  stopped_limit: boolean;
  stopping_word: string;
  /** The context filled up and could not shift. */
  context_full: boolean;
  /** stopCompletion() or the signal ended generation. */
  interrupted: boolean;
  /** Later llama.node names of stopped_word / stopped_limit. */
  stopped_words: boolean;
  stopped_limited: boolean;
  completion_probabilities?: CompletionProbability[];
  timings: LlamaCompletionTimings;
}

/** What onToken receives: text in order; concatenated it is the result's `text`. */
export interface LlamaCompletionToken {
  token: string;
  completion_probabilities?: CompletionProbability[];
}

export interface TokenizeResult {
  tokens: Int32Array;
  has_media: boolean;
}

export interface EmbeddingParams {
  /** -1 none, 0 max-abs (int16 range), 1 taxicab, 2 L2 (default), >2 p-norm. */
  embd_normalize?: number;
}

export interface EmbeddingResult {
  embedding: Float32Array;
}

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
