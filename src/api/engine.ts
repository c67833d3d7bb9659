// The engine: models and contexts, on whichever thread runs it (the engine worker, or the
// caller's thread in tests). Models are cached by file and device choice and reference-
// counted, so several contexts on one model share its weights. A context runs one
// completion at a time (a second is rejected with ERR_BUSY); session loads and saves wait
// for the running completion; embeddings use their own context.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { type Device, deviceByName, listDevices } from '../backends/api.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { type Batch, Context, ContextError, defaultDevices, Model } from '../model/index.js';
import type { ChatTemplates } from './chat/index.js';
import { type CompletionHooks, type CompletionState, runCompletion } from './completion.js';
import { checkNormalize, normalizeEmbedding } from './embedding.js';
import { asLlamaError, LlamaError } from './errors.js';
import {
  ggufInfo,
  type ModelIdentity,
  metadataStrings,
  modelIdentity,
  systemInfo,
  type TemplateTexts,
  templatesFromTexts,
  templateTexts,
} from './info.js';
import { type EngineModelOptions, optionError } from './options.js';
import { loadSession, saveSession } from './session.js';
import type {
  EmbeddingParams,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  PoolingTypeOption,
  SessionLoadResult,
} from './types.js';

const log = logger('api');

/** Default context size (llama.node's), capped by the model's training context. */
const DEFAULT_N_CTX = 512;

/** What the main thread learns about a new context. */
export interface ContextInfo {
  systemInfo: string;
  model: {
    desc: string;
    size: number;
    nEmbd: number;
    nParams: number;
    metadata: Record<string, string>;
    arch: string;
  };
  templates: TemplateTexts;
  nCtx: number;
  /** The model is an encoder (embeddings only: no completion, no sessions). */
  embeddingOnly: boolean;
}

export interface LoadHooks {
  onProgress?: (fraction: number) => void;
  signal?: AbortSignal;
}

class SharedModel {
  refs = 0;
  freed = false;

  constructor(
    readonly key: string,
    readonly model: Model,
    readonly identity: ModelIdentity,
    readonly metadata: Record<string, string>,
    readonly templates: TemplateTexts,
  ) {}
}

function isAbort(e: unknown): boolean {
  return e instanceof Error && e.name === 'AbortError';
}

/** The devices for a context: by name, or the registry's default (GPUs first) per lib_variant and n_gpu_layers. */
function pickDevices(o: EngineModelOptions): Device[] {
  if (o.devices) {
    return o.devices.map((name) => {
      const d = deviceByName(name);
      if (!d) {
        const known = listDevices()
          .filter((x) => !x.props().caps.oracle || x.name === name)
          .map((x) => x.name);
        throw optionError('devices', o.devices, `no device '${name}' (available: ${known.join(', ')})`);
      }
      return d;
    });
  }
  const all = defaultDevices();
  const host = all[all.length - 1]!;
  if ((o.lib_variant === 'cuda' || o.lib_variant === 'vulkan') && all.length === 1) {
    log.warn(`lib_variant '${o.lib_variant}': no GPU device is registered; running on ${host.name}`);
  }
  if (o.n_gpu_layers === 0) return [host];
  return all;
}

export class Engine {
  private readonly models = new Map<string, Promise<SharedModel>>();
  private readonly contexts = new Set<EngineContext>();
  private computeQueue: Promise<unknown> = Promise.resolve();

