// llama-ts/web: the engine in a browser. The same LlamaContext as on Node (completion with
// streaming and abort, chat templates and tool calls, grammars, tokenize, embedding,
// rerank, sessions as bytes), the engine in a Web Worker (src/api/worker.ts, as on Node),
// its CPU kernels in a pool of workers over shared wasm memories when the page is
// cross-origin isolated (else one thread, with a warning). What differs is where a model
// comes from: a URL (downloaded with range requests into the Origin Private File System,
// resumable; a second visit loads it offline), a Blob or File, or bytes.

import type { FileSource, LlamaContext } from '../api/context.js';
import { LlamaError } from '../api/errors.js';
import { loadModelWith } from '../api/index.js';
import type { LlamaModelOptions } from '../api/types.js';
import { downloadModel, MAX_MODEL_BYTES, tooLarge, type WebBlob } from './cache.js';

export type { FileSource } from '../api/context.js';
export { LlamaContext } from '../api/context.js';
export { LlamaError, type LlamaErrorCode } from '../api/errors.js';
export type * from '../api/types.js';
export { type LogCallback, type LogLevel, setLogCallback } from '../log.js';
export { clearDownloadCache, downloadModel, MAX_MODEL_BYTES } from './cache.js';

/** A model: its URL, a Blob (a File from an <input>), or its bytes. */
export type ModelSource = string | URL | WebBlob | ArrayBuffer | ArrayBufferView;

export interface WebModelOptions extends Omit<LlamaModelOptions, 'model'> {
  /** The model, or a split model's shards in order (gguf-split's files). */
  model: ModelSource | ModelSource[];
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
 * receives the fraction done of the current phase: the download of URLs (unless they come
 * from the cache), then the load of the weights. options.signal cancels either.
 */
export async function loadModel(
  options: WebModelOptions,
  onProgress?: (progress: number, info: WebProgress) => void,
): Promise<LlamaContext> {
  const { model, cache, ...rest } = options;
  const list = Array.isArray(model) ? (model as ModelSource[]) : [model];
  if (list.length === 0) throw new LlamaError('ERR_OPTION', 'model: an empty list of shards');
  const resolved: { blob: WebBlob; name: string }[] = [];
  for (const [k, m] of list.entries()) {
    resolved.push(
      await resolveSource(m, cache, options.signal, (loaded, total) =>
        onProgress?.(((total ? loaded / total : 0) + k) / list.length, {
          phase: 'download',
          loaded,
          ...(total ? { total } : {}),
        }),
      ),
    );
  }
  const size = resolved.reduce((s, r) => s + r.blob.size, 0);
  if (size > MAX_MODEL_BYTES) throw new LlamaError('ERR_MODEL', tooLarge(resolved[0]!.name, size).message);
  // gguf-split shards: the engine opens the first and finds the others by gguf-split's names
  const n = String(list.length).padStart(5, '0');
  const files: [string, unknown][] =
    list.length === 1
      ? [[resolved[0]!.name, resolved[0]!.blob]]
      : resolved.map((r, k) => [`split:${resolved[0]!.name}-${String(k + 1).padStart(5, '0')}-of-${n}.gguf`, r.blob]);
  return loadModelWith(
    { ...rest, model: files[0]![0] },
    onProgress ? (f) => onProgress(f, { phase: 'load' }) : undefined,
    files,
    // later files (ctx.initMultimodal's projector) come as the model did, cached as it was
    async (source: FileSource, what: string) => {
      const r = await resolveSource(source as ModelSource, cache, undefined, () => {}, what);
      if (r.blob.size > MAX_MODEL_BYTES) throw new LlamaError('ERR_OPTION', tooLarge(r.name, r.blob.size).message);
      return [r.name, r.blob];
    },
  );
}

/** A model source as a Blob and the name the engine worker opens it by; `what` names the option in errors. */
async function resolveSource(
  model: ModelSource,
  cache: boolean | undefined,
  signal: AbortSignal | undefined,
  onProgress: (loaded: number, total: number | undefined) => void,
  what = 'model',
): Promise<{ blob: WebBlob; name: string }> {
  if (typeof model === 'string' || model instanceof URL) {
    const base = (globalThis as { location?: { href: string } }).location?.href;
    const url = new URL(String(model), base).href;
    try {
      const blob = await downloadModel(url, {
        ...(signal ? { signal } : {}),
        ...(cache === undefined ? {} : { cache }),
        onProgress,
      });
      return { blob, name: url };
    } catch (e) {
      // an abort stays an AbortError (as fetch's); anything else is the model's error
      if ((e as Error)?.name === 'AbortError') throw e;
      throw new LlamaError(what === 'model' ? 'ERR_MODEL' : 'ERR_OPTION', (e as Error)?.message ?? String(e), {
        cause: e,
      });
    }
  }
  if (isBlob(model)) {
    const name = blobNames.get(model) ?? `blob:${++nextBlob}`;
    blobNames.set(model, name);
    return { blob: model, name };
  }
  if (model instanceof ArrayBuffer || ArrayBuffer.isView(model))
    return { blob: toBlob(model), name: `bytes:${++nextBlob}` };
  throw new LlamaError(
    'ERR_OPTION',
    `${what}: expected a URL, a Blob or File, bytes${what === 'model' ? ', or a list of shards' : ''}, got ${typeof model}`,
  );
}
