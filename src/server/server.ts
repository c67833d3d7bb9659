// The OpenAI-compatible server (llama-server's endpoints): HTTP and JSON on this thread,
// the model in the library's engine worker. The server is a client of the library's
// parallel API (ctx.parallel): each request is a unit of the context's batcher, so its N
// slots are N units decoded together, with the library's prefix reuse, context shift,
// sampling and stop strings (src/generation). Endpoints on node:http (http.ts), shapes
// in openai.ts.
//
//   GET  /health /v1/health /v1/models /models /metrics /props /slots
//   POST /v1/chat/completions /chat/completions /v1/completions (OpenAI's shapes)
//        /v1/responses (responses.ts) /v1/messages /v1/messages/count_tokens (anthropic.ts)
//        /completion /completions /infill /apply-template /slots/:id?action= (native.ts:
//        llama-server's own shapes) /v1/embeddings (OpenAI's) /embeddings /embedding
//        (llama-server's) /tokenize /detokenize /v1/rerank /rerank /v1/reranking
//        /reranking /lora-adapters (GET too)
//   Ollama's API (ollama.ts, in its shapes): GET /api/tags /api/ps /api/version, POST
//        /api/show /api/chat /api/generate /api/embed /api/embeddings /api/pull, DELETE /api/delete
//
// Life cycle (for running many behind a balancer, docs/replicas.md): listen() opens the
// port at once and answers 503 ("loading model") until load() is done; shutdown() stops
// accepting, lets requests in flight finish for up to shutdownTimeout seconds, then ends
// the rest (a stream's last event says finish_reason "abort"; an answer not yet begun is
// a 503 a balancer may retry elsewhere). Every generation answer carries X-Prefix-Key
// (src/generation/prefix-key.ts), which a client sends back with its next turn. With
// sleepIdleSeconds the model is released when idle and loaded again by the next request
// that needs it (wake()).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import {
  type FlashAttnTypeOption,
  type LlamaCompletionOptions,
  type LlamaCompletionResult,
  type LlamaCompletionToken,
  type LlamaContext,
  LlamaError,
  loadModel,
  type ModelInfo,
} from '../api/index.js';
import type { TemplateLimits } from '../chat/index.js';
import { cacheDir } from '../download/index.js';
import { isPrefixKey, PREFIX_KEY_HEADER } from '../generation/index.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { architecture } from '../model/index.js';
import type { GrammarLimits } from '../sampling/grammar/index.js';
import * as anthropic from './anthropic.js';
import { VERSION } from './build.js';
import { Cancelled, type ChatTemplateInfo } from './host.js';
import { ApiError, createHttpServer, queryFlag, type RequestContext, type Route, sendJson } from './http.js';
import { DEFAULT_MEDIA_POLICY, type MediaPolicy, type Modalities, resolveRequestMedia } from './media.js';
import { Metrics } from './metrics.js';
import * as native from './native.js';
import * as ollama from './ollama.js';
import * as oa from './openai.js';
import * as responses from './responses.js';
import { SseWriter } from './sse.js';
import { serveWebui, WEBUI_PATHS } from './webui.js';

const log = logger('server');

/** Documents one /v1/rerank request may hold, and inputs one embeddings request may. */
const MAX_RERANK_DOCUMENTS = 10000;
const MAX_EMBEDDING_INPUTS = 10000;

export interface ServerOptions {
  /** Path of the GGUF model. */
  model: string;
  host?: string;
  /** 0: any free port. Default 8080. */
  port?: number;
  /** Slots (requests decoded together). Default 4. */
  parallel?: number;
  /** Total context in tokens, shared by the slots (each gets nCtx / parallel). Default: 4096 × parallel, at most the model's training context × parallel. */
  nCtx?: number;
  nBatch?: number;
  threads?: number;
  /** Devices by name (see `llama-ts devices`); default: the fastest. */
  devices?: string[];
  /** Layers on the GPU, counted from the last (llama.cpp's n_gpu_layers); default: all. */
  nGpuLayers?: number;
  apiKey?: string;
  /** CORS origin ('*' or one); off by default. */
  cors?: string;
  /** Requests waiting for a slot, at most (default 64); beyond it: 503. */
  maxQueue?: number;
  /** Request body limit in bytes (default 10 MiB). */
  maxBodyBytes?: number;
  /** Bytes of request bodies still arriving, over all connections, at most (default 128 MiB); beyond: 503. */
  maxPendingBodyBytes?: number;
  /** Seconds to receive a request, and that a connection may stall waiting on the client (default 600, llama-server's --timeout). */
  timeout?: number;
  /** Open connections at most (default 512); beyond: 503 and closed. */
  maxConnections?: number;
  /** The model name reported (default: the file name); a comma-separated list gives several (llama-server's --alias: the id is the first in sorted order). */
  alias?: string;
  /** Informational tags, listed by /v1/models (llama-server's --tags, comma-separated). */
  tags?: string;
  /**
   * Server-wide defaults of a request's generation fields, by their llama-server names
   * (llama-server's --temp, --seed, --n-predict): a request that leaves one out gets it;
   * /props reports them as default_generation_settings.
   */
  defaults?: { temperature?: number; seed?: number; n_predict?: number };
  /** llama-server's --reasoning-budget: 0 turns thinking off (enable_thinking false); N > 0 is each reply's thinking_budget_tokens; -1 (default): no limit. */
  reasoningBudget?: number;
  /** GET /slots (llama-server's --slots / --no-slots). Default true; false: a 501. */
  slots?: boolean;
  /** llama-server's --verbose: OpenAI-shaped answers carry `__verbose` (the llama-server-shaped result, with the prompt as evaluated). */
  verbose?: boolean;
  /** Pooling of /embeddings (llama-server's --pooling); 'none' gives per-token vectors on /embedding and /embeddings, and /v1/embeddings refuses it. */
  pooling?: 'none' | 'mean' | 'cls' | 'last' | 'rank';
  /** Seconds without requests after which the model is unloaded (llama-server's --sleep-idle-seconds); the next request that needs it loads it again. Off by default. */
  sleepIdleSeconds?: number;
  /** Serve /v1/embeddings with a generative model too (a second context). */
  embeddings?: boolean;
  /** Chat template override (Jinja text or a built-in name). */
  chatTemplate?: string;
  /** Bounds on rendering the chat template (TemplateLimits: 5 s, 16 Mi characters, 100,000 items by default); beyond them: 400. */
  templateLimits?: Omit<TemplateLimits, 'shouldStop'>;
  /** Bounds on compiling a request's grammar or JSON schema (GrammarLimits, and timeMs: 10 s by default); beyond them: 400. */
  grammarLimits?: GrammarLimits & { timeMs?: number };
  /** Shift a slot's context when it fills, as the library does (a prompt longer than a slot is refused, as llama-server's). Default true. */
  ctxShift?: boolean;
  /** LoRA adapters applied to every request (unless it names its own scales: `lora: [{ id, scale }]`). */
  lora?: { path: string; scaled: number }[];
  /** Speculative decoding: a draft model, or n-gram lookup ('ngram'), and llama-server's draft settings. */
  modelDraft?: string;
  specType?: 'draft' | 'ngram';
  draftMax?: number;
  draftMin?: number;
  draftPMin?: number;
  /** Serve /v1/rerank (llama-server's --reranking); a model whose pooling_type is rank serves it anyway. */
  reranking?: boolean;
  /** A multimodal projector (llama-server's --mmproj): images and audio in requests, as it takes them. */
  mmproj?: string;
  /** The projector on the model's GPU device (llama-server's --mmproj-offload, default true). */
  mmprojOffload?: boolean;
  /** Fetch http(s) image URLs (off by default: a request may not make the server fetch), bounded by mediaMaxBytes and mediaTimeoutMs. */
  allowRemoteMedia?: boolean;
  /** Bytes one image or audio clip may have (default 10 MiB, llama-server's download limit). */
  mediaMaxBytes?: number;
  /** Milliseconds a media download may take (default 10000, llama-server's). */
  mediaTimeoutMs?: number;
  /** Seconds shutdown() lets requests in flight finish before ending them (default 30). */
  shutdownTimeout?: number;
  /** A folder for slot saves (llama-server's --slot-save-path): enables POST /slots/:id?action=save|restore|erase, file names confined to it. */
  slotSavePath?: string;
  /** A full-size KV cache for sliding-window layers too (llama-server's --swa-full). Default false. */
  swaFull?: boolean;
  /** llama-server's --flash-attn: 'auto' (default; on), 'on' or 'off'. */
  flashAttn?: FlashAttnTypeOption;
  /** The download cache (Ollama's /api/pull, /api/delete, /api/tags); default as `cacheDir()` (LLAMA_TS_CACHE, ~/.cache/llama-ts). */
  cacheDir?: string;
  /**
   * llama-server's --kv-unified: each slot may use the whole context (at most the training
   * context), the slots sharing its cells; when they fill it, idle slots' caches go first,
   * then the requests decoding fail. Default false: nCtx / parallel tokens per slot.
   */
  kvUnified?: boolean;
  /** The chat page at `/` (webui/; llama-server's web UI, off with --no-webui). Default true; false: `/` is a 404. */
  webui?: boolean;
}

