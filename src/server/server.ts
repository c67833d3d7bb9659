// The OpenAI-compatible server (llama-server's endpoints): HTTP and JSON on this thread,
// the model in the library's engine worker. The server is a client of the library's
// parallel API (ctx.parallel): each request is a unit of the context's batcher, so its N
// slots are N units decoded together, with the library's prefix reuse, context shift,
// sampling and stop strings (src/generation). Endpoints on node:http (http.ts), shapes
// in openai.ts.
//
//   GET  /health /v1/health /v1/models /models /metrics /lora-adapters
//   POST /v1/chat/completions /chat/completions /v1/completions /completions
//        /v1/embeddings /embeddings /tokenize /detokenize /lora-adapters
//        /v1/rerank /rerank /v1/reranking /reranking
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import {
  type LlamaCompletionOptions,
  type LlamaCompletionResult,
  type LlamaCompletionToken,
  type LlamaContext,
  LlamaError,
  loadModel,
  type ModelInfo,
} from '../api/index.js';
import type { TemplateLimits } from '../chat/index.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { architecture } from '../model/index.js';
import type { GrammarLimits } from '../sampling/grammar/index.js';
import { ApiError, createHttpServer, errorBody, type RequestContext, type Route, sendJson } from './http.js';
import { Metrics } from './metrics.js';
import * as oa from './openai.js';

const log = logger('server');

/** Documents one /v1/rerank request may hold. */
const MAX_RERANK_DOCUMENTS = 10000;

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
  /** The model name reported (default: the file name). */
  alias?: string;
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
  /** A full-size KV cache for sliding-window layers too (llama-server's --swa-full). Default false. */
  swaFull?: boolean;
}

/** A library error as an HTTP error: bad options and requests that do not fit are the client's (400). */
function apiError(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  if (e instanceof LlamaError) {
    if (e.code === 'ERR_OPTION' || e.code === 'ERR_CONTEXT') {
      const param = /^([\w.]+) = /.exec(e.message)?.[1] ?? null;
      return new ApiError(400, e.message, undefined, param);
    }
    if (e.code === 'ERR_BUSY') return new ApiError(503, e.message);
  }
  return e;
}

