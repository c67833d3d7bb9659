// The engine: models and contexts, on whichever thread runs it (the engine worker, or the
// caller's thread in tests). Models are cached by file and device choice and reference-
// counted, so several contexts on one model share its weights. Each context generates
// through one batcher (src/generation): completion() is one unit on it (a second while
// one runs is rejected with ERR_BUSY); in parallel mode N units share it. Session loads
// and saves wait until no unit runs; embeddings use their own context.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { type Device, deviceByName, listDevices } from '../backends/api.js';
import type { ChatTemplates } from '../chat/index.js';
import {
  Batcher,
  type BatcherStatus,
  contextMemory,
  GenerationUnit,
  interruptedResult,
  type LlamaCompletionOptions,
  type LlamaCompletionResult,
  type PreparedRequest,
  prepareRequest,
  type UnitHooks,
} from '../generation/index.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { Context, ContextError, defaultDevices, MAX_SEQ, Model } from '../model/index.js';
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
import { boolOption, type EngineModelOptions, intOption, optionError } from './options.js';
import { loadSession, saveSession } from './session.js';
import type { EmbeddingParams, PoolingTypeOption, SessionLoadResult, TokenizeOptions } from './types.js';

const log = logger('api');

/** Default context size (llama.node's), capped by the model's training context. */
const DEFAULT_N_CTX = 512;

/** The most sequences one context decodes together (parallel mode's n_parallel). */
export const MAX_PARALLEL = MAX_SEQ;

/** What the main thread learns about a new context. */
export interface ContextInfo {
  systemInfo: string;
  model: {
    desc: string;
    /** Bytes of weights. */
    size: number;
    /** Bytes of the GGUF file. */
    fileSize: number;
    nEmbd: number;
    nParams: number;
    nVocab: number;
    vocabType: string;
    nCtxTrain: number;
    metadata: Record<string, string>;
    arch: string;
  };
  templates: TemplateTexts;
  nCtx: number;
  /** Tokens per decode, at most. */
  nBatch: number;
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

/** A parallel request in flight: its unit (to stop it). */
interface ParallelRequest {
  unit: GenerationUnit | undefined;
  stopped: boolean;
  /** Ends its preparation (template rendering, grammar compilation). */
  prepare: AbortController;
}

/** How often a completion's stop flag is looked at while its template or grammar is worked on (ms). */
const STOP_POLL_MS = 20;

export interface ParallelConfig {
  /** Requests decoded together (slots); each gets n_ctx / n_parallel tokens. Default 2, at most 32. */
  n_parallel?: number;
  /** Tokens per decode step, at most (prompt chunks and generated tokens). Default: the context's n_batch. */
  n_batch?: number;
}

export class EngineContext {
  readonly ctx: Context;
  readonly info: ContextInfo;
  /** The generation loop over this context's sequences (none for encoders). */
  private readonly batcher: Batcher | undefined;
  private readonly nCtxTrain: number;
  private readonly ctxShift: boolean;
  /** Parallel mode: its slot count, 0 when off. */
  private nParallel = 0;
  private readonly requests = new Map<number, ParallelRequest>();
  private embCtx: Context | undefined;
  private chat: ChatTemplates | undefined;
  private completing = false;
  private released = false;
  private readonly embdNormalize: number;
  private readonly pooling: PoolingTypeOption | undefined;
  /** Called when the parallel status changes (the worker forwards it). */
  onStatus: ((s: BatcherStatus) => void) | undefined;
  private readonly templateLimits: EngineModelOptions['template_limits'];
  private readonly grammarLimits: EngineModelOptions['grammar_limits'];