/** Where a server is in its life: loading (503), ready, draining (shutting down: 503 to new requests), closed, or failed to load. */
export type ServerState = 'loading' | 'ready' | 'draining' | 'closed' | 'failed';

/** A generation request in flight, to end at the shutdown deadline. */
interface Running {
  interrupt: () => void;
  /** Ended by shutdown(). */
  ended: boolean;
}

const delay = (ms: number) =>
  new Promise<void>((res) => {
    setTimeout(res, ms).unref();
  });

/**
 * A library error as an HTTP error: bad options and requests that do not fit are the
 * client's (400); a prompt longer than a slot is llama-server's exceed_context_size_error.
 */
function apiError(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  if (e instanceof LlamaError) {
    const long = /the prompt is (\d+) tokens; the context holds (\d+)/.exec(e.message);
    if (e.code === 'ERR_CONTEXT' && long) {
      // llama-server's words (clients and its tests look for them)
      const message = `request (${long[1]} tokens) exceeds the available context size (${long[2]} tokens), try increasing it`;
      return new ApiError(400, message, 'exceed_context_size_error', null, {
        n_prompt_tokens: Number(long[1]),
        n_ctx: Number(long[2]),
      });
    }
    if (e.code === 'ERR_OPTION' || e.code === 'ERR_CONTEXT') {
      const param = /^([\w.[\]]+) = /.exec(e.message)?.[1] ?? null;
      return new ApiError(400, e.message, undefined, param);
    }
    if (e.code === 'ERR_BUSY') return new ApiError(503, e.message);
    // a slot file that is missing, damaged or from another model (llama-server: a 400)
    if (e.code === 'ERR_SESSION') return new ApiError(400, e.message, undefined, 'filename');
  }
  return e;
}

/** A comma-separated list (--alias, --tags): trimmed, without empties, sorted and deduplicated as llama-server's sets. */
export function nameList(v: string | undefined): string[] {
  if (v === undefined) return [];
  return [...new Set(v.split(',').map((x) => x.trim()))].filter((x) => x !== '').sort();
}

/**
 * The context to load: --ctx-size (4096 per slot by default, at most the training context),
 * one sequence for an embedding model. Past the training context per slot, llama-server
 * warns and goes on; here a slot then holds the training context (the library refuses more).
 */
function contextSize(nCtxTrain: number, generative: boolean, parallel: number, nCtx: number | undefined): number {
  const train = nCtxTrain || 4096;
  if (!generative) return Math.min(train, 8192);
  const total = nCtx ?? Math.min(train, 4096) * parallel;
  if (nCtxTrain > 0 && total > nCtxTrain * parallel) {
    log.warn(
      `a context of ${total} tokens gives each of ${parallel} slot(s) ${Math.floor(total / parallel)} tokens, more than the ${nCtxTrain} the model was trained with: slots get ${nCtxTrain}`,
    );
    return nCtxTrain * parallel;
  }
  return total;
}

/** From the GGUF header: the training context (0 when it does not say), whether the model generates, whether it ranks. */
export function modelFacts(path: string): { nCtxTrain: number; generative: boolean; ranks: boolean } {
  const f = openGGUF(path);
  try {
    const arch = f.architecture;
    // an unsupported architecture is left for loadModel to report (ERR_MODEL)
    let generative = true;
    try {
      generative = architecture(arch, path).usesKVCache;
    } catch {}
    return {
      nCtxTrain: f.getInt(`${arch}.context_length`, 0),
      generative,
      ranks: f.getInt(`${arch}.pooling_type`, -1) === 4,
    };
  } finally {
    f.close();
  }
}

export class LlamaServer implements ollama.OllamaHost {
  readonly metrics = new Metrics();
  private http!: Server;
  readonly modelId: string;
  readonly created = Math.floor(Date.now() / 1000);
  readonly parallel: number;
  private readonly maxQueue: number;
  private ctxValue: LlamaContext | undefined;
  private info: ModelInfo | undefined;
  private generative = true;
  /** What the projector takes (none loaded: neither). */
  private modalitiesValue: Modalities = { vision: false, audio: false };
  private nCtxSlotValue = 0;
  /** Generation requests sent to the engine and not yet answered. */
  private inFlight = 0;
  private readonly running = new Set<Running>();
  private stateValue: ServerState = 'loading';
  private loadError: unknown;
  private loading: Promise<void> | undefined;
  private readonly loadAbort = new AbortController();
  private shuttingDown: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** /v1/rerank is served (once loaded). */
  private rerankingValue = false;
  /** The names /v1/models lists (--alias), sorted; the first is the model's id. */
  readonly aliases: string[];
  readonly tags: string[];
  private templateInfoValue: ChatTemplateInfo | undefined;
  /** Requests being handled (for --sleep-idle-seconds), and when the last one ended. */
  private busy = 0;
  private lastActive = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;
  /** The model is unloaded (--sleep-idle-seconds); `asleep` settles once its context is released. */
  private sleepingValue = false;
  private asleep: Promise<void> = Promise.resolve();
  private waking: Promise<void> | undefined;

