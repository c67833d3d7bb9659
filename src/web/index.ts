// llama-ts/web: the engine in a browser. The same LlamaContext as on Node (completion with
// streaming and abort, chat templates and tool calls, grammars, tokenize, embedding,
// rerank, sessions as bytes), the engine in a Web Worker (src/api/worker.ts, as on Node),
// its CPU kernels in a pool of workers over shared wasm memories when the page is
// cross-origin isolated (else one thread, with a warning). What differs is where a model
// comes from: a URL (downloaded with range requests into the Origin Private File System,
// resumable; a second visit loads it offline), a Blob or File, or bytes.

import type { LlamaContext } from '../api/context.js';
import { LlamaError } from '../api/errors.js';
import { loadModelWith } from '../api/index.js';
import type { LlamaModelOptions } from '../api/types.js';
import { downloadModel, MAX_MODEL_BYTES, tooLarge, type WebBlob } from './cache.js';

export { LlamaContext } from '../api/context.js';
export { LlamaError, type LlamaErrorCode } from '../api/errors.js';
export type * from '../api/types.js';
export { type LogCallback, type LogLevel, setLogCallback } from '../log.js';
export { clearDownloadCache, downloadModel, MAX_MODEL_BYTES } from './cache.js';

/** A model: its URL, a Blob (a File from an <input>), or its bytes. */
export type ModelSource = string | URL | WebBlob | ArrayBuffer | ArrayBufferView;

export interface WebModelOptions extends Omit<LlamaModelOptions, 'model'> {
  model: ModelSource;
  /** Keep a downloaded model in the Origin Private File System (default true). */
  cache?: boolean;
}

/** Where loading is: the download (bytes so far and in all), then the weights' load. */
export interface WebProgress {
  phase: 'download' | 'load';
  /** Bytes downloaded (download). */
  loaded?: number;
  /** The download's size, when the server says it (download). */
  total?: number;
}

const blobNames = new WeakMap<object, string>();
let nextBlob = 0;

function isBlob(v: unknown): v is WebBlob {
  return typeof v === 'object' && v !== null && typeof (v as WebBlob).slice === 'function' && 'size' in v;
}

function toBlob(v: ArrayBuffer | ArrayBufferView): WebBlob {
  const B = (globalThis as unknown as { Blob: new (parts: unknown[]) => WebBlob }).Blob;
  return new B([v]);
}

/**
 * Loads a model and creates a context on it, in the page's engine worker. `onProgress`
 * receives the fraction done of the current phase: a URL's download (unless it comes from
 * the cache), then the load of the weights. options.signal cancels either.
 */
export async function loadModel(
  options: WebModelOptions,
  onProgress?: (progress: number, info: WebProgress) => void,
): Promise<LlamaContext> {
  const { model, cache, ...rest } = options;
  if (Array.isArray(model)) {
    throw new LlamaError(
      'ERR_OPTION',
      'model: split GGUF files (gguf-split shards) are not loaded by llama-ts yet; merge them first (llama-gguf-split --merge)',
    );
  }
  let blob: WebBlob;
  let name: string;
  if (typeof model === 'string' || model instanceof URL) {
    const base = (globalThis as { location?: { href: string } }).location?.href;
    const url = new URL(String(model), base).href;
    try {
      blob = await downloadModel(url, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(cache === undefined ? {} : { cache }),
        onProgress: (loaded, total) =>
          onProgress?.(total ? loaded / total : 0, { phase: 'download', loaded, ...(total ? { total } : {}) }),
      });
    } catch (e) {
      // an abort stays an AbortError (as fetch's); anything else is the model's error
      if ((e as Error)?.name === 'AbortError') throw e;
      throw new LlamaError('ERR_MODEL', (e as Error)?.message ?? String(e), { cause: e });
    }
    name = url;
  } else if (isBlob(model)) {
    blob = model;
    name = blobNames.get(model) ?? `blob:${++nextBlob}`;
    blobNames.set(model, name);
  } else if (model instanceof ArrayBuffer || ArrayBuffer.isView(model)) {
    blob = toBlob(model);
    name = `bytes:${++nextBlob}`;
  } else {
    throw new LlamaError('ERR_OPTION', `model: expected a URL, a Blob or File, or bytes, got ${typeof model}`);
  }
  if (blob.size > MAX_MODEL_BYTES) throw new LlamaError('ERR_MODEL', tooLarge(name, blob.size).message);
  return loadModelWith({ ...rest, model: name }, onProgress ? (f) => onProgress(f, { phase: 'load' }) : undefined, [
    [name, blob],
  ]);
}
