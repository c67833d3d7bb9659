// Messages between the main thread (LlamaContext proxies) and the engine worker. Every
// request carries an id; the worker answers with events (load progress, tokens, log
// lines) and one final reply. A context is named by the id of the request that loaded it.
// A completion's stop does not travel as a message: each context shares an Int32 with the
// worker (the id of the completion to stop), polled before every token step. Parallel
// requests stop by message ('cancel'), read between steps, and report their prompt
// ('prompt' event: its length and prefix key) once it is rendered and tokenized. In parallel mode the worker
// also sends each context's status (slots, queue, counters) as it changes. On the web, audio
// only the browser decodes goes from the worker to the page and back ('decode', 'decoded'):
// OfflineAudioContext exists in pages only.

import type { BatcherStatus } from '../generation/index.js';
import type { LogLevel } from '../log.js';
import type { NativeAudio } from '../platform/types.js';
import type { ParallelConfig } from './engine.js';
import type { SerializedError } from './errors.js';
import type { MultimodalOptions } from './multimodal.js';
import type { EngineModelOptions } from './options.js';
import type { EmbeddingParams, LlamaCompletionOptions, RerankParams, TokenizeOptions } from './types.js';

export type Request =
  | {
      op: 'load';
      id: number;
      options: EngineModelOptions;
      /** Shared where memory can be shared; else the worker's copy is raised by 'stop' requests. */
      stop: SharedArrayBuffer | ArrayBuffer;
      progress: boolean;
      /** Blobs the worker opens by these names (the web entry: platform.provideFile). */
      files?: [string, unknown][];
    }
  | { op: 'abort'; id: number; target: number }
  | { op: 'stop'; id: number; ctx: number; target: number }
  | { op: 'completion'; id: number; ctx: number; options: LlamaCompletionOptions; stream: boolean }
  | { op: 'parallelEnable'; id: number; ctx: number; config: ParallelConfig }
  | { op: 'parallelDisable'; id: number; ctx: number }
  | { op: 'parallelCompletion'; id: number; ctx: number; options: LlamaCompletionOptions; stream: boolean }
  | { op: 'cancel'; id: number; ctx: number; target: number }
  | { op: 'parallelStatus'; id: number; ctx: number }
  | { op: 'slotAction'; id: number; ctx: number; action: 'save' | 'restore' | 'erase'; slot: number; path?: string }
  | { op: 'tokenize'; id: number; ctx: number; text: string; options: TokenizeOptions; media?: string[] }
  | { op: 'initMultimodal'; id: number; ctx: number; options: MultimodalOptions; files?: [string, unknown][] }
  | { op: 'releaseMultimodal'; id: number; ctx: number }
  | { op: 'detokenize'; id: number; ctx: number; tokens: number[] }
  | { op: 'embedding'; id: number; ctx: number; text: string | number[]; params: EmbeddingParams }
  | { op: 'saveSession'; id: number; ctx: number; path: string | undefined }
  | { op: 'loadSession'; id: number; ctx: number; path: string | Uint8Array }
  | { op: 'applyLora'; id: number; ctx: number; adapters: unknown }
  | { op: 'rerank'; id: number; ctx: number; query: string; documents: string[]; params: RerankParams }
  | { op: 'release'; id: number; ctx: number }
  | { op: 'modelInfo'; id: number; path: string; skip: string[] }
  /** The page's answer to a 'decode' (id: the worker's). */
  | { op: 'decoded'; id: number; value?: NativeAudio; error?: string };

export type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { id: number; event: 'progress' | 'token' | 'prompt'; value: unknown }
  | { log: [LogLevel, string, string] }
  | { status: number; value: BatcherStatus }
  /** Audio for the page to decode with the browser's decoder (platform.decodeAudioNative). */
  | { decode: number; bytes: Uint8Array; mime: string; sampleRate: number };