  private constructor(readonly opts: ServerOptions) {
    this.aliases = nameList(opts.alias);
    this.tags = nameList(opts.tags);
    this.modelId = this.aliases[0] ?? basename(opts.model);
    this.parallel = opts.parallel ?? 4;
    this.maxQueue = opts.maxQueue ?? 64;
  }

  /**
   * Opens the port and resolves once it listens; the model is not loaded yet: every
   * endpoint but /health answers 503 until load() (or start()) is done, as llama-server
   * does while it loads.
   */
  static async listen(opts: ServerOptions): Promise<LlamaServer> {
    if (opts.apiKey !== undefined && opts.apiKey.trim() === '') {
      throw new Error('the API key must not be empty (leave it out to serve without a key)');
    }
    const timeout = opts.shutdownTimeout ?? 30;
    if (!(timeout >= 0 && Number.isFinite(timeout))) {
      throw new Error(`the shutdown timeout must be a number of seconds ≥ 0, got ${timeout}`);
    }
    const idle = opts.sleepIdleSeconds;
    if (idle !== undefined && !(idle > 0 && Number.isFinite(idle))) {
      throw new Error(`the idle seconds before sleeping must be a number > 0, got ${idle}`);
    }
    const s = new LlamaServer(opts);
    s.http = createHttpServer(s.routes(), {
      apiKey: opts.apiKey,
      cors: opts.cors,
      maxBodyBytes: opts.maxBodyBytes ?? 10 * 1024 * 1024,
      maxPendingBodyBytes: opts.maxPendingBodyBytes,
      timeout: opts.timeout,
      maxConnections: opts.maxConnections,
      exposeHeaders: [PREFIX_KEY_HEADER],
      onRequest: () => s.metrics.requests++,
      onErrorStatus: () => s.metrics.errors++,
    });
    await new Promise<void>((resolve, reject) => {
      s.http.once('error', reject);
      s.http.listen(opts.port ?? 8080, opts.host ?? '127.0.0.1', () => {
        s.http.off('error', reject);
        resolve();
      });
    });
    log.info(`listening on ${s.url}; loading ${opts.model}`);
    return s;
  }

