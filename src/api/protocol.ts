// Messages between the main thread (LlamaContext proxies) and the engine worker. Every
// request carries an id; the worker answers with events (load progress, tokens, log
// lines) and one final reply. A context is named by the id of the request that loaded it.
// Stop requests do not travel as messages: each context shares an Int32 with the worker
// (the id of the completion to stop), polled before every token step.
import type { LogLevel } from '../log.js';
import type { SerializedError } from './errors.js';
import type { EngineModelOptions } from './options.js';
import type { EmbeddingParams, LlamaCompletionOptions } from './types.js';

export type Request =
  | { op: 'load'; id: number; options: EngineModelOptions; stop: SharedArrayBuffer; progress: boolean }
  | { op: 'abort'; id: number; target: number }
  | { op: 'completion'; id: number; ctx: number; options: LlamaCompletionOptions; stream: boolean }
  | { op: 'tokenize'; id: number; ctx: number; text: string }
  | { op: 'detokenize'; id: number; ctx: number; tokens: number[] }
  | { op: 'embedding'; id: number; ctx: number; text: string; params: EmbeddingParams }
  | { op: 'saveSession'; id: number; ctx: number; path: string }
  | { op: 'loadSession'; id: number; ctx: number; path: string }
  | { op: 'release'; id: number; ctx: number }
  | { op: 'modelInfo'; id: number; path: string; skip: string[] };

export type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { id: number; event: 'progress' | 'token'; value: unknown }
  | { log: [LogLevel, string, string] };