  /**
   * Runs one evaluation (or cache transfer) at a time across all contexts. The CPU device
   * gives wrong results when two contexts' graphs run interleaved on it, and its kernel
   * pool runs one job at a time anyway, so serializing whole decodes costs little.
   */
  compute<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.computeQueue.then(fn);
    this.computeQueue = run.catch(() => {});
    return run;
  }

  /** Open (or share) the model and create a context on it. */
  async createContext(o: EngineModelOptions, hooks: LoadHooks = {}): Promise<EngineContext> {
    try {
      const shared = await this.acquire(o, hooks);
      try {
        const ec = new EngineContext(this, shared, o);
        this.contexts.add(ec);
        return ec;
      } catch (e) {
        this.releaseModel(shared);
        throw e;
      }
    } catch (e) {
      throw asLlamaError(e);
    }
  }

  get contextCount(): number {
    return this.contexts.size;
  }

  get modelCount(): number {
    return this.models.size;
  }

  private async acquire(o: EngineModelOptions, hooks: LoadHooks): Promise<SharedModel> {
    if (!existsSync(o.model)) throw new LlamaError('ERR_MODEL', `model file not found: ${o.model}`);
    if (!statSync(o.model).isFile()) throw new LlamaError('ERR_MODEL', `model path is not a file: ${o.model}`);
    const devices = pickDevices(o);
    const key = JSON.stringify([realpathSync(o.model), devices.map((d) => d.name), o.n_gpu_layers ?? -1]);
    for (;;) {
      hooks.signal?.throwIfAborted();
      let p = this.models.get(key);
      const shared = p !== undefined;
      if (!p) {
        p = this.load(key, o, devices, hooks);
        this.models.set(key, p);
        const mine = p;
        p.catch(() => {
          if (this.models.get(key) === mine) this.models.delete(key);
        });
      }
      let m: SharedModel;
      try {
        m = await p;
      } catch (e) {
        // another caller's load was aborted: load again for this one
        if (shared && isAbort(e) && !hooks.signal?.aborted) continue;
        throw e;
      }
      if (m.freed) continue;
      if (shared) hooks.onProgress?.(1);
      m.refs++;
      return m;
    }
  }

  private async load(key: string, o: EngineModelOptions, devices: Device[], hooks: LoadHooks): Promise<SharedModel> {
    const model = await Model.load(o.model, {
      devices,
      ...(o.n_gpu_layers !== undefined && o.n_gpu_layers >= 0 ? { nGpuLayers: o.n_gpu_layers } : {}),
      ...(hooks.signal ? { signal: hooks.signal } : {}),
      ...(hooks.onProgress ? { onProgress: (f: number) => hooks.onProgress!(f) } : {}),
    });
    try {
      const file = openGGUF(o.model);
      try {
        return new SharedModel(
          key,
          model,
          modelIdentity(file, model),
          metadataStrings(file),
          templateTexts(file, model.vocab),
        );
      } finally {
        file.close();
      }
    } catch (e) {
      model.free();
      throw e;
    }
  }

  /** @internal */
  releaseModel(m: SharedModel): void {
    m.refs--;
    if (m.refs > 0) return;
    m.freed = true;
    this.models.delete(m.key);
    m.model.free();
  }

  /** @internal */
  forget(ec: EngineContext): void {
    this.contexts.delete(ec);
  }

  /** Release every context (and so every model). */
  async close(): Promise<void> {
    await Promise.all([...this.contexts].map((c) => c.release()));
  }
}