  /** Listens and loads the model; resolves once the server can serve. */
  static async start(opts: ServerOptions): Promise<LlamaServer> {
    const s = await LlamaServer.listen(opts);
    try {
      await s.load();
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  /** Loads the model (in the engine worker) and enables the slots; then the server is ready. Once; later calls return the same promise. */
  load(): Promise<void> {
    this.loading ??= this.loadModel();
    return this.loading;
  }

  private async loadModel(): Promise<void> {
    try {
      await this.openContext('loading');
      this.stateValue = 'ready';
      this.lastActive = Date.now();
      const idle = this.opts.sleepIdleSeconds;
      if (idle !== undefined) {
        this.idleTimer = setInterval(() => this.sleepIfIdle(idle), Math.min(1000, idle * 250));
        this.idleTimer.unref();
      }
      log.info(`ready on ${this.url} (${this.parallel} slots of ${this.nCtxSlotValue} tokens, model ${this.modelId})`);
    } catch (e) {
      if (this.stateValue === 'loading') {
        this.stateValue = 'failed';
        this.loadError = e;
      }
      throw e;
    }
  }

  /**
   * Loads the model into a context with the slots enabled: at start, and again when a
   * request wakes a sleeping server. The server must still be in `state` once it is
   * loaded (a shutdown meanwhile releases it).
   */
  private async openContext(state: ServerState): Promise<void> {
    const opts = this.opts;
    const parallel = this.parallel;
    const { nCtxTrain, generative, ranks } = modelFacts(opts.model);
    const train = nCtxTrain || 4096;
    const total = contextSize(nCtxTrain, generative, parallel, opts.nCtx);
    const nCtxSlot = opts.kvUnified ? Math.min(total, train) : Math.floor(total / (generative ? parallel : 1));
    if (generative && nCtxSlot < 8) throw new Error(`a context of ${total} tokens is too small for ${parallel} slots`);
    const pooling = opts.pooling ?? (ranks ? 'rank' : undefined);
    const ctx = await loadModel({
      model: opts.model,
      n_ctx: total,
      n_batch: Math.min(opts.nBatch ?? 512, total),
      n_parallel: generative ? parallel : 1,
      ctx_shift: opts.ctxShift ?? true,
      signal: this.loadAbort.signal,
      ...(opts.swaFull ? { swa_full: true } : {}),
      ...(opts.flashAttn ? { flash_attn_type: opts.flashAttn } : {}),
      ...(opts.threads !== undefined ? { n_threads: opts.threads } : {}),
      ...(opts.devices ? { devices: opts.devices } : {}),
      ...(opts.nGpuLayers !== undefined ? { n_gpu_layers: opts.nGpuLayers } : {}),
      ...(opts.chatTemplate !== undefined ? { chat_template: opts.chatTemplate } : {}),
      // templates and grammars are untrusted: bounded on the engine's untrusted-work worker
      ...(opts.templateLimits ? { template_limits: opts.templateLimits } : {}),
      ...(opts.grammarLimits ? { grammar_limits: opts.grammarLimits } : {}),
      ...(opts.lora && opts.lora.length > 0 ? { lora_list: opts.lora } : {}),
      ...(opts.modelDraft !== undefined ? { model_draft: opts.modelDraft } : {}),
      ...(opts.specType !== undefined ? { spec_type: opts.specType } : {}),
      ...(opts.draftMax !== undefined ? { draft_max: opts.draftMax } : {}),
      ...(opts.draftMin !== undefined ? { draft_min: opts.draftMin } : {}),
      ...(opts.draftPMin !== undefined ? { draft_p_min: opts.draftPMin } : {}),
      ...(pooling !== undefined ? { pooling_type: pooling } : {}),
    });
    try {
      // --reranking with a model that cannot rank fails here, not on the first request
      if (opts.reranking && !ranks) await ctx.rerank('a', ['b']);
      if (opts.mmproj !== undefined) {
        await ctx.initMultimodal({ path: opts.mmproj, use_gpu: opts.mmprojOffload ?? true });
        this.modalitiesValue = ctx.getMultimodalSupport();
      }
      if (generative && this.stateValue === state) {
        await ctx.parallel.enable({
          n_parallel: parallel,
          n_batch: opts.nBatch ?? 512,
          ...(opts.kvUnified ? { kv_unified: true } : {}),
        });
      }
      if (this.stateValue !== state) throw new Error('the server was shut down while the model loaded');
    } catch (e) {
      await ctx.release();
      throw e;
    }
    this.ctxValue = ctx;
    this.info = ctx.getModelInfo();
    this.templateInfoValue = ctx.getChatTemplateInfo();
    this.generative = generative;
    this.nCtxSlotValue = nCtxSlot;
    this.rerankingValue = ranks || opts.reranking === true;
  }

  // ---- sleeping (llama-server's --sleep-idle-seconds) ----

  /** Whether the model is unloaded for idleness (/props is_sleeping). */
  get sleeping(): boolean {
    return this.sleepingValue;
  }

  /** Unloads the model once no request has run for `idle` seconds. */
  private sleepIfIdle(idle: number): void {
    if (this.stateValue !== 'ready' || this.sleepingValue || this.busy > 0 || this.inFlight > 0) return;
    if (Date.now() - this.lastActive < idle * 1000) return;
    const ctx = this.ctxValue;
    if (!ctx) return;
    this.sleepingValue = true;
    this.ctxValue = undefined;
    log.info(`idle for ${idle} s: unloading the model until the next request`);
    this.asleep = ctx.release().catch((e) => log.warn(`releasing the model: ${(e as Error)?.message ?? e}`));
  }

  /** Loads the model again if it sleeps (one load for the requests that arrive meanwhile). */
  private async wake(): Promise<void> {
    if (!this.sleepingValue) return;
    this.waking ??= (async () => {
      await this.asleep;
      log.info('a request arrived: loading the model again');
      await this.openContext('ready');
      this.sleepingValue = false;
    })().finally(() => {
      this.waking = undefined;
    });
    await this.waking;
  }

  /** Where the server is in its life. */
  get state(): ServerState {
    return this.stateValue;
  }

  get ctx(): LlamaContext {
    if (!this.ctxValue) throw new ApiError(503, 'Loading model');
    return this.ctxValue;
  }

  /** The model as the engine describes it (once loaded). */
  get modelInfo(): ModelInfo {
    if (!this.info) throw new Error('the model is not loaded yet');
    return this.info;
  }

  /** The chat template and special tokens (once loaded; kept while the model sleeps). */
  get chatTemplateInfo(): ChatTemplateInfo {
    if (!this.templateInfoValue) throw new ApiError(503, 'Loading model');
    return this.templateInfoValue;
  }

  /** Server-wide request defaults, by library option name: --temp, --seed, --n-predict, --reasoning-budget. */
  get requestDefaults(): Readonly<LlamaCompletionOptions> {
    const d = this.opts.defaults ?? {};
    const budget = this.opts.reasoningBudget;
    return {
      ...(d.temperature !== undefined ? { temperature: d.temperature } : {}),
      ...(d.seed !== undefined ? { seed: d.seed } : {}),
      ...(d.n_predict !== undefined ? { n_predict: d.n_predict } : {}),
      // llama-server's reasoning budget 0 renders templates with thinking off
      ...(budget === 0 ? { enable_thinking: false } : {}),
      ...(budget !== undefined && budget > 0 ? { thinking_budget_tokens: budget } : {}),
    };
  }

  get slotsEndpoint(): boolean {
    return this.opts.slots ?? true;
  }

  get verbose(): boolean {
    return this.opts.verbose === true;
  }

  /** Tokens of context per slot (once loaded). */
  get nCtxSlot(): number {
    return this.nCtxSlotValue;
  }

  /** Whether /v1/rerank is served (a rank-pooling model, or --reranking; once loaded). */
  get reranking(): boolean {
    return this.rerankingValue;
  }

  get modelPath(): string {
    return this.opts.model;
  }

  get version(): string {
    return VERSION;
  }

  get cacheDir(): string {
    return cacheDir(this.opts.cacheDir);
  }

  get chatTemplate(): string | undefined {
    return this.opts.chatTemplate;
  }

  /** The model generates (else it only embeds or ranks). */
  get generates(): boolean {
    return this.generative;
  }

  /** What the projector takes (--mmproj); neither without one. */
  get modalities(): Modalities {
    return this.modalitiesValue;
  }

  get mediaPolicy(): MediaPolicy {
    return {
      allowRemote: this.opts.allowRemoteMedia === true,
      maxBytes: this.opts.mediaMaxBytes ?? DEFAULT_MEDIA_POLICY.maxBytes,
      timeoutMs: this.opts.mediaTimeoutMs ?? DEFAULT_MEDIA_POLICY.timeoutMs,
    };
  }

  get templateLimits(): Omit<TemplateLimits, 'shouldStop'> | undefined {
    return this.opts.templateLimits;
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  get url(): string {
    const a = this.http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  /**
   * Graceful shutdown: stops accepting (the port closes; a request arriving on an open
   * connection gets a 503 and the connection closes), lets requests in flight finish for
   * up to `timeoutSeconds` (default: the shutdownTimeout option, 30 s), then ends the rest:
   * a stream that has begun ends with a last event whose finish_reason is "abort"; an
   * answer not yet begun is a 503 (a balancer may retry it elsewhere). Then the model is
   * released. A server still loading stops loading.
   */
  shutdown(timeoutSeconds = this.opts.shutdownTimeout ?? 30): Promise<void> {
    this.shuttingDown ??= this.drain(timeoutSeconds);
    return this.shuttingDown;
  }

  private async drain(timeoutSeconds: number): Promise<void> {
    if (this.stateValue === 'closed') return;
    this.stateValue = 'draining';
    clearInterval(this.idleTimer);
    this.loadAbort.abort();
    const closed = new Promise<void>((res) => this.http.close(() => res()));
    // keep-alive connections close as soon as their answers end
    this.http.closeIdleConnections();
    const idle = setInterval(() => this.http.closeIdleConnections(), 100);
    try {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'deadline'>((res) => {
        timer = setTimeout(() => res('deadline'), timeoutSeconds * 1000);
      });
      const first = await Promise.race([closed.then(() => 'closed' as const), deadline]);
      clearTimeout(timer);
      if (first === 'deadline') {
        if (this.running.size > 0) {
          log.warn(`shutdown: ${this.running.size} request(s) still running after ${timeoutSeconds} s: ending them`);
        }
        for (const r of this.running) {
          r.ended = true;
          r.interrupt();
        }
        // their last events go out within a decode step; then whatever is left is closed
        await Promise.race([closed, delay(5000)]);
        this.http.closeAllConnections();
        await closed;
      }
    } finally {
      clearInterval(idle);
    }
    await this.loading?.catch(() => {});
    await this.waking?.catch(() => {});
    await this.ctxValue?.release();
    this.stateValue = 'closed';
  }

  /** Closes at once: connections are cut, requests in flight end unanswered, the model is released. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.stateValue !== 'draining') this.stateValue = 'draining';
      clearInterval(this.idleTimer);
      this.loadAbort.abort();
      const closed = new Promise<void>((res) => this.http.close(() => res()));
      this.http.closeAllConnections();
      await this.loading?.catch(() => {});
      await this.waking?.catch(() => {});
      await this.ctxValue?.release();
      await closed;
      this.stateValue = 'closed';
    })();
    return this.closing;
  }

  private routes(): Route[] {
    const r: Route[] = [];
    // every endpoint but /health: admitted only when ready; `model`: the handler needs the
    // model, loaded again if it sleeps (/models and /props answer without it)
    const guard =
      (handler: Route['handler'], model = true): Route['handler'] =>
      async (c) => {
        try {
          this.admit(c.res);
          // only requests for the model count as activity (polling /props lets it sleep)
          if (!model) {
            await handler(c);
            return;
          }
          this.busy++;
          try {
            await this.wake();
            await handler(c);
          } finally {
            this.busy--;
            this.lastActive = Date.now();
          }
        } catch (e) {
          throw apiError(e);
        }
      };
    const add = (method: 'GET' | 'POST', paths: string[], handler: Route['handler'], pub = false, model = true) => {
      const wrapped = guard(handler, model);
      for (const path of paths) r.push({ method, path, handler: wrapped, public: pub });
    };
    r.push(
      ...['/health', '/v1/health'].map((path) => ({
        method: 'GET' as const,
        path,
        handler: (c: RequestContext) => this.health(c),
        public: true,
      })),
    );
    // the chat page: public (it holds no secret; its API calls carry the key), and served
    // while the model loads
    if (this.opts.webui !== false) {
      for (const path of WEBUI_PATHS) r.push({ method: 'GET', path, handler: serveWebui, public: true });
    }
    add('GET', ['/v1/models', '/models'], (c) => this.models(c), true, false);
    add('GET', ['/metrics'], (c) => this.metricsText(c));
    add('POST', ['/v1/chat/completions', '/chat/completions'], (c) => this.chat(c));
    add('POST', ['/v1/completions'], (c) => this.completions(c));
    add('POST', ['/v1/responses', '/responses'], (c) => responses.create(this, c));
    // Anthropic's Messages API answers errors in its own shape
    for (const [path, handler] of [
      ['/v1/messages', (c: RequestContext) => anthropic.messages(this, c)],
      ['/v1/messages/count_tokens', (c: RequestContext) => anthropic.countTokens(this, c)],
    ] as const) {
      r.push({
        method: 'POST',
        path,
        handler: guard(handler),
        errorBody: anthropic.errorBody,
      });
    }
    // llama-server's own endpoints, in its shapes
    add('POST', ['/completion', '/completions'], (c) => native.completion(this, c));
    add('POST', ['/infill'], (c) => native.infill(this, c));
    add('POST', ['/apply-template'], (c) => native.applyTemplate(this, c));
    add('GET', ['/props'], (c) => native.props(this, c), false, false);
    add('GET', ['/slots'], (c) => native.slots(this, c));
    add('POST', ['/slots/:id'], (c) => native.slotAction(this, c, this.opts.slotSavePath));
    add('POST', ['/v1/embeddings'], (c) => this.embeddings(c, true));
    add('POST', ['/embedding', '/embeddings'], (c) => this.embeddings(c, false));
    add('POST', ['/tokenize'], (c) => this.tokenize(c));
    add('POST', ['/detokenize'], (c) => this.detokenize(c));
    add('POST', ['/v1/rerank', '/rerank', '/v1/reranking', '/reranking'], (c) => this.rerank(c));
    add('GET', ['/lora-adapters'], (c) => this.loraAdapters(c));
    add('POST', ['/lora-adapters'], (c) => this.setLoraAdapters(c));
    // Ollama's API answers errors in its own shape ({ error }); /api/version even while loading
    for (const e of ollama.endpoints(this)) {
      r.push({
        method: e.method,
        path: e.path,
        errorBody: ollama.errorBody,
        handler: async (c) => {
          try {
            if (e.whileLoading !== true) this.admit(c.res);
            await e.handler(c);
          } catch (err) {
            throw apiError(err);
          }
        },
      });
    }
    return r;
  }

  // ---- LoRA adapters (llama-server's /lora-adapters) ----

  private loraAdapters(c: RequestContext): void {
    sendJson(
      c.res,
      200,
      this.ctx.getLoadedLoraAdapters().map((a, id) => ({ id, path: a.path, scale: a.scaled })),
    );
  }

  /** [{ id, scale }]: the adapters' scales from now on (adapters left out: 0), as llama-server. */
  private async setLoraAdapters(c: RequestContext): Promise<void> {
    const loaded = this.ctx.getLoadedLoraAdapters();
    const body = c.body;
    if (!Array.isArray(body)) throw new ApiError(400, 'the body must be an array of { id, scale }', undefined, 'lora');
    const scales = new Map<number, number>();
    for (const e of body) {
      const id = (e as { id?: unknown } | null)?.id;
      const scale = (e as { scale?: unknown } | null)?.scale;
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= loaded.length) {
        throw new ApiError(
          400,
          `no LoRA adapter ${JSON.stringify(id)} (the server has ${loaded.length})`,
          undefined,
          'id',
        );
      }
      if (typeof scale !== 'number' || !Number.isFinite(scale)) {
        throw new ApiError(400, `the scale of adapter ${id} must be a number`, undefined, 'scale');
      }
      scales.set(id, scale);
    }
    await this.ctx.applyLoraAdapters(loaded.map((a, id) => ({ path: a.path, scaled: scales.get(id) ?? 0 })));
    sendJson(c.res, 200, { success: true });
  }

  // ---- reranking (llama-server's /v1/rerank: Jina's shape) ----

  private async rerank(c: RequestContext): Promise<void> {
    if (!this.reranking) {
      throw new ApiError(
        501,
        'this server does not serve reranking: start it with a reranker model (pooling_type rank) or --reranking',
      );
    }
    const b = oa.asObject(c.body);
    if (typeof b.query !== 'string') throw new ApiError(400, "'query' must be a string", undefined, 'query');
    const raw = b.documents ?? b.texts;
    if (!Array.isArray(raw) || raw.length === 0) {
      throw new ApiError(400, "'documents' must be a non-empty array of strings", undefined, 'documents');
    }
    if (raw.length > MAX_RERANK_DOCUMENTS) {
      throw new ApiError(400, `'documents' may hold at most ${MAX_RERANK_DOCUMENTS} documents`, undefined, 'documents');
    }
    const documents = raw.map((d, i) => {
      const text = typeof d === 'string' ? d : (d as { text?: unknown } | null)?.text;
      if (typeof text !== 'string') {
        throw new ApiError(400, `documents[${i}] must be a string (or { text })`, undefined, 'documents');
      }
      return text;
    });
    let topN = documents.length;
    if (b.top_n !== undefined && b.top_n !== null) {
      if (typeof b.top_n !== 'number' || !Number.isInteger(b.top_n) || b.top_n < 0) {
        throw new ApiError(400, "'top_n' must be an integer ≥ 0", undefined, 'top_n');
      }
      topN = Math.min(topN, b.top_n);
    }
    const withText = b.return_documents === true || b.return_text === true;
    const ranked = await this.ctx.rerank(b.query, documents);
    const n = ranked.reduce((a, r) => a + (r.n_tokens ?? 0), 0);
    sendJson(c.res, 200, {
      model: this.modelId,
      object: 'list',
      usage: { prompt_tokens: n, total_tokens: n },
      results: ranked.slice(0, topN).map((r) => ({
        index: r.index,
        relevance_score: r.score,
        ...(withText ? { document: { text: r.document } } : {}),
      })),
    });
  }

  /** Only a ready server takes requests: 503 while loading, and once shutting down (the connection then closes). */
  private admit(res: ServerResponse): void {
    switch (this.stateValue) {
      case 'ready':
        return;
      case 'loading':
        throw new ApiError(503, 'Loading model');
      case 'failed':
        throw new ApiError(503, `the model failed to load: ${(this.loadError as Error)?.message ?? this.loadError}`);
      default:
        res.setHeader('Connection', 'close');
        throw new ApiError(503, 'the server is shutting down; retry on another');
    }
  }

  // ---- readiness and slots ----

  /** Slots running a request (as the server counts: sent to the engine, not answered) and idle. */
  private slotCounts(): { slots_idle: number; slots_processing: number } {
    const processing = this.generative ? Math.min(this.inFlight, this.parallel) : 0;
    return { slots_idle: (this.generative ? this.parallel : 1) - processing, slots_processing: processing };
  }

  /**
   * llama-server's /health: 503 {"status":"loading model"} while loading, 200
   * {"status":"ok"} when ready; with ?fail_on_no_slot, 503 {"status":"no slot available"}
   * when every slot is busy (a balancer then routes around this replica); 503
   * {"status":"shutting down"} once shutdown() began.
   */
  private health(c: RequestContext): void {
    const headers = { 'Cache-Control': 'no-store' };
    switch (this.stateValue) {
      case 'loading':
        sendJson(c.res, 503, { status: 'loading model' }, { ...headers, 'Retry-After': '1' });
        return;
      case 'failed':
        sendJson(c.res, 500, { status: 'error', error: String((this.loadError as Error)?.message ?? this.loadError) });
        return;
      case 'draining':
      case 'closed':
        sendJson(c.res, 503, { status: 'shutting down' }, { ...headers, Connection: 'close' });
        return;
      case 'ready': {
        const counts = this.slotCounts();
        if (counts.slots_idle === 0 && queryFlag(c.url, 'fail_on_no_slot')) {
          sendJson(c.res, 503, { status: 'no slot available', ...counts }, { ...headers, 'Retry-After': '1' });
          return;
        }
        sendJson(c.res, 200, { status: 'ok' }, headers);
      }
    }
  }

  /**
   * GET /slots: each slot's state as llama-server reports it (id, id_task, n_ctx,
   * is_processing, next_token), plus what it runs (`state`, `n_prompt_tokens`) and the
   * tokens its memory holds (`n_cached`: the prefix a next request may reuse). With
   * ?fail_on_no_slot, a 503 when every slot is busy. The queue is in /metrics
   * (llamacpp:requests_deferred).
   */
  // ---- simple endpoints ----

  /**
   * /v1/models: OpenAI's list (with llama-server's aliases, tags and meta) and, as
   * llama-server, Ollama's `models` list with the model's capabilities.
   */
  private models(c: RequestContext): void {
    const m = this.modelInfo;
    sendJson(c.res, 200, {
      models: [
        {
          name: this.modelId,
          model: this.modelId,
          modified_at: '',
          size: '',
          digest: '',
          type: 'model',
          description: '',
          tags: [''],
          capabilities: [
            this.generative ? 'completion' : 'embedding',
            ...(this.modalitiesValue.vision || this.modalitiesValue.audio ? ['multimodal'] : []),
          ],
          parameters: '',
          details: {
            parent_model: '',
            format: 'gguf',
            family: '',
            families: [''],
            parameter_size: '',
            quantization_level: '',
          },
        },
      ],
      object: 'list',
      data: [
        {
          id: this.modelId,
          aliases: this.aliases,
          tags: this.tags,
          object: 'model',
          created: this.created,
          owned_by: 'llama-ts',
          meta: {
            vocab_type: m.vocabType,
            n_vocab: m.nVocab,
            n_ctx_train: m.nCtxTrain,
            n_embd: m.nEmbd,
            n_params: m.nParams,
            size: m.fileSize,
          },
        },
      ],
    });
  }

  private async metricsText(c: RequestContext): Promise<void> {
    const st = this.generative ? await this.ctx.parallel.fetchStatus() : undefined;
    const text = this.metrics.render({
      processing: st?.active_slots ?? 0,
      deferred: st?.queued_requests ?? 0,
      slots: this.parallel,
      inFlight: this.inFlight,
      nDecode: st?.n_decode_total ?? 0,
      nTokens: st?.n_tokens_total ?? 0,
      nDrafted: st?.n_draft_total ?? 0,
      nAccepted: st?.n_draft_accepted_total ?? 0,
      perSlot: st?.slots ?? [],
    });
    c.res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    c.res.end(text);
  }

  private async tokenize(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    if (typeof b.content !== 'string') throw new ApiError(400, "'content' must be a string", undefined, 'content');
    const withPieces = b.with_pieces === true;
    const r = await this.ctx.tokenize(b.content, {
      add_special: b.add_special === true,
      parse_special: b.parse_special !== false,
      with_pieces: withPieces,
    });
    const tokens = Array.from(r.tokens);
    if (withPieces) sendJson(c.res, 200, { tokens: tokens.map((id, i) => ({ id, piece: r.pieces![i] })) });
    else sendJson(c.res, 200, { tokens });
  }

  private async detokenize(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    if (!Array.isArray(b.tokens))
      throw new ApiError(400, "'tokens' must be an array of token ids", undefined, 'tokens');
    sendJson(c.res, 200, { content: await this.ctx.detokenize(b.tokens as number[]) });
  }

  // ---- generation ----

  requireGenerator(): void {
    if (!this.generative) {
      throw new ApiError(501, `${this.modelInfo.desc} is an embedding model: it serves /v1/embeddings only`);
    }
  }

  apiError(e: unknown): unknown {
    return apiError(e);
  }

  /**
   * Sends a request to the engine. Requests beyond the slots and the queue get a 503 at
   * once; a client that goes away stops its request. The answer carries the prompt's
   * X-Prefix-Key (the request's own, while it still describes the prompt), set as soon
   * as the engine has the prompt, before any text goes out. A request ended by
   * shutdown() resolves (interrupted) when its answer has begun, else is a 503.
   */
  async submit(
    options: LlamaCompletionOptions,
    res: ServerResponse,
    onToken?: (t: LlamaCompletionToken) => void,
  ): Promise<{ done: Promise<LlamaCompletionResult> }> {
    const n = options.n_cmpl ?? 1;
    if (n > this.parallel) {
      throw new ApiError(
        400,
        `'n' = ${n}: each choice takes a slot, and the server has ${this.parallel}`,
        undefined,
        'n',
      );
    }
    if (this.inFlight >= this.parallel + this.maxQueue) {
      this.metrics.rejected++;
      throw new ApiError(503, 'the server is busy: every slot is in use and the queue is full; retry later');
    }
    // images and audio: refused without a projector for them, else fetched, checked and inlined
    await resolveRequestMedia(
      options as { messages?: unknown; media_paths?: string[] },
      this.modalities,
      this.mediaPolicy,
    );
    // the server's defaults for what the request leaves out (options is the caller's: it reports them)
    const o = options as Record<string, unknown>;
    for (const [k, v] of Object.entries(this.requestDefaults)) if (o[k] === undefined) o[k] = v;
    options.prefix_key = requestPrefixKey(res.req);
    this.inFlight++;
    const running: Running = { interrupt: () => {}, ended: false };
    let req: Awaited<ReturnType<LlamaContext['parallel']['completion']>>;
    try {
      req = await this.ctx.parallel.completion(options, onToken && ((_id, t) => onToken(t)), (_id, p) => {
        if (p.prefix_key && !res.headersSent) res.setHeader(PREFIX_KEY_HEADER, p.prefix_key);
      });
    } catch (e) {
      this.inFlight--;
      throw e;
    }
    running.interrupt = req.interrupt;
    this.running.add(running);
    let cancelled = false;
    // the client went away (socket closed before the answer ended): stop the request at once
    res.on('close', () => {
      if (res.writableFinished) return;
      cancelled = true;
      this.metrics.cancelled++;
      req.stop();
    });
    const done = req.promise.then(
      (r) => {
        this.inFlight--;
        this.running.delete(running);
        for (const x of r.choices ?? [r]) this.metrics.onRequestDone(x.timings);
        if (running.ended && !res.headersSent) {
          res.setHeader('Connection', 'close');
          throw new ApiError(503, 'the server shut down before this request could be answered; retry on another');
        }
        return r;
      },
      (e) => {
        this.inFlight--;
        this.running.delete(running);
        throw cancelled ? new Cancelled() : e;
      },
    );
    done.catch(() => {});
    return { done };
  }

  /** The request's result, or undefined when the client went away (nothing to answer). */
  async result(done: Promise<LlamaCompletionResult>): Promise<LlamaCompletionResult | undefined> {
    try {
      return await done;
    } catch (e) {
      if (e instanceof Cancelled) return undefined;
      throw e;
    }
  }

  private async chat(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    // llama-server's checks: an empty list is a conversation too (the template renders it)
    if (b.messages === undefined) throw new ApiError(400, "'messages' is required", undefined, 'messages');
    if (!Array.isArray(b.messages)) {
      throw new ApiError(400, "Expected 'messages' to be an array", undefined, 'messages');
    }
    this.requireGenerator();
    if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) {
      throw new ApiError(400, "'tools' must be an array", undefined, 'tools');
    }
    // llama-server's rule (the library lets the grammar win instead, as llama.node)
    if (Array.isArray(b.tools) && b.tools.length > 0 && b.tool_choice !== 'none') {
      for (const k of ['grammar', 'json_schema']) {
        if (b[k] !== undefined && b[k] !== null && b[k] !== '') {
          throw new ApiError(
            400,
            `'${k}' cannot be combined with tools (tool calls have their own grammar); use tool_choice 'none'`,
            undefined,
            k,
          );
        }
      }
    }
    const nProbs = oa.chatLogprobs(b);
    const options = oa.generationOptions({ ...b, prompt: undefined }, nProbs);
    // --verbose: the prompt as evaluated goes into __verbose
    if (this.verbose) options.return_tokens = true;
    const n = options.n_cmpl ?? 1;
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    const res = c.res;
    // the stream opens with its first chunks (each choice's role), so an error before them is a plain HTTP error
    const sse = stream
      ? new SseWriter(res, () =>
          Array.from({ length: n }, (_, i) =>
            oa.chatChunk(id, model, created, { role: 'assistant', content: null }, null, {}, i),
          ),
        )
      : undefined;
    const onToken =
      sse &&
      ((ev: LlamaCompletionToken) => {
        if (ev.prompt_progress) {
          // return_progress: llama-server's progress chunk (the role delta, with prompt_progress)
          const c = oa.chatChunk(id, model, created, { role: 'assistant', content: null }, null, {}, ev.index ?? 0);
          sse.send({ ...(c as object), prompt_progress: ev.prompt_progress });
          return;
        }
        const extra = ev.logprobs ? { logprobs: { content: oa.chatLogprobContent(ev.logprobs) } } : {};
        const delta = oa.chatDeltaFields(ev.delta);
        if (!delta && !ev.logprobs) return;
        sse.send(oa.chatChunk(id, model, created, delta ?? {}, null, extra, ev.index ?? 0));
      });
    const { done } = await this.submit(options, res, onToken);
    if (sse) {
      try {
        const r = await done;
        const all = r.choices ?? [r];
        const u = oa.usage(r);
        // the timings go on the stream's last chunk (llama-server's), the usage chunk when asked for
        for (const [i, x] of all.entries()) {
          const finish = oa.chatFinishReason(oa.finishReason(x), (x.tool_calls ?? []).length > 0);
          let last = oa.chatChunk(id, model, created, {}, finish, {}, i) as Record<string, unknown>;
          // --verbose: llama-server puts the result on the first of a choice's final chunks
          if (this.verbose) last = { ...last, __verbose: await this.streamVerbose(r, x, i, options) };
          if (i < all.length - 1) sse.send(last);
          else sse.send({ ...last, usage: u, ...(includeUsage ? {} : { timings: oa.timings(r) }) });
        }
        if (includeUsage) {
          sse.send({
            id,
            object: 'chat.completion.chunk',
            created,
            model,
            system_fingerprint: oa.SYSTEM_FINGERPRINT,
            choices: [],
            usage: u,
            timings: oa.timings(r),
          });
        }
        sse.done();
      } catch (e) {
        if (e instanceof Cancelled) return;
        if (!sse.opened) throw e;
        sse.fail(apiError(e));
      }
      return;
    }
    const r = await this.result(done);
    if (!r) return;
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      system_fingerprint: oa.SYSTEM_FINGERPRINT,
      choices: (r.choices ?? [r]).map((x, index) => ({
        index,
        message: oa.chatMessage(x),
        logprobs: x.logprobs ? { content: oa.chatLogprobContent(x.logprobs) } : null,
        finish_reason: oa.chatFinishReason(oa.finishReason(x), (x.tool_calls ?? []).length > 0),
      })),
      usage: oa.usage(r),
      timings: oa.timings(r),
      ...(this.verbose ? { __verbose: await native.verboseResult(this, r, options) } : {}),
    });
  }

