// The engine: models and contexts, on whichever thread runs it (the engine worker, or the
// caller's thread in tests). Models are cached by file and device choice and reference-
// counted, so several contexts on one model share its weights. Each context generates
// through one batcher (src/generation): completion() is one unit on it (a second while
// one runs is rejected with ERR_BUSY); in parallel mode N units share it. Session loads
// and saves wait until no unit runs; embeddings use their own context, reranking a
// rank-pooling one (the context itself for a BERT-style reranker). A context applies its
// LoRA adapters (lora_list, applyLoraAdapters) to every unit unless a request names its
// own scales; with a draft model (or n-gram lookup) its units decode speculatively.

import type { Device } from '../backends/api.js';
import { devicesReady, namedDevices } from '../backends/index.js';
import type { ChatTemplates } from '../chat/index.js';
import { extractMedia } from '../chat/messages.js';
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
  type UnitSettings,
} from '../generation/index.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import {
  type ActiveLora,
  Context,
  ContextError,
  defaultDevices,
  LoraAdapter,
  loraKey,
  MAX_SEQ,
  Model,
  rerankScore,
  rerankTokens,
} from '../model/index.js';
import { platform } from '../platform/index.js';
import { buildSamplingChain, DEFAULT_SEED } from '../sampling/index.js';
import { checkDraftCompatible, type Drafter, DraftModelDrafter, NgramDrafter } from '../speculative/index.js';
import { Vocab } from '../vocab/index.js';
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
import { EngineMultimodal, type MediaTokenizeResult, type MultimodalOptions } from './multimodal.js';
import { boolOption, type EngineModelOptions, intOption, loraListOption, optionError } from './options.js';
import { loadSession, saveSession } from './session.js';
import type {
  EmbeddingParams,
  EmbeddingResult,
  PoolingTypeOption,
  RerankParams,
  RerankResult,
  SessionLoadResult,
  TokenizeOptions,
} from './types.js';

const log = logger('api');

/** Default context size (llama.node's), capped by the model's training context. */
const DEFAULT_N_CTX = 512;

/** The most sequences one context decodes together (parallel mode's n_parallel). */
export const MAX_PARALLEL = MAX_SEQ;

/** Pairs scored in one decode, at most. */
const RERANK_SEQS = 16;

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
  /** The LoRA adapters applied (lora_list). */
  loras: { path: string; scaled: number }[];
  /** Speculative decoding's drafter ('draft-model', 'ngram'), if any. */
  drafter?: string;
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

