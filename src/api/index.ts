// The library API, compatible with @fugood/llama.node: loadModel() → LlamaContext. Models
// load and generate in an engine worker (src/api/worker.ts), never on the caller's thread.
import { devicesReady, listDevices } from '../backends/index.js';
import { sharedBuffer } from '../platform/index.js';
import { engineClient } from './client.js';
import { type FileResolver, LlamaContext } from './context.js';
import type { ContextInfo } from './engine.js';
import { LlamaError } from './errors.js';
import { checkModelOptions, optionError } from './options.js';
import type { BackendDeviceInfo, GGUFModelInfo, LlamaModelOptions } from './types.js';

export { LlamaContext } from './context.js';
export { Engine, EngineContext } from './engine.js';
export { LlamaError, type LlamaErrorCode } from './errors.js';
export {
  LlamaParallelAPI,
  type LlamaParallelCompletionOptions,
  type LlamaParallelCompletionResult,
  type ParallelConfig,
  type ParallelRequestStatus,
  type ParallelSlotStatus,
  type ParallelStatus,
  type PromptInfo,
} from './parallel.js';
export { SESSION_VERSION } from './session.js';
export type * from './types.js';

function abortError(): LlamaError {
  const e = new LlamaError('ABORT_ERR', 'model loading was aborted');
  e.name = 'AbortError';
  return e;
}

/**
 * Loads a model and creates a context on it (llama.node's loadModel). A model already
 * loaded with the same file and devices is shared. `onProgress` (or options.onProgress)
 * receives the fraction of weights loaded; options.signal cancels loading.
 */
export function loadModel(options: LlamaModelOptions, onProgress?: (progress: number) => void): Promise<LlamaContext> {
  return loadModelWith(options, onProgress);
}

/**
 * loadModel, with Blobs the engine worker opens by name (the web entry's models) and how
 * the context turns later files (a projector) into such Blobs. @internal
 */
export async function loadModelWith(
  options: LlamaModelOptions,
  onProgress?: (progress: number) => void,
  files?: [string, unknown][],
  resolveFile?: FileResolver,
): Promise<LlamaContext> {
  const o = checkModelOptions(options);
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw optionError('onProgress', onProgress, 'must be a function');
  }
  const progress = onProgress ?? options.onProgress;
  const signal = options.signal;
  if (signal?.aborted) throw abortError();
  const client = engineClient();
  const stop = sharedBuffer(4);
  client.opened();
  let loaded = false;
  try {
    const { id, promise } = client.request<ContextInfo>(
      { op: 'load', options: o, stop, progress: progress !== undefined, ...(files ? { files } : {}) },
      (event, value) => {
        if (event === 'progress') progress?.(value as number);
      },
    );
    const onAbort = () => {
      client.request({ op: 'abort', target: id }).promise.catch(() => {});
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let info: ContextInfo;
    try {
      info = await promise;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    loaded = true;
    const ctx = new LlamaContext(client, id, info, stop, resolveFile);
    if (signal?.aborted) {
      await ctx.release();
      throw abortError();
    }
    return ctx;
  } catch (e) {
    if (!loaded) await client.closed();
    throw e;
  }
}

const MODEL_INFO_SKIP = [
  'tokenizer.ggml.tokens',
  'tokenizer.ggml.token_type',
  'tokenizer.ggml.merges',
  'tokenizer.ggml.scores',
];

/** A GGUF file's header facts and scalar metadata, without loading the model (llama.node's loadLlamaModelInfo). */
export async function loadLlamaModelInfo(path: string): Promise<GGUFModelInfo> {
  if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be the path of a GGUF file');
  const client = engineClient();
  try {
    return await client.request<GGUFModelInfo>({ op: 'modelInfo', path, skip: MODEL_INFO_SKIP }).promise;
  } finally {
    await client.stopIfIdle();
  }
}

/** llama.node's initLlama: nothing to load ahead of time here (kept for compatibility). */
export async function initLlama(): Promise<void> {}

/**
 * The compute devices (llama.node's getBackendDevicesInfo): a deviceName is what
 * loadModel's `devices` takes. Asking starts the WebGPU probe, as `llama-ts devices` does.
 * (Listed from the calling thread's registry, which registers the same backends as the
 * engine worker's.)
 */
export async function getBackendDevicesInfo(): Promise<BackendDeviceInfo[]> {
  await devicesReady(['webgpu']);
  return listDevices().map((d) => {
    const p = d.props();
    return {
      backend: d.reg.name,
      type: p.type,
      deviceName: p.name,
      maxMemorySize: p.memory.total,
      metadata: { description: p.description, freeMemory: p.memory.free, ...p.caps },
    };
  });
}