  /** --verbose on a stream: choice `x` of `r` as llama-server's final stream result. */
  private streamVerbose(
    r: LlamaCompletionResult,
    x: LlamaCompletionResult,
    index: number,
    options: LlamaCompletionOptions,
  ): Promise<Record<string, unknown>> {
    return native.verboseResult(this, x, options, {
      index,
      stream: true,
      ...(r.prompt_tokens ? { prompt: r.prompt_tokens } : {}),
    });
  }

  private async completions(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    this.requireGenerator();
    const prompt = oa.completionPrompt(b);
    const nProbs = oa.completionLogprobs(b);
    const options = oa.generationOptions({ ...b, prompt: undefined, messages: undefined }, nProbs);
    options.prompt = prompt;
    const returnTokens = options.return_tokens === true;
    if (this.verbose) options.return_tokens = true;
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('cmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    const res = c.res;
    const sse = stream ? new SseWriter(res) : undefined;
    const offsets: number[] = [];
    // --verbose: every chunk carries its /completion-shaped result (llama-server's), whose
    // token ids and prompt size the engine gives with logprob entries and progress events
    const verbose = sse && this.verbose;
    const logprobs = nProbs >= 0;
    if (verbose && !logprobs) {
      options.logprobs = true;
      options.n_probs = 0;
    }
    const sizes = verbose ? native.promptSizes(options) : undefined;
    const predicted: number[] = [];
    const onToken =
      sse &&
      ((ev: LlamaCompletionToken) => {
        const i = ev.index ?? 0;
        if (sizes?.see(ev) && !sizes.progress) return;
        if (ev.prompt_progress) {
          const c = oa.completionChunk(id, model, created, '', null, null, i);
          const v = sizes ? { __verbose: native.partialResult(i, ev, 0, ev.prompt_progress.total) } : {};
          sse.send({ ...(c as object), ...v, prompt_progress: ev.prompt_progress });
          return;
        }
        const offset = offsets[i] ?? 0;
        const lp = logprobs && ev.logprobs ? oa.completionLogprobObject(ev.logprobs, offset) : null;
        offsets[i] = offset + ev.token.length;
        const chunk = oa.completionChunk(id, model, created, ev.token, null, lp, i);
        if (!sizes) return sse.send(chunk);
        predicted[i] = (predicted[i] ?? 0) + (ev.logprobs?.length ?? 1);
        const size = sizes.sizes[i] ?? sizes.sizes[0] ?? 0;
        sse.send({ ...(chunk as object), __verbose: native.partialResult(i, ev, predicted[i]!, size) });
      });
    const { done } = await this.submit(options, res, onToken);
    if (sse) {
      try {
        const r = await done;
        const u = oa.usage(r);
        const all = r.choices ?? [r];
        for (const [i, x] of all.entries()) {
          let last = oa.completionChunk(id, model, created, '', oa.finishReason(x), null, i) as Record<string, unknown>;
          if (sizes) {
            // generation_settings as the client asked (the submission filled in the server's defaults)
            const asked = { ...sizes.asked(options), logprobs: logprobs ? options.logprobs : undefined };
            if (!logprobs) delete asked.n_probs;
            last = { ...last, __verbose: await this.streamVerbose(r, x, i, asked) };
          }
          sse.send(i === all.length - 1 ? { ...last, usage: u, timings: oa.timings(r) } : last);
        }
        if (includeUsage) sse.send({ id, object: 'text_completion', created, model, choices: [], usage: u });
        sse.done();
      } catch (e) {
        if (e instanceof Cancelled) return;
        if (!sse.opened) throw e;
        sse.fail(apiError(e));
      }
      return;
    }
    const r = await this.result(done);
    if (!r) return;
    sendJson(res, 200, {
      id,
      object: 'text_completion',
      created,
      model,
      system_fingerprint: oa.SYSTEM_FINGERPRINT,
      choices: (r.choices ?? [r]).map((x, index) => ({
        text: x.text,
        index,
        logprobs: x.logprobs ? oa.completionLogprobObject(x.logprobs) : null,
        finish_reason: oa.finishReason(x),
      })),
      usage: oa.usage(r),
      timings: oa.timings(r),
      // llama-server's return_tokens: the generated ids
      ...(returnTokens && r.tokens ? { tokens: r.tokens } : {}),
      ...(this.verbose ? { __verbose: await native.verboseResult(this, r, options) } : {}),
    });
  }

  // ---- embeddings ----

  /**
   * /v1/embeddings (OpenAI's list) and llama-server's /embedding, /embeddings: a list of
   * { index, embedding } where `embedding` holds the pooled vector, or with --pooling none
   * every token's (not normalized); OpenAI's shape has no room for those: a 400 then.
   */
  private async embeddings(c: RequestContext, openai: boolean): Promise<void> {
    const b = oa.asObject(c.body);
    this.requireEmbeddings();
    const perToken = this.opts.pooling === 'none';
    if (openai && perToken) {
      throw new ApiError(
        400,
        "pooling 'none' gives a vector per token, which OpenAI's shape cannot hold: use /embeddings, or another --pooling",
      );
    }
    const { list: inputs } = await native.requestPrompts(this, b.input ?? b.content, 'input', MAX_EMBEDDING_INPUTS);
    const format = b.encoding_format ?? 'float';
    if (format !== 'float' && format !== 'base64') {
      throw new ApiError(400, "'encoding_format' must be 'float' or 'base64'", undefined, 'encoding_format');
    }
    let normalize = 2;
    if (!openai && b.embd_normalize !== undefined && b.embd_normalize !== null) {
      if (!Number.isInteger(b.embd_normalize) || (b.embd_normalize as number) < -1) {
        throw new ApiError(400, "'embd_normalize' must be an integer ≥ -1", undefined, 'embd_normalize');
      }
      normalize = b.embd_normalize as number;
    }
    // media were refused by requestPrompts (completions only): every input is text or token ids
    const out = await this.embedRows(inputs as (string | number[])[], normalize, c.res, perToken);
    if (!out) return;
    if (!openai) {
      sendJson(
        c.res,
        200,
        out.vectors.map((rows, index) => ({ index, embedding: rows.map((e) => Array.from(e)) })),
      );
      return;
    }
    sendJson(c.res, 200, {
      object: 'list',
      model: this.modelId,
      data: out.vectors.map((rows, index) => ({
        object: 'embedding',
        index,
        embedding: format === 'base64' ? oa.base64Floats(rows[0]!) : Array.from(rows[0]!),
      })),
      usage: { prompt_tokens: out.nTokens, total_tokens: out.nTokens },
    });
  }

  /** A 501 unless this server embeds (an embedding model, or --embeddings). */
  requireEmbeddings(): void {
    if (this.generative && !this.opts.embeddings) {
      throw new ApiError(
        501,
        'this server does not serve embeddings: start it with --embeddings or an embedding model',
      );
    }
  }

  /**
   * Pooled embeddings of `inputs`, normalized by `normalize` (llama.cpp's embd_normalize),
   * and the tokens they held; undefined when the client went away.
   */
  async embed(
    inputs: (string | number[])[],
    normalize: number,
    res: ServerResponse,
  ): Promise<{ vectors: Float32Array[]; nTokens: number } | undefined> {
    for (const x of inputs) if (x.length === 0) throw new ApiError(400, 'an input is empty', undefined, 'input');
    const out = await this.embedRows(inputs, normalize, res, false);
    return out && { vectors: out.vectors.map((rows) => rows[0]!), nTokens: out.nTokens };
  }

  /**
   * One input at a time, in order, on the context's embedding sequence: each input's pooled
   * vector, or (perToken) every token's.
   */
  private async embedRows(
    inputs: (string | number[])[],
    normalize: number,
    res: ServerResponse,
    perToken: boolean,
  ): Promise<{ vectors: Float32Array[][]; nTokens: number } | undefined> {
    const vectors: Float32Array[][] = [];
    let nTokens = 0;
    for (const x of inputs) {
      if (res.destroyed) return undefined;
      const r = await this.ctx.embedding(x, { embd_normalize: normalize, ...(perToken ? { per_token: true } : {}) });
      vectors.push(r.embeddings ?? [r.embedding]);
      nTokens +=
        typeof x === 'string'
          ? (await this.ctx.tokenize(x, { add_special: true, parse_special: true })).tokens.length
          : x.length;
    }
    return { vectors, nTokens };
  }
}

/** The request's X-Prefix-Key when it has a key's form, else '' (a new key is made). */
function requestPrefixKey(req: IncomingMessage): string {
  const v = req.headers[PREFIX_KEY_HEADER.toLowerCase()];
  const key = typeof v === 'string' ? v.trim() : '';
  return isPrefixKey(key) ? key : '';
}