/** From the GGUF header: the training context (0 when it does not say), whether the model generates, whether it ranks. */
function modelFacts(path: string): { nCtxTrain: number; generative: boolean; ranks: boolean } {
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

export class LlamaServer {
  readonly metrics = new Metrics();
  private http!: Server;
  readonly modelId: string;
  readonly created = Math.floor(Date.now() / 1000);
  /** The model as the engine describes it. */
  readonly modelInfo: ModelInfo;
  readonly nCtxSlot: number;
  readonly parallel: number;
  private readonly maxQueue: number;
  /** Generation requests sent to the engine and not yet answered. */
  private inFlight = 0;
  private closing = false;

  private constructor(
    private readonly ctx: LlamaContext,
    readonly opts: ServerOptions,
    private readonly generative: boolean,
    nCtxSlot: number,
    /** /v1/rerank is served. */
    readonly reranking: boolean,
  ) {
    this.modelId = opts.alias ?? basename(opts.model);
    this.parallel = opts.parallel ?? 4;
    this.maxQueue = opts.maxQueue ?? 64;
    this.nCtxSlot = nCtxSlot;
    this.modelInfo = ctx.getModelInfo();
  }

  /** Loads the model (in the engine worker) and listens; resolves once the port is open. */
  static async start(opts: ServerOptions): Promise<LlamaServer> {
    if (opts.apiKey !== undefined && opts.apiKey.trim() === '') {
      throw new Error('the API key must not be empty (leave it out to serve without a key)');
    }
    const parallel = opts.parallel ?? 4;
    const { nCtxTrain, generative, ranks } = modelFacts(opts.model);
    const train = nCtxTrain || 4096;
    const total = generative ? (opts.nCtx ?? Math.min(train, 4096) * parallel) : Math.min(train, 8192);
    const nCtxSlot = Math.floor(total / (generative ? parallel : 1));
    if (generative && nCtxSlot < 8) throw new Error(`a context of ${total} tokens is too small for ${parallel} slots`);
    const ctx = await loadModel({
      model: opts.model,
      n_ctx: total,
      n_batch: Math.min(opts.nBatch ?? 512, total),
      n_parallel: generative ? parallel : 1,
      ctx_shift: opts.ctxShift ?? true,
      ...(opts.swaFull ? { swa_full: true } : {}),
      ...(opts.threads !== undefined ? { n_threads: opts.threads } : {}),
      ...(opts.devices ? { devices: opts.devices } : {}),
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
      ...(ranks ? { pooling_type: 'rank' as const } : {}),
    });
    let s: LlamaServer;
    try {
      // --reranking with a model that cannot rank fails here, not on the first request
      if (opts.reranking && !ranks) await ctx.rerank('a', ['b']);
      if (generative) await ctx.parallel.enable({ n_parallel: parallel, n_batch: opts.nBatch ?? 512 });
      s = new LlamaServer(ctx, opts, generative, nCtxSlot, ranks || opts.reranking === true);
      s.http = createHttpServer(s.routes(), {
        apiKey: opts.apiKey,
        cors: opts.cors,
        maxBodyBytes: opts.maxBodyBytes ?? 10 * 1024 * 1024,
        maxPendingBodyBytes: opts.maxPendingBodyBytes,
        timeout: opts.timeout,
        maxConnections: opts.maxConnections,
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
    } catch (e) {
      await ctx.release();
      throw e;
    }
    log.info(`listening on ${s.url} (${s.parallel} slots of ${s.nCtxSlot} tokens, model ${s.modelId})`);
    return s;
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  get url(): string {
    const a = this.http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const closed = new Promise<void>((res) => this.http.close(() => res()));
    this.http.closeAllConnections();
    await this.ctx.release();
    await closed;
  }

  private routes(): Route[] {
    const r: Route[] = [];
    const add = (method: 'GET' | 'POST', paths: string[], handler: Route['handler'], pub = false) => {
      const wrapped: Route['handler'] = async (c) => {
        try {
          await handler(c);
        } catch (e) {
          throw apiError(e);
        }
      };
      for (const path of paths) r.push({ method, path, handler: wrapped, public: pub });
    };
    add('GET', ['/health', '/v1/health'], (c) => sendJson(c.res, 200, { status: 'ok' }), true);
    add('GET', ['/v1/models', '/models'], (c) => this.models(c), true);
    add('GET', ['/metrics'], (c) => this.metricsText(c));
    add('POST', ['/v1/chat/completions', '/chat/completions'], (c) => this.chat(c));
    add('POST', ['/v1/completions', '/completions'], (c) => this.completions(c));
    add('POST', ['/v1/embeddings', '/embeddings'], (c) => this.embeddings(c));
    add('POST', ['/tokenize'], (c) => this.tokenize(c));
    add('POST', ['/detokenize'], (c) => this.detokenize(c));
    add('POST', ['/v1/rerank', '/rerank', '/v1/reranking', '/reranking'], (c) => this.rerank(c));
    add('GET', ['/lora-adapters'], (c) => this.loraAdapters(c));
    add('POST', ['/lora-adapters'], (c) => this.setLoraAdapters(c));
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

  // ---- simple endpoints ----

  private models(c: RequestContext): void {
    const m = this.modelInfo;
    sendJson(c.res, 200, {
      object: 'list',
      data: [
        {
          id: this.modelId,
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
      nDecode: st?.n_decode_total ?? 0,
      nTokens: st?.n_tokens_total ?? 0,
      nDrafted: st?.n_draft_total ?? 0,
      nAccepted: st?.n_draft_accepted_total ?? 0,
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

  private requireGenerator(): void {
    if (!this.generative) {
      throw new ApiError(501, `${this.modelInfo.desc} is an embedding model: it serves /v1/embeddings only`);
    }
  }

  /**
   * Sends a request to the engine. Requests beyond the slots and the queue get a 503 at
   * once; a client that goes away stops its request.
   */
  private async submit(
    options: LlamaCompletionOptions,
    res: ServerResponse,
    onToken?: (t: LlamaCompletionToken) => void,
  ): Promise<{ done: Promise<LlamaCompletionResult> }> {
    if (this.inFlight >= this.parallel + this.maxQueue) {
      this.metrics.rejected++;
      throw new ApiError(503, 'the server is busy: every slot is in use and the queue is full; retry later');
    }
    this.inFlight++;
    let req: Awaited<ReturnType<LlamaContext['parallel']['completion']>>;
    try {
      req = await this.ctx.parallel.completion(options, onToken && ((_id, t) => onToken(t)));
    } catch (e) {
      this.inFlight--;
      throw e;
    }
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
        this.metrics.onRequestDone(r.timings);
        return r;
      },
      (e) => {
        this.inFlight--;
        throw cancelled ? new Cancelled() : e;
      },
    );
    done.catch(() => {});
    return { done };
  }

  private async chat(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    oa.checkN(b);
    if (!Array.isArray(b.messages) || b.messages.length === 0) {
      throw new ApiError(400, "'messages' must be a non-empty array", undefined, 'messages');
    }
    this.requireGenerator();
    if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) {
      throw new ApiError(400, "'tools' must be an array", undefined, 'tools');
    }
    const useTools = Array.isArray(b.tools) && b.tools.length > 0 && b.tool_choice !== 'none';
    const nProbs = oa.chatLogprobs(b);
    const options = oa.generationOptions({ ...b, prompt: undefined }, nProbs);
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    const res = c.res;
    // the stream opens with its first chunk, so an error before it is a plain HTTP error
    const sse = stream
      ? new SseWriter(res, () => oa.chatChunk(id, model, created, { role: 'assistant', content: null }, null))
      : undefined;
    const onToken =
      sse &&
      ((ev: LlamaCompletionToken) => {
        // with tools the reply is parsed whole at the end
        if (useTools) return;
        const extra = ev.logprobs ? { logprobs: { content: oa.chatLogprobContent(ev.logprobs) } } : {};
        sse.send(oa.chatChunk(id, model, created, { content: ev.token }, null, extra));
      });
    const { done } = await this.submit(options, res, onToken);
    if (sse) {
      try {
        const r = await done;
        const calls = r.tool_calls ?? [];
        if (useTools && (r.content || calls.length > 0)) {
          const delta: Record<string, unknown> = { content: r.content || null };
          if (calls.length > 0) delta.tool_calls = calls.map((t, index) => ({ index, ...t }));
          sse.send(oa.chatChunk(id, model, created, delta, null));
        }
        const u = oa.usage(r);
        const final = oa.chatChunk(id, model, created, {}, oa.chatFinishReason(oa.finishReason(r), calls.length > 0));
        sse.send({ ...(final as object), usage: u, timings: oa.timings(r) });
        if (includeUsage) sse.send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: u });
        sse.done();
      } catch (e) {
        if (e instanceof Cancelled) return;
        if (!sse.opened) throw e;
        sse.fail(apiError(e));
      }
      return;
    }
    const r = await this.await(done);
    if (!r) return;
    const calls = r.tool_calls ?? [];
    const message: Record<string, unknown> = { role: 'assistant', content: r.content ?? r.text };
    if (calls.length > 0) {
      message.tool_calls = calls;
      if (!r.content) message.content = null;
    }
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      system_fingerprint: oa.SYSTEM_FINGERPRINT,
      choices: [
        {
          index: 0,
          message,
          logprobs: r.logprobs ? { content: oa.chatLogprobContent(r.logprobs) } : null,
          finish_reason: oa.chatFinishReason(oa.finishReason(r), calls.length > 0),
        },
      ],
      usage: oa.usage(r),
      timings: oa.timings(r),
    });
  }

  /** The request's result, or undefined when the client went away (nothing to answer). */
  private async await(done: Promise<LlamaCompletionResult>): Promise<LlamaCompletionResult | undefined> {
    try {
      return await done;
    } catch (e) {
      if (e instanceof Cancelled) return undefined;
      throw e;
    }
  }

  private async completions(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    oa.checkN(b);
    this.requireGenerator();
    const prompt = oa.completionPrompt(b);
    const nProbs = oa.completionLogprobs(b);
    const options = oa.generationOptions({ ...b, prompt: undefined, messages: undefined }, nProbs);
    options.prompt = prompt;
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('cmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    const res = c.res;
    const sse = stream ? new SseWriter(res) : undefined;
    let offset = 0;
    const onToken =
      sse &&
      ((ev: LlamaCompletionToken) => {
        const lp = ev.logprobs ? oa.completionLogprobObject(ev.logprobs, offset) : null;
        offset += ev.token.length;
        sse.send(oa.completionChunk(id, model, created, ev.token, null, lp));
      });
    const { done } = await this.submit(options, res, onToken);
    if (sse) {
      try {
        const r = await done;
        const u = oa.usage(r);
        sse.send({
          ...(oa.completionChunk(id, model, created, '', oa.finishReason(r)) as object),
          usage: u,
          timings: oa.timings(r),
        });
        if (includeUsage) sse.send({ id, object: 'text_completion', created, model, choices: [], usage: u });
        sse.done();
      } catch (e) {
        if (e instanceof Cancelled) return;
        if (!sse.opened) throw e;
        sse.fail(apiError(e));
      }
      return;
    }
    const r = await this.await(done);
    if (!r) return;
    sendJson(res, 200, {
      id,
      object: 'text_completion',
      created,
      model,
      system_fingerprint: oa.SYSTEM_FINGERPRINT,
      choices: [
        {
          text: r.text,
          index: 0,
          logprobs: r.logprobs ? oa.completionLogprobObject(r.logprobs) : null,
          finish_reason: oa.finishReason(r),
        },
      ],
      usage: oa.usage(r),
      timings: oa.timings(r),
      // llama-server's return_tokens: the generated ids
      ...(r.tokens ? { tokens: r.tokens } : {}),
    });
  }

  // ---- embeddings ----

  private async embeddings(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    if (this.generative && !this.opts.embeddings) {
      throw new ApiError(
        501,
        'this server does not serve embeddings: start it with --embeddings or an embedding model',
      );
    }
    const inputs = oa.embeddingInputs(b);
    const format = b.encoding_format ?? 'float';
    if (format !== 'float' && format !== 'base64') {
      throw new ApiError(400, "'encoding_format' must be 'float' or 'base64'", undefined, 'encoding_format');
    }
    // one input at a time, in order, on the context's embedding sequence
    const vectors: Float32Array[] = [];
    let n = 0;
    for (const x of inputs) {
      if (c.res.destroyed) return;
      if (Array.isArray(x) && x.length === 0) throw new ApiError(400, 'an input is empty', undefined, 'input');
      if (typeof x === 'string' && x.length === 0) throw new ApiError(400, 'an input is empty', undefined, 'input');
      const { embedding } = await this.ctx.embedding(x, { embd_normalize: 2 });
      vectors.push(embedding);
      n +=
        typeof x === 'string'
          ? (await this.ctx.tokenize(x, { add_special: true, parse_special: true })).tokens.length
          : x.length;
    }
    sendJson(c.res, 200, {
      object: 'list',
      model: this.modelId,
      data: vectors.map((e, index) => ({
        object: 'embedding',
        index,
        embedding: format === 'base64' ? oa.base64Floats(e) : Array.from(e),
      })),
      usage: { prompt_tokens: n, total_tokens: n },
    });
  }
}

/** A request whose client went away. */
class Cancelled extends Error {}

/** Server-sent events: `data: JSON` per chunk, `data: [DONE]` at the end; headers go with the first chunk. */
class SseWriter {
  opened = false;

  constructor(
    private readonly res: ServerResponse,
    /** The chunk a stream starts with, if any. */
    private readonly first?: () => unknown,
  ) {}

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    this.res.flushHeaders();
    if (this.first) this.send(this.first());
  }

  send(obj: unknown): void {
    this.open();
    if (!this.res.writable) return;
    this.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  }

  done(): void {
    this.open();
    if (!this.res.writable) return;
    this.res.end('data: [DONE]\n\n');
  }

  fail(e: unknown): void {
    if (!this.res.writable) return;
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error)?.message ?? String(e));
    this.res.end(`data: ${JSON.stringify(errorBody(err))}\n\n`);
  }
}