/** The devices for a context: by name (the host appended), or the registry's default (GPUs first) per lib_variant and n_gpu_layers. */
function pickDevices(o: EngineModelOptions): Device[] {
  if (o.devices) {
    try {
      return namedDevices(o.devices);
    } catch (e) {
      throw optionError('devices', o.devices, (e as Error).message);
    }
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
  private readonly contexts = new Set<EngineContext | VocabOnlyContext>();
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

  /** Open (or share) the model and create a context on it (its adapters and draft model too). */
  async createContext(o: EngineModelOptions, hooks: LoadHooks = {}): Promise<EngineContext> {
    let ec: EngineContext;
    try {
      if (o.vocab_only) throw new LlamaError('ERR_OPTION', 'vocab_only: open the context with openVocabOnly()');
      const shared = await this.acquire(o, hooks);
      try {
        ec = new EngineContext(this, shared, o);
        this.contexts.add(ec);
      } catch (e) {
        this.releaseModel(shared);
        throw e;
      }
    } catch (e) {
      throw asLlamaError(e);
    }
    try {
      await ec.init(o, hooks);
    } catch (e) {
      await ec.release();
      throw asLlamaError(e);
    }
    return ec;
  }

  /** A context on the model's vocabulary alone (vocab_only): no weights are read. */
  openVocabOnly(o: EngineModelOptions): VocabOnlyContext {
    const vc = VocabOnlyContext.open(this, o);
    this.contexts.add(vc);
    return vc;
  }

  get contextCount(): number {
    return this.contexts.size;
  }

  get modelCount(): number {
    return this.models.size;
  }

  /** @internal A model, loaded or shared (release it with releaseModel). */
  async acquire(o: EngineModelOptions, hooks: LoadHooks): Promise<SharedModel> {
    const at = modelFile(o.model);
    // optional backends (WebGPU) register asynchronously; a GPU asked for by name or by
    // n_gpu_layers starts the probe that Node otherwise skips
    await devicesReady(o.devices, (o.n_gpu_layers ?? 0) > 0);
    const devices = pickDevices(o);
    const key = JSON.stringify([at.key, devices.map((d) => d.name), o.n_gpu_layers ?? -1]);
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
  forget(ec: EngineContext | VocabOnlyContext): void {
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

/** What a slot action did: tokens saved, restored or erased, and its time. */
export interface SlotActionResult {
  id_slot: number;
  n_saved?: number;
  n_restored?: number;
  n_erased?: number;
  ms?: number;
}

export interface ParallelConfig {
  /** Requests decoded together (slots); each gets n_ctx / n_parallel tokens. Default 2, at most 32. */
  n_parallel?: number;
  /** Tokens per decode step, at most (prompt chunks and generated tokens). Default: the context's n_batch. */
  n_batch?: number;
  /**
   * (llama-ts) llama.cpp's kv_unified: every slot may use the whole context (up to the
   * training context), the slots sharing its cells; when they fill it, idle slots' caches
   * are dropped, then the requests in the step fail. Default false: n_ctx / n_parallel each.
   */
  kv_unified?: boolean;
}

/** tokenize() on a vocabulary: options checked, special tokens as asked. */
function tokenizeWith(vocab: Vocab, text: string, o: TokenizeOptions): number[] {
  if (typeof text !== 'string') throw optionError('text', text, 'must be a string');
  if (o === null || typeof o !== 'object') throw optionError('options', o, 'must be an object');
  return vocab.encode(text, {
    addSpecial: boolOption('add_special', o.add_special, false),
    parseSpecial: boolOption('parse_special', o.parse_special, false),
  });
}

/** detokenize() on a vocabulary: every id checked, special tokens rendered. */
function detokenizeWith(vocab: Vocab, tokens: ArrayLike<number>): string {
  const ids = Array.from(tokens ?? []);
  const n = vocab.nTokens;
  for (const t of ids) {
    if (!Number.isInteger(t) || t < 0 || t >= n) throw optionError('tokens', t, `token ids must be 0..${n - 1}`);
  }
  return vocab.decode(ids, { renderSpecial: true });
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
  /** LoRA adapters loaded for this context, each with its scale (the default for requests). */
  private adapters: { path: string; scaled: number; adapter: LoraAdapter }[] = [];
  /** Speculative decoding: the drafter, its draft model, and the request defaults. */
  private drafter: Drafter | undefined;
  private draftModel: SharedModel | undefined;
  private draftDefaults = { max: 0, min: 0, pMin: 0 };
  /** The rank-pooling context of a generative reranker (Qwen3-Reranker style). */
  private rankCtx: Context | undefined;
  /** The multimodal projector (initMultimodal), if any. */
  private mm: EngineMultimodal | undefined;

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
        // (a sliding-window cache is sized for n_parallel sequences, and grows if asked)
        nSeqMax: MAX_PARALLEL,
        nSeqWindow: seqs,
        ...(o.n_threads ? { nThreads: o.n_threads } : {}),
        typeK: o.cache_type_k,
        typeV: o.cache_type_v,
        // 'auto' is on: every device here runs the fused op (llama.cpp's auto probes for it)
        flashAttn: o.flash_attn_type !== 'off',
        swaFull: o.swa_full,
        ...(encoder ? { embeddings: true, ...(o.pooling_type ? { pooling: o.pooling_type } : {}) } : {}),
      });
    } catch (e) {
      if (e instanceof ContextError) throw new LlamaError('ERR_OPTION', e.message);
      throw e;
    }
    if (!encoder && this.ctxShift && !this.ctx.canShift) {
      // as llama-server: said once at load; a full context then ends the generation
      log.warn(
        `ctx_shift: ${model.hp.arch} cannot shift its context (a recurrent state keeps every token it has seen); a full context ends the generation instead`,
      );
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
      loras: [],
    };
  }

  /** Loads the context's LoRA adapters and sets up speculative decoding (after the constructor). */
  async init(o: EngineModelOptions, hooks: LoadHooks = {}): Promise<void> {
    if (o.lora_list.length > 0) await this.setAdapters(o.lora_list, hooks.signal);
    const type = o.spec_type ?? (o.model_draft ? 'draft' : undefined);
    if (!type || o.draft_max === 0) return;
    if (!this.batcher) {
      log.warn(`${this.info.model.arch} is an embedding model: speculative decoding does not apply`);
      return;
    }
    this.draftDefaults = { max: o.draft_max, min: o.draft_min, pMin: o.draft_p_min };
    if (type === 'ngram') this.drafter = new NgramDrafter();
    else {
      const shared = await this.engine.acquire(
        { ...o, model: o.model_draft! },
        hooks.signal ? { signal: hooks.signal } : {},
      );
      this.draftModel = shared;
      checkDraftCompatible(this.model, shared.model);
      this.drafter = new DraftModelDrafter(shared.model, {
        nSeq: MAX_PARALLEL,
        // each slot holds at most its context and a draft
        nCtx: this.ctx.nCtx + MAX_PARALLEL * (o.draft_max + 1),
        nThreads: this.ctx.nThreads,
        pMin: o.draft_p_min,
        nMin: o.draft_min,
      });
    }
    this.batcher.configure({ drafter: this.drafter });
    this.info.drafter = this.drafter.kind;
    log.info(
      `speculative decoding: ${type === 'ngram' ? 'n-gram lookup' : `draft model ${o.model_draft}`}, up to ${o.draft_max} tokens per step`,
    );
  }

  // ---- LoRA adapters ----

  /** The adapters applied by default, at their scales. */
  private defaultLoras(): ActiveLora[] {
    return this.adapters.map((a) => ({ adapter: a.adapter, scale: a.scaled }));
  }

  /** A request's `lora` ([{ id, scale }]): those adapters at those scales, the others at 0 (llama-server). */
  private requestLoras(list: readonly { id: number; scale: number }[]): ActiveLora[] {
    const scales = new Map<number, number>();
    for (const e of list) {
      if (e.id >= this.adapters.length) {
        throw optionError('lora', list, `no adapter ${e.id} (the context has ${this.adapters.length})`);
      }
      scales.set(e.id, e.scale);
    }
    return this.adapters.map((a, id) => ({ adapter: a.adapter, scale: scales.get(id) ?? 0 }));
  }

  private unitSettings(o: LlamaCompletionOptions): UnitSettings {
    const d = this.draftDefaults;
    return {
      loras: o.lora ? this.requestLoras(o.lora) : this.defaultLoras(),
      ...(this.drafter
        ? { draft: { max: o.draft_max ?? d.max, min: o.draft_min ?? d.min, pMin: o.draft_p_min ?? d.pMin } }
        : {}),
    };
  }

  /** Loads the adapters of `list` (reusing those already loaded) and makes them the context's. */
  private async setAdapters(list: { path: string; scaled: number }[], signal?: AbortSignal): Promise<void> {
    const next: typeof this.adapters = [];
    const fresh: LoraAdapter[] = [];
    try {
      for (const e of list) {
        let adapter =
          this.adapters.find((a) => a.path === e.path)?.adapter ?? next.find((a) => a.path === e.path)?.adapter;
        if (!adapter) {
          adapter = await LoraAdapter.load(this.model, e.path, signal ? { signal } : {});
          fresh.push(adapter);
        }
        next.push({ path: e.path, scaled: e.scaled, adapter });
      }
    } catch (e) {
      for (const a of fresh) a.free();
      throw e;
    }
    const swap = () => {
      const kept = new Set(next.map((a) => a.adapter));
      for (const a of this.adapters) if (!kept.has(a.adapter)) a.adapter.free();
      this.adapters = next;
      this.info.loras = next.map((a) => ({ path: a.path, scaled: a.scaled }));
      // contexts without units apply them at their next decode
      this.embCtx?.setLoras(this.defaultLoras());
      this.rankCtx?.setLoras(this.defaultLoras());
      if (!this.batcher) this.ctx.setLoras(this.defaultLoras());
    };
    // (units that run keep the adapters they started with until they end)
    if (this.batcher) await this.batcher.exclusive(swap);
    else await this.embeddingQueue(async () => swap());
  }

  /** llama.node's applyLoraAdapters: these adapters (and scales) replace the context's. */
  applyLoraAdapters(list: unknown): Promise<void> {
    let checked: { path: string; scaled: number }[];
    try {
      this.check();
      checked = loraListOption('adapters', list);
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    return this.inOrder(() => this.setAdapters(checked)).catch((e) => {
      throw asLlamaError(e);
    });
  }

  /** llama.node's removeLoraAdapters: no adapters from the next request on. */
  removeLoraAdapters(): Promise<void> {
    return this.applyLoraAdapters([]);
  }

  /** llama.node's getLoadedLoraAdapters: [{ path, scaled }]. */
  getLoadedLoraAdapters(): { path: string; scaled: number }[] {
    return this.adapters.map((a) => ({ path: a.path, scaled: a.scaled }));
  }

  // ---- reranking ----

  /** The context that scores pairs: this one for a BERT-style reranker, else a rank-pooling second context. */
  private rankContext(): Context {
    const pooling = this.pooling ?? this.model.hp.pooling;
    if (this.info.embeddingOnly && this.ctx.pooling === 'rank') return this.ctx;
    if (this.info.embeddingOnly && pooling !== 'rank') {
      throw new LlamaError('ERR_CONTEXT', `${this.model.path} is not a reranker (pooling_type ${this.ctx.pooling})`);
    }
    if (!this.rankCtx) {
      const n = Math.min(this.ctx.nCtx, this.nCtxTrain);
      try {
        this.rankCtx = new Context(this.model, {
          nCtx: n,
          nBatch: n,
          nUbatch: this.info.embeddingOnly ? n : Math.min(512, n),
          nThreads: this.ctx.nThreads,
          nSeqMax: RERANK_SEQS,
          embeddings: true,
          pooling: 'rank',
        });
      } catch (e) {
        if (e instanceof ContextError) throw new LlamaError('ERR_CONTEXT', `cannot rerank: ${e.message}`);
        throw e;
      }
      this.rankCtx.setLoras(this.defaultLoras());
    }
    return this.rankCtx;
  }

  /**
   * Scores of `documents` against `query` (llama.node's rerank, unsorted): each pair laid
   * out as llama-server does (the model's rerank prompt, or [BOS] query [EOS] [SEP]
   * document [EOS]), several pairs per decode. `normalize` > 0: through a sigmoid.
   */
  rerank(query: string, documents: string[], params: RerankParams = {}): Promise<RerankResult[]> {
    try {
      this.check();
      if (typeof query !== 'string') throw optionError('query', query, 'must be a string');
      if (!Array.isArray(documents) || !documents.every((d) => typeof d === 'string')) {
        throw optionError('documents', documents, 'must be an array of strings');
      }
      if (params !== null && params !== undefined && typeof params !== 'object') {
        throw optionError('params', params, 'must be an object');
      }
      const nz = params?.normalize;
      if (nz !== undefined && nz !== null && typeof nz !== 'number' && typeof nz !== 'boolean') {
        throw optionError('normalize', nz, 'must be a number or true/false');
      }
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
    const normalize = params?.normalize === true || (typeof params?.normalize === 'number' && params.normalize > 0);
    const run = async (): Promise<RerankResult[]> => {
      const rctx = this.rankContext();
      const pairs = documents.map((d, index) => ({ index, tokens: rerankTokens(this.model, query, d) }));
      for (const p of pairs) {
        if (p.tokens.length === 0)
          throw optionError(`documents[${p.index}]`, documents[p.index], 'the pair has no tokens');
        if (p.tokens.length > rctx.nBatch) {
          throw new LlamaError(
            'ERR_CONTEXT',
            `document ${p.index} is ${p.tokens.length} tokens with the query; the context holds ${rctx.nBatch} (raise n_ctx)`,
          );
        }
      }
      const out: RerankResult[] = [];
      for (let i = 0; i < pairs.length; ) {
        // as many pairs as fit one decode (one sequence each)
        const group = [pairs[i]!];
        let n = pairs[i]!.tokens.length;
        while (
          i + group.length < pairs.length &&
          group.length < rctx.nSeqMax &&
          n + pairs[i + group.length]!.tokens.length <= rctx.nBatch
        ) {
          n += pairs[i + group.length]!.tokens.length;
          group.push(pairs[i + group.length]!);
        }
        i += group.length;
        await this.engine.compute(async () => {
          rctx.clearMemory();
          await rctx.decode({
            tokens: group.flatMap((p) => p.tokens),
            seqIds: group.flatMap((p, s) => p.tokens.map(() => s)),
          });
          group.forEach((p, s) => {
            out.push({
              index: p.index,
              score: rerankScore(this.model, rctx.getEmbeddingsSeq(s), normalize),
              n_tokens: p.tokens.length,
            });
          });
        });
      }
      return out;
    };
    return this.embeddingQueue(run).catch((e) => {
      throw asLlamaError(e);
    });
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
    return tokenizeWith(this.vocab, text, o);
  }

  /** Each token's text as bytes (a byte string: one char per byte). */
  pieces(tokens: readonly number[]): string[] {
    return tokens.map((id) => this.vocab.pieceBytes(id, true));
  }

  detokenize(tokens: ArrayLike<number>): string {
    this.check();
    return detokenizeWith(this.vocab, tokens);
  }

  // ---- multimodal (llama.node's initMultimodal) ----

  /** Loads a projector (replacing one loaded before); its support ({ vision, audio }). */
  initMultimodal(o: MultimodalOptions): Promise<{ vision: boolean; audio: boolean }> {
    try {
      this.check();
      const b = this.generator();
      if (o === null || typeof o !== 'object') throw optionError('options', o, 'must be an object');
      if (typeof o.path !== 'string' || o.path === '') {
        throw optionError('path', o.path, 'must be the path of a multimodal projector (mmproj) GGUF file');
      }
      for (const k of ['image_min_tokens', 'image_max_tokens'] as const) {
        const v = o[k];
        if (v !== undefined && !(Number.isInteger(v) && v >= 0))
          throw optionError(k, v, 'must be a non-negative integer');
      }
      return this.inOrder(async () => {
        const mm = await EngineMultimodal.load(this.model, this.ctx, o);
        await b.exclusive(() => {
          this.mm?.free();
          this.mm = mm;
          b.configure({ media: mm });
        });
        return mm.support;
      }).catch((e) => {
        throw asLlamaError(e);
      });
    } catch (e) {
      return Promise.reject(asLlamaError(e));
    }
  }

  get multimodal(): EngineMultimodal | undefined {
    return this.mm;
  }

  /** Frees the projector; cached prompts that hold media are dropped with it. */
  releaseMultimodal(): Promise<void> {
    const b = this.batcher;
    if (!b || !this.mm) return Promise.resolve();
    return this.inOrder(() =>
      b.exclusive(() => {
        this.mm?.free();
        this.mm = undefined;
        b.configure({ media: undefined });
        b.forgetAll();
      }),
    );
  }

  /** tokenize(text, media_paths) with media: mtmd's chunks (BOS added, special tokens parsed). */
  async tokenizeMedia(text: string, refs: readonly string[]): Promise<MediaTokenizeResult> {
    this.check();
    if (typeof text !== 'string') throw optionError('text', text, 'must be a string');
    const mm = this.requireMultimodal('media_paths', refs);
    return mm.tokenize(text, await mm.decode(refs));
  }

  private requireMultimodal(option: string, value: unknown): EngineMultimodal {
    if (!this.mm) {
      throw optionError(option, value, 'media needs a multimodal projector: call initMultimodal() first');
    }
    return this.mm;
  }

  /**
   * A request's media (media_paths, or the image parts of its messages, as llama.node
   * takes them): decoded, and the prompt tokenizer that places them; undefined without media.
   */
  private async promptMedia(o: LlamaCompletionOptions): Promise<((text: string) => number[]) | undefined> {
    const given = (o as { media_paths?: unknown }).media_paths;
    let refs: string[];
    if (given !== undefined && given !== null) {
      refs = typeof given === 'string' ? [given] : (given as string[]);
      if (!Array.isArray(refs) || !refs.every((r) => typeof r === 'string')) {
        throw optionError('media_paths', given, 'must be a path or an array of paths');
      }
    } else refs = o.messages ? (extractMedia(o.messages).media_paths ?? []) : [];
    if (refs.length === 0) return undefined;
    const mm = this.requireMultimodal('media_paths', refs);
    const images = await mm.decode(refs);
    return (text) => mm.promptTokens(text, images);
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
        const media = await this.promptMedia(o);
        prepared = await prepareRequest(
          {
            vocab: this.vocab,
            ...(media ? { tokenizeMedia: media } : {}),
            templates: () => this.templates(),
            ...(this.templateLimits ? { templateLimits: this.templateLimits } : {}),
            ...(this.grammarLimits ? { grammarLimits: this.grammarLimits } : {}),
          },
          o,
          { nCtx: b.options.nCtxSeq, ctxShift: b.options.ctxShift, nBatch: b.options.nBatch },
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
      hooks.onPrompt?.({
        n_prompt_tokens: prepared.prompt.length,
        ...(prepared.prefixKey !== undefined ? { prefix_key: prepared.prefixKey } : {}),
      });
      const n = prepared.nCmpl;
      if (n > b.options.slots) {
        throw new LlamaError(
          'ERR_OPTION',
          `n_cmpl = ${n}: ${n} completions of one prompt need ${n} slots; ${b.options.slots === 1 ? 'use ctx.parallel with' : 'raise'} n_parallel ≥ ${n}`,
        );
      }
      // (followers decode with the leader's adapters: they copy its cache)
      const settings = this.unitSettings(o);
      // n_cmpl: one prompt, n samplers (a fixed seed gives choice i seed + i)
      const followers: GenerationUnit[] = [];
      for (let i = 1; i < n; i++) {
        const p = prepared.chain.params;
        const seed = p.seed === DEFAULT_SEED ? DEFAULT_SEED : (p.seed + i) >>> 0;
        const chain = buildSamplingChain({ ...p, seed }, this.vocab, prepared.chain.grammar?.clone());
        const f = new GenerationUnit({ ...prepared, chain }, this.vocab, hooks, id, settings);
        f.choiceIndex = i;
        followers.push(f);
      }
      const unit = new GenerationUnit(prepared, this.vocab, hooks, id, settings);
      if (n > 1) {
        unit.choiceIndex = 0;
        for (const f of followers) f.leader = unit;
        unit.followers.push(...followers);
      }
      onUnit?.(unit);
      b.submit(unit);
      if (n === 1) return await unit.done;
      const results = await Promise.all([unit.done, ...followers.map((f) => f.done)]);
      return { ...results[0]!, choices: results };
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
    const unified = boolOption('kv_unified', c.kv_unified, false);
    const nCtxSeq = Math.min(unified ? this.ctx.nCtx : Math.floor(this.ctx.nCtx / n), this.nCtxTrain);
    if (nCtxSeq < 8) {
      throw optionError(
        'n_parallel',
        n,
        `leaves ${nCtxSeq} tokens of context per slot (n_ctx ${this.ctx.nCtx}); raise n_ctx`,
      );
    }
    await b.exclusive(() => {
      // a sliding-window cache sized for fewer sequences is rebuilt: nothing stays cached
      const rebuilt = this.ctx.reserveSequences(n);
      // one KV stream per slot (llama-server's default, kv_unified off): a request's
      // logits do not depend on its slot or on what the other slots hold; kv_unified:
      // one stream the slots share
      if (this.ctx.setKvStreams(unified ? 1 : n) || rebuilt) b.forgetAll();
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
      // sequence 0 gets every cell again
      if (this.ctx.setKvStreams(1)) b.forgetAll();
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
    if (r.unit) for (const u of [r.unit, ...r.unit.followers]) this.batcher?.cancel(u);
  }

  parallelStatus(): BatcherStatus {
    return this.generator().status();
  }

  /**
   * A parallel slot's cache: saved to a file (its tokens and K/V, the session format),
   * restored from one, or erased. The slot must be idle; it is held meanwhile.
   */
  async slotAction(action: 'save' | 'restore' | 'erase', slot: number, path?: string): Promise<SlotActionResult> {
    const b = this.generator();
    if (this.nParallel === 0)
      throw new LlamaError('ERR_CONTEXT', 'parallel mode is not enabled: call parallel.enable() first');
    if (!Number.isInteger(slot) || slot < 0) throw optionError('id_slot', slot, 'must be a slot number');
    if (action !== 'erase' && (typeof path !== 'string' || path === ''))
      throw optionError('path', path, 'must be a file path');
    const t0 = performance.now();
    try {
      return await b.withSlot(slot, (seq) =>
        this.engine.compute(async () => {
          if (action === 'erase') {
            const n = seq.tokens.length;
            this.ctx.seqRm(seq.seq, -1, -1);
            seq.tokens = [];
            seq.lora = undefined;
            return { id_slot: slot, n_erased: n };
          }
          if (action === 'save') {
            await saveSession(path!, this.ctx, seq.tokens, this.shared.identity, seq.seq);
            return { id_slot: slot, n_saved: seq.tokens.length, ms: performance.now() - t0 };
          }
          seq.tokens = [];
          const tokens = await loadSession(path!, this.ctx, this.shared.identity, seq.seq);
          seq.tokens = tokens;
          // (a slot file does not name adapters, as llama-server's: its cache counts as the context's default set's)
          seq.lora = loraKey(this.defaultLoras());
          return { id_slot: slot, n_restored: tokens.length, ms: performance.now() - t0 };
        }),
      );
    } catch (e) {
      throw asLlamaError(e);
    }
  }

  // ---- embeddings ----

  /** The (pooled, normalized) embedding of a text (or of token ids). */
  embedding(text: string | number[], params: EmbeddingParams = {}): Promise<EmbeddingResult> {
    try {
      this.check();
      if (typeof text !== 'string' && !Array.isArray(text)) {
        throw optionError('text', text, 'must be a string (or an array of token ids)');
      }
      if (params !== null && typeof params !== 'object') throw optionError('params', params, 'must be an object');
      if (params?.per_token !== undefined && typeof params.per_token !== 'boolean') {
        throw optionError('per_token', params.per_token, 'must be a boolean');
      }
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
          `the text is ${tokens.length} tokens, too large: embeddings take at most ${ectx.nBatch} (raise n_ctx)`,
        );
      }
      return this.engine.compute(async () => {
        ectx.clearMemory();
        const all = ectx.pooling === 'none' && params?.per_token === true;
        await ectx.decode(all ? { tokens, logits: tokens.map(() => true) } : { tokens });
        const v = ectx.pooling === 'none' ? ectx.getEmbeddings(-1) : ectx.getEmbeddingsSeq(0);
        const out: EmbeddingResult = { embedding: normalizeEmbedding(v, mode) };
        if (all) out.embeddings = tokens.map((_, i) => ectx.getEmbeddings(i).slice());
        return out;
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
      this.embCtx.setLoras(this.defaultLoras());
    }
    return this.embCtx;
  }

  // ---- sessions (sequence 0) ----

  saveSession(path?: string): Promise<Uint8Array | undefined> {
    let b: Batcher;
    try {
      b = this.generator();
      if (path !== undefined && (typeof path !== 'string' || path === ''))
        throw optionError('path', path, 'must be a file path (or none: the session as bytes)');
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

  loadSession(path: string | Uint8Array): Promise<SessionLoadResult> {
    let b: Batcher;
    try {
      b = this.generator();
      if (!(path instanceof Uint8Array) && (typeof path !== 'string' || path === ''))
        throw optionError('path', path, "must be a file path or a session's bytes");
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
    this.rankCtx?.free();
    this.mm?.free();
    this.drafter?.free?.();
    for (const a of this.adapters) a.adapter.free();
    this.adapters = [];
    if (this.draftModel) this.engine.releaseModel(this.draftModel);
    this.engine.forget(this);
    this.engine.releaseModel(this.shared);
  }
}

/**
 * A context on a model's vocabulary alone (llama.node's vocab_only): the GGUF header is
 * read (vocabulary, metadata, chat templates), no weights and no architecture are
 * needed, so a vocabulary-only file (llama.cpp's ggml-vocab-*.gguf) opens too. It
 * tokenizes, detokenizes and formats chats; anything that evaluates the model is an
 * ERR_CONTEXT error (llama.node answers completion() with an empty result instead).
 */
export class VocabOnlyContext {
  onStatus: ((s: BatcherStatus) => void) | undefined;
  private released = false;

  private constructor(
    private readonly engine: Engine,
    readonly vocab: Vocab,
    readonly info: ContextInfo,
  ) {}

  static open(engine: Engine, o: EngineModelOptions): VocabOnlyContext {
    modelFile(o.model);
    const file = openGGUF(o.model);
    try {
      const arch = file.getString('general.architecture', 'unknown');
      const vocab = Vocab.fromGGUF(file);
      const train = file.getInt(`${arch}.context_length`, 0);
      const templates = templateTexts(file, vocab);
      const info: ContextInfo = {
        systemInfo: systemInfo([], 0),
        model: {
          desc: `${arch} (vocab only)`,
          size: 0,
          fileSize: file.fileSize,
          nEmbd: file.getInt(`${arch}.embedding_length`, 0),
          nParams: 0,
          nVocab: vocab.nTokens,
          vocabType: vocab.type,
          nCtxTrain: train,
          metadata: metadataStrings(file),
          arch,
        },
        templates: o.chat_template ? { ...templates, override: o.chat_template } : templates,
        nCtx: o.n_ctx || (train > 0 ? Math.min(DEFAULT_N_CTX, train) : DEFAULT_N_CTX),
        nBatch: 0,
        embeddingOnly: false,
        loras: [],
      };
      return new VocabOnlyContext(engine, vocab, info);
    } catch (e) {
      throw asLlamaError(e);
    } finally {
      file.close();
    }
  }

  private check(): void {
    if (this.released) throw new LlamaError('ERR_RELEASED', 'the context was released');
  }

  private noModel(what: string): Promise<never> {
    try {
      this.check();
      throw new LlamaError(
        'ERR_CONTEXT',
        `${what} needs the model's weights: this context was loaded with vocab_only (it tokenizes, detokenizes and formats chats)`,
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  tokenize(text: string, o: TokenizeOptions = {}): number[] {
    this.check();
    return tokenizeWith(this.vocab, text, o);
  }

  pieces(tokens: readonly number[]): string[] {
    return tokens.map((id) => this.vocab.pieceBytes(id, true));
  }

  detokenize(tokens: ArrayLike<number>): string {
    this.check();
    return detokenizeWith(this.vocab, tokens);
  }

  completion(_o: LlamaCompletionOptions, _hooks?: UnitHooks, _id?: number): Promise<LlamaCompletionResult> {
    return this.noModel('completion()');
  }

  parallelCompletion(_id: number, _o: LlamaCompletionOptions, _hooks?: UnitHooks): Promise<LlamaCompletionResult> {
    return this.noModel('parallel.completion()');
  }

  enableParallel(_c: ParallelConfig): Promise<boolean> {
    return this.noModel('parallel.enable()');
  }

  disableParallel(): Promise<void> {
    return this.noModel('parallel.disable()');
  }

  stopParallel(_id: number): void {}

  parallelStatus(): BatcherStatus {
    this.check();
    throw new LlamaError('ERR_CONTEXT', 'parallel mode is not enabled: this context was loaded with vocab_only');
  }

  slotAction(_action: 'save' | 'restore' | 'erase', _slot: number, _path?: string): Promise<SlotActionResult> {
    return this.noModel('a slot action');
  }

  embedding(_text: string | number[], _params?: EmbeddingParams): Promise<{ embedding: Float32Array }> {
    return this.noModel('embedding()');
  }

  saveSession(_path?: string): Promise<Uint8Array | undefined> {
    return this.noModel('saveSession()');
  }

  initMultimodal(_o: MultimodalOptions): Promise<{ vision: boolean; audio: boolean }> {
    return this.noModel('initMultimodal()');
  }

  releaseMultimodal(): Promise<void> {
    return Promise.resolve();
  }

  tokenizeMedia(_text: string, _refs: readonly string[]): Promise<MediaTokenizeResult> {
    return this.noModel('tokenize() with media');
  }

  applyLoraAdapters(_list: unknown): Promise<void> {
    return this.noModel('applyLoraAdapters()');
  }

  getLoadedLoraAdapters(): { path: string; scaled: number }[] {
    this.check();
    return [];
  }

  rerank(_query: string, _documents: string[], _params?: RerankParams): Promise<RerankResult[]> {
    return this.noModel('rerank()');
  }

  loadSession(_path: string | Uint8Array): Promise<SessionLoadResult> {
    return this.noModel('loadSession()');
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.engine.forget(this);
  }
}

/** The model file's identity key (its real path on Node); ERR_MODEL when it is absent or not a file. */
function modelFile(name: string): { key: string } {
  const info = platform.fileInfo(name);
  if (!info) throw new LlamaError('ERR_MODEL', `model file not found: ${name}`);
  if (!info.isFile) throw new LlamaError('ERR_MODEL', `model path is not a file: ${name}`);
  return info;
}

/** loadLlamaModelInfo: the GGUF header's scalar metadata (no weights are read). */
export function readModelInfo(path: string, skip: readonly string[] = []): Record<string, string | number> {
  if (typeof path !== 'string' || path === '') throw optionError('path', path, 'must be the path of a GGUF file');
  if (!platform.fileInfo(path)) throw new LlamaError('ERR_MODEL', `model file not found: ${path}`);
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
