// Types of the CommonJS entry (cjs/index.cjs): the API's types come from the ES module.
import type * as llama from '../dist/src/index.js';

export type {
  ChatMessage,
  CompletionProbability,
  CompletionResponseFormat,
  EmbeddingParams,
  EmbeddingResult,
  FormattedChatResult,
  GGUFModelInfo,
  LibVariant,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionTimings,
  LlamaCompletionToken,
  LlamaContext,
  LlamaError,
  LlamaErrorCode,
  LlamaModelOptions,
  LlamaParallelAPI,
  LlamaParallelCompletionOptions,
  LlamaParallelCompletionResult,
  LoraAdapterOption,
  ModelInfo,
  ParallelConfig,
  ParallelStatus,
  RerankedDocument,
  RerankParams,
  RerankResult,
  SessionLoadResult,
  TokenizeResult,
  Tool,
  ToolCall,
} from '../dist/src/index.js';

/** The ES module namespace of llama-ts. */
export declare function load(): Promise<typeof llama>;
export declare function loadModel(
  options: llama.LlamaModelOptions,
  onProgress?: (progress: number) => void,
): Promise<llama.LlamaContext>;
export declare function loadLlamaModelInfo(path: string): Promise<llama.GGUFModelInfo>;
export declare function initLlama(): Promise<void>;