  constructor(
    private readonly engine: Engine,
    private readonly shared: SharedModel,
    o: EngineModelOptions,
  ) {
    const model = shared.model;
    const hp = model.hp;
    const train = hp.nCtxTrain;
    this.nCtxTrain = train > 0 ? train : Number.POSITIVE_INFINITY;
    const seqs = o.n_parallel ?? 1;
    let nCtx: number;
    if (o.n_ctx === undefined) nCtx = train > 0 ? Math.min(DEFAULT_N_CTX, train) : DEFAULT_N_CTX;
    else if (o.n_ctx === 0) nCtx = train > 0 ? train * seqs : DEFAULT_N_CTX;
    else nCtx = o.n_ctx;
    if (train > 0 && nCtx > train * seqs) {
      throw optionError(
        'n_ctx',
        o.n_ctx,
        seqs > 1
          ? `must be at most ${train * seqs}: ${seqs} sequences (n_parallel) of ${train} tokens, the context ${model.name} was trained with`
          : `must be at most ${train}, the context ${model.name} was trained with (or raise n_parallel to share more among sequences)`,
      );
    }
    this.ctxShift = o.ctx_shift;
    this.templateLimits = o.template_limits;
    this.grammarLimits = o.grammar_limits;
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
        // sequence ids cost nothing until used: any parallel.enable() up to the most
        nSeqMax: MAX_PARALLEL,
        ...(o.n_threads ? { nThreads: o.n_threads } : {}),
        typeK: o.cache_type_k,
        typeV: o.cache_type_v,
        ...(encoder ? { embeddings: true, ...(o.pooling_type ? { pooling: o.pooling_type } : {}) } : {}),
      });
    } catch (e) {
      if (e instanceof ContextError) throw new LlamaError('ERR_OPTION', e.message);
      throw e;
    }
    if (!encoder) {
      this.batcher = new Batcher(this.ctx, contextMemory(this.ctx), (fn) => this.engine.compute(fn), {
        slots: 1,
        nCtxSeq: Math.min(nCtx, this.nCtxTrain),
        nBatch,
        ctxShift: this.ctxShift,
      });
      this.batcher.onChange = () => {
        if (this.nParallel > 0) this.onStatus?.(this.batcher!.status());
      };
    }
    this.info = {
      systemInfo: systemInfo(model.devices, this.ctx.nThreads),
      model: {
        desc: model.describe(),
        size: model.nBytes,
        fileSize: model.fileSize,
        nEmbd: hp.nEmbd,
        nParams: model.nParams,
        nVocab: model.vocab.nTokens,
        vocabType: model.vocab.type,
        nCtxTrain: train,
        metadata: shared.metadata,
        arch: hp.arch,
      },
      templates: o.chat_template ? { ...shared.templates, override: o.chat_template } : shared.templates,
      nCtx,
      nBatch,
      embeddingOnly: encoder,
    };
  }

  get vocab() {
    return this.shared.model.vocab;
  }

  get model(): Model {
    return this.shared.model;
  }

  /** The tokens sequence 0 holds (what a session saves). */
  get tokens(): readonly number[] {
    return this.batcher?.sequence(0).tokens ?? [];
  }

  templates(): ChatTemplates {
    this.chat ??= templatesFromTexts(this.info.templates);
    return this.chat;
  }

  private check(): void {
    if (this.released) throw new LlamaError('ERR_RELEASED', 'the context was released');
  }

  private generator(): Batcher {
    this.check();
    if (!this.batcher) {
      throw new LlamaError(
        'ERR_CONTEXT',
        `${this.info.model.arch} is an embedding model: it does not generate text (use embedding())`,
      );
    }
    return this.batcher;
  }

  tokenize(text: string, o: TokenizeOptions = {}): number[] {
    this.check();
    if (typeof text !== 'string') throw optionError('text', text, 'must be a string');
    if (o === null || typeof o !== 'object') throw optionError('options', o, 'must be an object');
    return this.vocab.encode(text, {
      addSpecial: boolOption('add_special', o.add_special, false),
      parseSpecial: boolOption('parse_special', o.parse_special, false),
    });
  }

  /** Each token's text as bytes (a byte string: one char per byte). */
  pieces(tokens: readonly number[]): string[] {
    return tokens.map((id) => this.vocab.pieceBytes(id, true));
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

  /** Runs one request as a unit of the batcher; resolves with its result. */
  private async generate(
    b: Batcher,
    o: LlamaCompletionOptions,
    hooks: UnitHooks,
    id?: number,
    onUnit?: (u: GenerationUnit) => void,
    prepare = new AbortController(),
  ): Promise<LlamaCompletionResult> {
    // the untrusted work (template, grammar) ends on a stop request or release()
    this.preparing.add(prepare);
    const poll = hooks.shouldStop
      ? setInterval(() => {
          if (hooks.shouldStop!()) prepare.abort();
        }, STOP_POLL_MS)
      : undefined;
    try {
      if (hooks.shouldStop?.()) prepare.abort();
      let prepared: PreparedRequest;
      try {
        prepared = await prepareRequest(
          {
            vocab: this.vocab,
            templates: () => this.templates(),
            ...(this.templateLimits ? { templateLimits: this.templateLimits } : {}),
            ...(this.grammarLimits ? { grammarLimits: this.grammarLimits } : {}),
          },
          o,
          { nCtx: b.options.nCtxSeq, ctxShift: b.options.ctxShift },
          prepare.signal,
        );
      } catch (e) {
        if (prepare.signal.aborted) return interruptedResult();
        throw e;
      } finally {
        clearInterval(poll);
        this.preparing.delete(prepare);
      }
      this.check();
      const unit = new GenerationUnit(prepared, this.vocab, hooks, id);
      onUnit?.(unit);
      b.submit(unit);
      return await unit.done;
    } catch (e) {
      throw asLlamaError(e);
    }
  }

  /** Requests being prepared, to end at release(). */
  private readonly preparing = new Set<AbortController>();

  /** A completion; rejects with ERR_BUSY while another runs on this context. */
  completion(o: LlamaCompletionOptions, hooks: UnitHooks = {}, id?: number): Promise<LlamaCompletionResult> {
    let b: Batcher;
    try {
      b = this.generator();
      if (this.completing) {
        throw new LlamaError(
          'ERR_BUSY',
          'a completion is already running on this context; await it (or call stopCompletion()) before starting another, use ctx.parallel, or use another context on the same model',
        );
      }
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    this.completing = true;
    return this.inOrder(() => this.generate(b, o, hooks, id)).finally(() => {
      this.completing = false;
    });
  }

  /** completion() and session operations run in the order they were asked for. */
  private order: Promise<unknown> = Promise.resolve();

  private inOrder<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.order.then(fn);
    this.order = run.catch(() => {});
    return run;
  }

  // ---- parallel mode (llama.node's ctx.parallel) ----

  /** Turns parallel mode on (or changes it): n_parallel slots share the context. */
  async enableParallel(c: ParallelConfig): Promise<boolean> {
    const b = this.generator();
    const n = intOption('n_parallel', c.n_parallel, 2, 1);
    if (n > MAX_PARALLEL) throw optionError('n_parallel', n, `must be at most ${MAX_PARALLEL}`);
    const nBatch = intOption('n_batch', c.n_batch, this.info.nBatch, 1);
    const nCtxSeq = Math.min(Math.floor(this.ctx.nCtx / n), this.nCtxTrain);
    if (nCtxSeq < 8) {
      throw optionError(
        'n_parallel',
        n,
        `leaves ${nCtxSeq} tokens of context per slot (n_ctx ${this.ctx.nCtx}); raise n_ctx`,
      );
    }
    await b.exclusive(() => {
      b.configure({ slots: n, nCtxSeq, nBatch: Math.min(nBatch, this.ctx.nBatch) });
      this.nParallel = n;
    });
    this.onStatus?.(b.status());
    return true;
  }

  /** Back to one sequence: requests still queued or running are stopped. */
  async disableParallel(): Promise<void> {
    const b = this.generator();
    for (const r of this.requests.values()) {
      r.stopped = true;
      if (r.unit) b.cancel(r.unit);
    }
    await b.exclusive(() => {
      b.configure({ slots: 1, nCtxSeq: Math.min(this.ctx.nCtx, this.nCtxTrain), nBatch: this.info.nBatch });
      this.nParallel = 0;
    });
  }

  get parallelEnabled(): boolean {
    return this.nParallel > 0;
  }

  /** A request of the parallel API; `id` names it for stopParallel(). */
  parallelCompletion(id: number, o: LlamaCompletionOptions, hooks: UnitHooks = {}): Promise<LlamaCompletionResult> {
    let b: Batcher;
    try {
      b = this.generator();
      if (this.nParallel === 0)
        throw new LlamaError('ERR_CONTEXT', 'parallel mode is not enabled: call parallel.enable() first');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    const r: ParallelRequest = { unit: undefined, stopped: false, prepare: new AbortController() };
    this.requests.set(id, r);
    return this.generate(
      b,
      o,
      hooks,
      id,
      (u) => {
        r.unit = u;
        if (r.stopped) u.stop();
      },
      r.prepare,
    ).finally(() => this.requests.delete(id));
  }

  /** Stops a parallel request (queued: it leaves the queue; running: at its next step). */
  stopParallel(id: number): void {
    const r = this.requests.get(id);
    if (!r) return;
    r.stopped = true;
    r.prepare.abort();
    if (r.unit) this.batcher?.cancel(r.unit);
  }

  parallelStatus(): BatcherStatus {
    return this.generator().status();
  }

  // ---- embeddings ----

  /** The (pooled, normalized) embedding of a text (or of token ids). */
  embedding(text: string | number[], params: EmbeddingParams = {}): Promise<{ embedding: Float32Array }> {
    try {
      this.check();
      if (typeof text !== 'string' && !Array.isArray(text)) {
        throw optionError('text', text, 'must be a string (or an array of token ids)');
      }
      if (params !== null && typeof params !== 'object') throw optionError('params', params, 'must be an object');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    const norm = params?.embd_normalize ?? this.embdNormalize;
    const run = async () => {
      const mode = checkNormalize(norm);
      const tokens =
        typeof text === 'string' ? this.vocab.encode(text, { addSpecial: true, parseSpecial: true }) : [...text];
      if (tokens.length === 0) throw optionError('text', text, 'has no tokens');
      const n = this.vocab.nTokens;
      for (const t of tokens) {
        if (!Number.isInteger(t) || t < 0 || t >= n) throw optionError('text', t, `token ids must be 0..${n - 1}`);
      }
      const ectx = this.embeddingContext();
      if (tokens.length > ectx.nBatch) {
        throw new LlamaError(
          'ERR_CONTEXT',
          `the text is ${tokens.length} tokens; embeddings take at most ${ectx.nBatch} (raise n_ctx)`,
        );
      }
      return this.engine.compute(async () => {
        ectx.clearMemory();
        await ectx.decode({ tokens });
        const v = ectx.pooling === 'none' ? ectx.getEmbeddings(-1) : ectx.getEmbeddingsSeq(0);
        return { embedding: normalizeEmbedding(v, mode) };
      });
    };
    return this.embeddingQueue(run).catch((e) => {
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
      const n = Math.min(this.ctx.nCtx, this.nCtxTrain);
      this.embCtx = new Context(model, {
        nCtx: n,
        nBatch: n,
        nUbatch: this.ctx.nUbatch,
        nThreads: this.ctx.nThreads,
        embeddings: true,
        pooling,
      });
    }
    return this.embCtx;
  }

  // ---- sessions (sequence 0) ----

  saveSession(path: string): Promise<void> {
    let b: Batcher;
    try {
      b = this.generator();
      if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be a file path');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    return this.inOrder(() =>
      b.exclusive(() =>
        this.engine.compute(() => saveSession(path, this.ctx, b.sequence(0).tokens, this.shared.identity)),
      ),
    ).catch((e) => {
      throw asLlamaError(e);
    });
  }

  loadSession(path: string): Promise<SessionLoadResult> {
    let b: Batcher;
    try {
      b = this.generator();
      if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be a file path');
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    return this.inOrder(() =>
      b.exclusive(async () => {
        const seq = b.sequence(0);
        try {
          // a session holds sequence 0 alone: the other slots' caches go
          const tokens = await this.engine.compute(() => loadSession(path, this.ctx, this.shared.identity));
          b.forgetAll();
          seq.tokens = tokens;
        } catch (e) {
          this.ctx.clearMemory();
          b.forgetAll();
          throw e;
        }
        return {
          tokens_loaded: seq.tokens.length,
          prompt: this.vocab.decode(seq.tokens, { renderSpecial: true }),
        };
      }),
    ).catch((e) => {
      throw asLlamaError(e);
    });
  }

  /** Frees the context once running operations end (running completions are stopped). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    for (const ac of this.preparing) ac.abort();
    await this.batcher?.close();
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