export class EngineContext implements CompletionState {
  readonly ctx: Context;
  tokens: number[] = [];
  readonly ctxShift: boolean;
  readonly info: ContextInfo;
  private embCtx: Context | undefined;
  private chat: ChatTemplates | undefined;
  private lock: Promise<unknown> = Promise.resolve();
  private completing = false;
  private released = false;
  private readonly embdNormalize: number;
  private readonly pooling: PoolingTypeOption | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly shared: SharedModel,
    o: EngineModelOptions,
  ) {
    const model = shared.model;
    const hp = model.hp;
    const train = hp.nCtxTrain;
    let nCtx: number;
    if (o.n_ctx === undefined) nCtx = train > 0 ? Math.min(DEFAULT_N_CTX, train) : DEFAULT_N_CTX;
    else if (o.n_ctx === 0) nCtx = train > 0 ? train : DEFAULT_N_CTX;
    else nCtx = o.n_ctx;
    if (train > 0 && nCtx > train) {
      throw optionError('n_ctx', o.n_ctx, `must be at most ${train}, the context ${model.name} was trained with`);
    }
    this.ctxShift = o.ctx_shift;
    this.embdNormalize = o.embd_normalize;
    this.pooling = o.pooling_type;
    const encoder = !model.arch.usesKVCache;
    const nBatch = encoder ? Math.max(nCtx, o.n_batch ?? 0) : Math.min(o.n_batch ?? 512, nCtx);
    const nUbatch = encoder ? nBatch : Math.min(o.n_ubatch ?? 512, nBatch);
    try {
      this.ctx = new Context(model, {
        nCtx,
        nBatch,
        nUbatch,
        ...(o.n_threads ? { nThreads: o.n_threads } : {}),
        typeK: o.cache_type_k,
        typeV: o.cache_type_v,
        ...(encoder ? { embeddings: true, ...(o.pooling_type ? { pooling: o.pooling_type } : {}) } : {}),
      });
    } catch (e) {
      if (e instanceof ContextError) throw new LlamaError('ERR_OPTION', e.message);
      throw e;
    }
    this.info = {
      systemInfo: systemInfo(model.devices, this.ctx.nThreads),
      model: {
        desc: model.describe(),
        size: model.nBytes,
        nEmbd: hp.nEmbd,
        nParams: model.nParams,
        metadata: shared.metadata,
        arch: hp.arch,
      },
      templates: o.chat_template ? { ...shared.templates, override: o.chat_template } : shared.templates,
      nCtx,
      embeddingOnly: encoder,
    };
  }

  get vocab() {
    return this.shared.model.vocab;
  }

  get model(): Model {
    return this.shared.model;
  }

  decode(batch: Batch): Promise<void> {
    return this.engine.compute(() => this.ctx.decode(batch));
  }

  templates(): ChatTemplates {
    this.chat ??= templatesFromTexts(this.info.templates);
    return this.chat;
  }

  private check(): void {
    if (this.released) throw new LlamaError('ERR_RELEASED', 'the context was released');
  }

  /** Runs `fn` after every earlier exclusive operation. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(() => {
      this.check();
      return fn();
    });
    this.lock = run.catch(() => {});
    return run;
  }

  tokenize(text: string): number[] {
    this.check();
    if (typeof text !== 'string') throw optionError('text', text, 'must be a string');
    return this.vocab.encode(text, { addSpecial: false, parseSpecial: false });
  }

  detokenize(tokens: ArrayLike<number>): string {
    this.check();
    const ids = Array.from(tokens ?? []);
    const n = this.vocab.nTokens;
    for (const t of ids) {
      if (!Number.isInteger(t) || t < 0 || t >= n) throw optionError('tokens', t, `token ids must be 0..${n - 1}`);
    }
    return this.vocab.decode(ids, { renderSpecial: true });
  }

  /** A completion; rejects with ERR_BUSY while another runs on this context. */
  completion(o: LlamaCompletionOptions, hooks: CompletionHooks = {}): Promise<LlamaCompletionResult> {
    try {
      this.check();
      if (this.info.embeddingOnly) {
        throw new LlamaError(
          'ERR_CONTEXT',
          `${this.info.model.arch} is an embedding model: it does not generate text (use embedding())`,
        );
      }
      if (this.completing) {
        throw new LlamaError(
          'ERR_BUSY',
          'a completion is already running on this context; await it (or call stopCompletion()) before starting another, or use another context on the same model',
        );
      }
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    this.completing = true;
    return this.exclusive(async () => {
      try {
        return await runCompletion(this, o, hooks);
      } catch (e) {
        if (!(e instanceof LlamaError && e.code === 'ERR_OPTION')) {
          // the cache may not match `tokens` any more: start the next completion afresh
          this.ctx.clearMemory();
          this.tokens = [];
        }
        throw asLlamaError(e);
      } finally {
        this.completing = false;
      }
    });
  }

  /** The (pooled, normalized) embedding of a text. */
  embedding(text: string, params: EmbeddingParams = {}): Promise<{ embedding: Float32Array }> {
    try {
      this.check();
      if (typeof text !== 'string') throw optionError('text', text, 'must be a string');
      if (params !== null && typeof params !== 'object') throw optionError('params', params, 'must be an object');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    const norm = params?.embd_normalize ?? this.embdNormalize;
    const run = async () => {
      const mode = checkNormalize(norm);
      const ectx = this.embeddingContext();
      const tokens = this.vocab.encode(text, { addSpecial: true, parseSpecial: true });
      if (tokens.length === 0) throw optionError('text', text, 'has no tokens');
      if (tokens.length > ectx.nBatch) {
        throw new LlamaError(
          'ERR_CONTEXT',
          `the text is ${tokens.length} tokens; embeddings take at most ${ectx.nBatch} (raise n_ctx)`,
        );
      }
      ectx.clearMemory();
      await this.engine.compute(() => ectx.decode({ tokens }));
      const v = ectx.pooling === 'none' ? ectx.getEmbeddings(-1) : ectx.getEmbeddingsSeq(0);
      return { embedding: normalizeEmbedding(v, mode) };
    };
    // an encoder's only context is the embedding one; a generative model's is separate
    const p = this.info.embeddingOnly ? this.exclusive(run) : this.embeddingQueue(run);
    return p.catch((e) => {
      throw asLlamaError(e);
    });
  }

  private embLock: Promise<unknown> = Promise.resolve();

  private embeddingQueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.embLock.then(() => {
      this.check();
      return fn();
    });
    this.embLock = run.catch(() => {});
    return run;
  }

  /** For generative models: a second context that outputs pooled hidden states (mean unless pooling_type says). */
  private embeddingContext(): Context {
    if (this.info.embeddingOnly) return this.ctx;
    if (!this.embCtx) {
      const model = this.shared.model;
      let pooling = this.pooling ?? model.hp.pooling;
      if (pooling === 'none' && this.pooling === undefined) pooling = 'mean';
      this.embCtx = new Context(model, {
        nCtx: this.ctx.nCtx,
        nBatch: this.ctx.nCtx,
        nUbatch: this.ctx.nUbatch,
        nThreads: this.ctx.nThreads,
        embeddings: true,
        pooling,
      });
    }
    return this.embCtx;
  }

  saveSession(path: string): Promise<void> {
    try {
      this.check();
      if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be a file path');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    return this.exclusive(() =>
      this.engine.compute(() => saveSession(path, this.ctx, this.tokens, this.shared.identity)),
    ).catch((e) => {
      throw asLlamaError(e);
    });
  }

  loadSession(path: string): Promise<SessionLoadResult> {
    try {
      this.check();
      if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be a file path');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    return this.exclusive(async () => {
      try {
        this.tokens = await this.engine.compute(() => loadSession(path, this.ctx, this.shared.identity));
      } catch (e) {
        this.tokens = [];
        this.ctx.clearMemory();
        throw e;
      }
      return { tokens_loaded: this.tokens.length, prompt: this.vocab.decode(this.tokens, { renderSpecial: true }) };
    }).catch((e) => {
      throw asLlamaError(e);
    });
  }

  /** Frees the context once running operations end (call stop first to end a completion early). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.lock;
    await this.embLock;
    this.ctx.free();
    this.embCtx?.free();
    this.engine.forget(this);
    this.engine.releaseModel(this.shared);
  }
}

/** loadLlamaModelInfo: the GGUF header's scalar metadata (no weights are read). */
export function readModelInfo(path: string, skip: readonly string[] = []): Record<string, string | number> {
  if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be the path of a GGUF file');
  if (!existsSync(path)) throw new LlamaError('ERR_MODEL', `model file not found: ${path}`);
  try {
    const file = openGGUF(path);
    try {
      return ggufInfo(file, skip);
    } finally {
      file.close();
    }
  } catch (e) {
    throw asLlamaError(e);
  }
}
