// The OpenAI-compatible server (llama-server's endpoints): one model, one context shared
// by N slots (slots.ts), endpoints on node:http (http.ts), shapes in openai.ts.
//
//   GET  /health /v1/health /v1/models /models /metrics
//   POST /v1/chat/completions /chat/completions /v1/completions /completions
//        /v1/embeddings /embeddings /tokenize /detokenize
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import {
  type ChatMessage,
  ChatMessageError,
  ChatTemplateError,
  type ChatTemplates,
  type FormattedChatResult,
  loadChatTemplates,
  parseChatOutput,
  parseToolCalls,
  type TemplateLimits,
  type Tool,
} from '../api/chat/index.js';
import type { Device } from '../backends/api.js';
import { openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { Context, l2Normalize, Model } from '../model/index.js';
import type { GrammarLimits } from '../sampling/grammar/index.js';
import { createSamplingChain, type SamplerChain, SamplingError } from '../sampling/index.js';
import { compileSamplingGrammar, formatChatOnWorker, UntrustedBusyError } from '../untrusted/index.js';
import { ApiError, createHttpServer, errorBody, type RequestContext, type Route, sendJson } from './http.js';
import { Metrics } from './metrics.js';
import * as oa from './openai.js';
import { QueueFullError, SlotScheduler, type Task, type TaskParams, type TokenEvent } from './slots.js';

const log = logger('server');

// Evaluations of different contexts must not interleave on the cpu device: every decode
// of every server in this process runs through one chain.
let evalChain: Promise<unknown> = Promise.resolve();
function exclusive<T>(fn: () => Promise<T>): Promise<T> {
  const run = evalChain.then(fn, fn);
  evalChain = run.catch(() => {});
  return run;
}

export interface ServerOptions {
  /** Path of the GGUF model. */
  model: string;
  host?: string;
  /** 0: any free port. Default 8080. */
  port?: number;
  /** Slots (sequences decoded together). Default 4. */
  parallel?: number;
  /** Total context in tokens, shared by the slots (each gets nCtx / parallel). Default: 4096 × parallel, at most the model's training context × parallel. */
  nCtx?: number;
  nBatch?: number;
  threads?: number;
  devices?: Device[];
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
}

function chatError(e: unknown): never {
  if (e instanceof ChatMessageError || e instanceof ChatTemplateError || e instanceof SamplingError) {
    throw new ApiError(400, e.message);
  }
  if (e instanceof UntrustedBusyError) throw new ApiError(503, `the server is busy: ${e.message}`);
  throw e;
}

/** Thrown when the client went away while its request was being prepared: nothing to answer. */
class ClientGone extends Error {}

/**
 * An AbortSignal that fires when the client disconnects before the response ends (it
 * cancels template rendering and grammar compilation on the untrusted-work worker).
 */
function disconnectSignal(res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) ac.abort(new ClientGone('the client disconnected'));
  });
  return ac.signal;
}

export class LlamaServer {
  readonly metrics = new Metrics();
  private http!: Server;
  private scheduler: SlotScheduler | undefined;
  private ctx: Context | undefined;
  private embCtx: Context | undefined;
  private embQueue: Promise<unknown> = Promise.resolve();
  private templates: ChatTemplates | undefined;
  readonly modelId: string;
  readonly created = Math.floor(Date.now() / 1000);
  readonly nCtxSlot: number;
  readonly parallel: number;
  private closing = false;

  private constructor(
    readonly model: Model,
    readonly opts: ServerOptions,
  ) {
    this.modelId = opts.alias ?? basename(opts.model);
    this.parallel = opts.parallel ?? 4;
    const train = model.hp.nCtxTrain || 4096;
    const total = opts.nCtx ?? Math.min(train, 4096) * this.parallel;
    this.nCtxSlot = Math.floor(total / this.parallel);
    if (this.nCtxSlot < 8) throw new Error(`a context of ${total} tokens is too small for ${this.parallel} slots`);
    const threads = opts.threads ?? 2;
    if (model.arch.usesKVCache) {
      this.ctx = new Context(model, {
        nCtx: total,
        nBatch: Math.min(opts.nBatch ?? 512, total),
        nSeqMax: this.parallel,
        nThreads: threads,
      });
      this.scheduler = new SlotScheduler(this.ctx, model.vocab, {
        parallel: this.parallel,
        nCtxSlot: this.nCtxSlot,
        maxQueue: opts.maxQueue ?? 64,
        metrics: this.metrics,
        exclusive,
      });
      const f = openGGUF(opts.model);
      try {
        this.templates = loadChatTemplates(
          f,
          opts.chatTemplate !== undefined
            ? { vocab: model.vocab, override: opts.chatTemplate }
            : { vocab: model.vocab },
        );
      } finally {
        f.close();
      }
    }
    if (!model.arch.usesKVCache || opts.embeddings) {
      const n = Math.min(train, 8192);
      const pooling = model.hp.pooling === 'none' ? 'mean' : model.hp.pooling;
      this.embCtx = new Context(model, {
        nCtx: n,
        nBatch: n,
        nUbatch: n,
        nThreads: threads,
        embeddings: true,
        pooling,
      });
    }
  }

  /** Loads the model and listens; resolves once the port is open. */
  static async start(opts: ServerOptions): Promise<LlamaServer> {
    if (opts.apiKey !== undefined && opts.apiKey.trim() === '') {
      throw new Error('the API key must not be empty (leave it out to serve without a key)');
    }
    const model = await Model.load(opts.model, opts.devices ? { devices: opts.devices } : {});
    let s: LlamaServer;
    try {
      s = new LlamaServer(model, opts);
    } catch (e) {
      model.free();
      throw e;
    }
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
    await this.scheduler?.close();
    await closed;
    await this.embQueue.catch(() => {});
    this.ctx?.free();
    this.embCtx?.free();
    this.model.free();
  }

  private routes(): Route[] {
    const r: Route[] = [];
    const add = (method: 'GET' | 'POST', paths: string[], handler: Route['handler'], pub = false) => {
      for (const path of paths) r.push({ method, path, handler, public: pub });
    };
    add('GET', ['/health', '/v1/health'], (c) => sendJson(c.res, 200, { status: 'ok' }), true);
    add('GET', ['/v1/models', '/models'], (c) => this.models(c), true);
    add('GET', ['/metrics'], (c) => this.metricsText(c));
    add('POST', ['/v1/chat/completions', '/chat/completions'], (c) => this.chat(c));
    add('POST', ['/v1/completions', '/completions'], (c) => this.completions(c));
    add('POST', ['/v1/embeddings', '/embeddings'], (c) => this.embeddings(c));
    add('POST', ['/tokenize'], (c) => this.tokenize(c));
    add('POST', ['/detokenize'], (c) => this.detokenize(c));
    return r;
  }

  // ---- simple endpoints ----

  private models(c: RequestContext): void {
    const m = this.model;
    sendJson(c.res, 200, {
      object: 'list',
      data: [
        {
          id: this.modelId,
          object: 'model',
          created: this.created,
          owned_by: 'llama-ts',
          meta: {
            vocab_type: m.vocab.type,
            n_vocab: m.vocab.nTokens,
            n_ctx_train: m.hp.nCtxTrain,
            n_embd: m.hp.nEmbd,
            n_params: m.nParams,
            size: m.fileSize,
          },
        },
      ],
    });
  }

  private metricsText(c: RequestContext): void {
    const text = this.metrics.render(this.scheduler?.nBusy ?? 0, this.scheduler?.queue.length ?? 0, this.parallel);
    c.res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    c.res.end(text);
  }

  private tokenize(c: RequestContext): void {
    const b = oa.asObject(c.body);
    if (typeof b.content !== 'string') throw new ApiError(400, "'content' must be a string", undefined, 'content');
    const v = this.model.vocab;
    const tokens = v.encode(b.content, { addSpecial: b.add_special === true, parseSpecial: b.parse_special !== false });
    if (b.with_pieces === true) {
      const pieces = tokens.map((id) => {
        const bytes = v.pieceBytes(id, true);
        const text = Buffer.from(bytes, 'latin1').toString('utf8');
        const valid = Buffer.from(text, 'utf8').toString('latin1') === bytes;
        return { id, piece: valid ? text : Array.from(bytes, (ch) => ch.charCodeAt(0)) };
      });
      sendJson(c.res, 200, { tokens: pieces });
    } else sendJson(c.res, 200, { tokens });
  }

  private detokenize(c: RequestContext): void {
    const b = oa.asObject(c.body);
    const tokens = this.checkTokens(b.tokens, 'tokens');
    sendJson(c.res, 200, { content: this.model.vocab.decode(tokens) });
  }

  private checkTokens(v: unknown, name: string): number[] {
    const n = this.model.vocab.nTokens;
    if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x) && x >= 0 && x < n)) {
      throw new ApiError(400, `'${name}' must be an array of token ids in [0, ${n})`, undefined, name);
    }
    return v as number[];
  }

  // ---- generation ----

  private requireGenerator(): SlotScheduler {
    if (!this.scheduler) {
      throw new ApiError(501, `${this.model.arch.name} is an embedding model: it serves /v1/embeddings only`);
    }
    return this.scheduler;
  }

  /** The request's sampling chain; its grammar or JSON schema is compiled on the untrusted-work worker. */
  private async sampler(b: oa.Body, nProbs: number, signal: AbortSignal): Promise<SamplerChain> {
    const params = oa.samplingParams(b, this.nCtxSlot);
    if (nProbs > 0) params.n_probs = nProbs;
    delete params.post_sampling_probs;
    try {
      const { timeMs, ...limits } = this.opts.grammarLimits ?? {};
      const compiled = await compileSamplingGrammar(params, {
        signal,
        limits,
        ...(timeMs !== undefined ? { timeMs } : {}),
      });
      return createSamplingChain(params, this.model.vocab, compiled);
    } catch (e) {
      chatError(e);
    }
  }

  private submit(params: TaskParams, res: ServerResponse): Task {
    const sched = this.requireGenerator();
    if (params.prompt.length === 0) throw new ApiError(400, 'the prompt is empty');
    if (params.prompt.length >= this.nCtxSlot) {
      throw new ApiError(
        400,
        `the request exceeds the available context size: the prompt is ${params.prompt.length} tokens, a slot holds ${this.nCtxSlot}`,
      );
    }
    let task: Task;
    try {
      task = sched.submit(params);
    } catch (e) {
      if (e instanceof QueueFullError) {
        this.metrics.rejected++;
        throw new ApiError(503, 'the server is busy: every slot is in use and the queue is full; retry later');
      }
      throw e;
    }
    // the client went away (socket closed before the answer ended): drop the task at once
    res.on('close', () => {
      if (!res.writableFinished) task.cancel();
    });
    return task;
  }

  private encodePrompt(text: string): number[] {
    const v = this.model.vocab;
    const t = v.encode(text, { addSpecial: true, parseSpecial: true });
    // a template that writes the BOS text itself: keep one
    if (t.length > 1 && v.addBos && t[0] === t[1] && t[0] === v.bos) t.shift();
    return t;
  }

  private async chat(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    oa.checkN(b);
    if (!Array.isArray(b.messages) || b.messages.length === 0) {
      throw new ApiError(400, "'messages' must be a non-empty array", undefined, 'messages');
    }
    this.requireGenerator();
    const tools = Array.isArray(b.tools) && b.tools.length > 0 ? (b.tools as Tool[]) : undefined;
    if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) {
      throw new ApiError(400, "'tools' must be an array", undefined, 'tools');
    }
    const useTools = tools !== undefined && b.tool_choice !== 'none';
    const signal = disconnectSignal(c.res);
    let formatted: FormattedChatResult;
    try {
      formatted = await formatChatOnWorker(
        this.templates!,
        b.messages as ChatMessage[],
        undefined,
        {
          jinja: true,
          ...(useTools ? { tools } : {}),
          ...(typeof b.tool_choice === 'string' ? { tool_choice: b.tool_choice } : {}),
          ...(typeof b.parallel_tool_calls === 'boolean' ? { parallel_tool_calls: b.parallel_tool_calls } : {}),
          ...(typeof b.chat_template_kwargs === 'object' && b.chat_template_kwargs !== null
            ? { chat_template_kwargs: b.chat_template_kwargs as Record<string, unknown> }
            : {}),
          add_generation_prompt: true,
          ...(this.opts.templateLimits ? { limits: this.opts.templateLimits } : {}),
        },
        { signal },
      );
    } catch (e) {
      if (signal.aborted) return;
      chatError(e);
    }
    const nProbs = oa.chatLogprobs(b);
    const stop = [...oa.stopStrings(b), ...(formatted.additional_stops ?? [])];
    const prompt = this.encodePrompt(formatted.prompt);
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    let sampler: SamplerChain;
    try {
      sampler = await this.sampler(b, nProbs, signal);
    } catch (e) {
      if (signal.aborted) return;
      throw e;
    }
    const parse = (text: string) => {
      if (!useTools) return { content: text, tool_calls: [] };
      const fmt = formatted.chat_format ?? 0;
      return fmt !== 0 ? parseChatOutput(text, fmt) : parseToolCalls(text, 'generic');
    };
    const res = c.res;
    const sse = stream ? new SseWriter(res) : undefined;
    const onToken =
      sse &&
      ((ev: TokenEvent) => {
        // with tools the reply is parsed whole at the end
        if (useTools) return;
        const extra =
          nProbs >= 0 && ev.probs ? { logprobs: { content: oa.chatLogprobContent(this.model.vocab, [ev.probs]) } } : {};
        if (ev.text || ev.probs) sse.send(oa.chatChunk(id, model, created, { content: ev.text }, null, extra));
      });
    const task = this.submit(
      {
        prompt,
        nPredict: oa.nPredict(b),
        sampler,
        stop,
        nProbs,
        postSamplingProbs: b.post_sampling_probs === true,
        ...(onToken ? { onToken } : {}),
      },
      res,
    );
    if (sse) {
      sse.open();
      sse.send(oa.chatChunk(id, model, created, { role: 'assistant', content: null }, null));
      try {
        const r = await task.done;
        const parsed = parse(r.text);
        const calls = parsed.tool_calls;
        if (useTools && (parsed.content || calls.length > 0)) {
          const delta: Record<string, unknown> = { content: parsed.content || null };
          if (calls.length > 0) delta.tool_calls = calls.map((t, index) => ({ index, ...t }));
          sse.send(oa.chatChunk(id, model, created, delta, null));
        }
        const u = oa.usage(r);
        const final = oa.chatChunk(id, model, created, {}, oa.chatFinishReason(r.finishReason, calls.length > 0));
        sse.send({ ...(final as object), usage: u, timings: oa.timings(r) });
        if (includeUsage) sse.send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: u });
        sse.done();
      } catch (e) {
        sse.fail(e);
      }
      return;
    }
    const r = await this.await(task);
    if (!r) return;
    const parsed = parse(r.text);
    const message: Record<string, unknown> = { role: 'assistant', content: parsed.content };
    if (parsed.tool_calls.length > 0) {
      message.tool_calls = parsed.tool_calls;
      if (!parsed.content) message.content = null;
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
          logprobs: nProbs >= 0 ? { content: oa.chatLogprobContent(this.model.vocab, r.probs) } : null,
          finish_reason: oa.chatFinishReason(r.finishReason, parsed.tool_calls.length > 0),
        },
      ],
      usage: oa.usage(r),
      timings: oa.timings(r),
    });
  }

  /** The task's result, or undefined when the client went away (nothing to answer). */
  private async await(task: Task) {
    try {
      return await task.done;
    } catch (e) {
      if (task.cancelled) return undefined;
      throw e;
    }
  }

  private async completions(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    oa.checkN(b);
    this.requireGenerator();
    const p = oa.completionPrompt(b);
    const prompt = typeof p === 'string' ? this.encodePrompt(p) : this.checkTokens(p, 'prompt');
    const nProbs = oa.completionLogprobs(b);
    const stop = oa.stopStrings(b);
    const stream = b.stream === true;
    const includeUsage =
      typeof b.stream_options === 'object' && (b.stream_options as oa.Body | null)?.include_usage === true;
    const id = oa.newId('cmpl');
    const created = Math.floor(Date.now() / 1000);
    const model = this.modelId;
    const signal = disconnectSignal(c.res);
    let sampler: SamplerChain;
    try {
      sampler = await this.sampler(b, nProbs, signal);
    } catch (e) {
      if (signal.aborted) return;
      throw e;
    }
    const res = c.res;
    const sse = stream ? new SseWriter(res) : undefined;
    let offset = 0;
    const onToken =
      sse &&
      ((ev: TokenEvent) => {
        if (!ev.text && !ev.probs) return;
        const lp = nProbs >= 0 && ev.probs ? oa.completionLogprobObject(this.model.vocab, [ev.probs], offset) : null;
        offset += ev.text.length;
        sse.send(oa.completionChunk(id, model, created, ev.text, null, lp));
      });
    const task = this.submit(
      {
        prompt,
        nPredict: oa.nPredict(b),
        sampler,
        stop,
        nProbs,
        postSamplingProbs: b.post_sampling_probs === true,
        ...(onToken ? { onToken } : {}),
      },
      res,
    );
    if (sse) {
      sse.open();
      try {
        const r = await task.done;
        const u = oa.usage(r);
        sse.send({
          ...(oa.completionChunk(id, model, created, '', r.finishReason) as object),
          usage: u,
          timings: oa.timings(r),
        });
        if (includeUsage) sse.send({ id, object: 'text_completion', created, model, choices: [], usage: u });
        sse.done();
      } catch (e) {
        sse.fail(e);
      }
      return;
    }
    const r = await this.await(task);
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
          logprobs: nProbs >= 0 ? oa.completionLogprobObject(this.model.vocab, r.probs) : null,
          finish_reason: r.finishReason,
        },
      ],
      usage: oa.usage(r),
      timings: oa.timings(r),
    });
  }

  // ---- embeddings ----

  private async embeddings(c: RequestContext): Promise<void> {
    const b = oa.asObject(c.body);
    const ctx = this.embCtx;
    if (!ctx) {
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
    const v = this.model.vocab;
    const lists = inputs.map((x) =>
      typeof x === 'string' ? v.encode(x, { addSpecial: true, parseSpecial: true }) : this.checkTokens(x, 'input'),
    );
    for (const t of lists) {
      if (t.length === 0) throw new ApiError(400, 'an input is empty', undefined, 'input');
      if (t.length > ctx.nUbatch) {
        throw new ApiError(400, `an input is ${t.length} tokens; at most ${ctx.nUbatch} fit`, undefined, 'input');
      }
    }
    // one embedding context, one input at a time
    const job = this.embQueue.then(async () => {
      const out: Float32Array[] = [];
      for (const tokens of lists) {
        if (c.res.destroyed) throw new Error('cancelled');
        out.push(
          await exclusive(async () => {
            ctx.clearMemory();
            await ctx.decode({ tokens, logits: tokens.map(() => true) });
            return l2Normalize(ctx.getEmbeddingsSeq(0));
          }),
        );
      }
      return out;
    });
    this.embQueue = job.catch(() => {});
    let vectors: Float32Array[];
    try {
      vectors = await job;
    } catch (e) {
      if (c.res.destroyed) return;
      throw e;
    }
    const n = lists.reduce((s, t) => s + t.length, 0);
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

/** Server-sent events: `data: JSON` per chunk, `data: [DONE]` at the end. */
class SseWriter {
  constructor(private readonly res: ServerResponse) {}

  open(): void {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    this.res.flushHeaders();
  }

  send(obj: unknown): void {
    if (!this.res.writable) return;
    this.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  }

  done(): void {
    if (!this.res.writable) return;
    this.res.end('data: [DONE]\n\n');
  }

  fail(e: unknown): void {
    if (!this.res.writable) return;
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error)?.message ?? String(e));
    this.res.end(`data: ${JSON.stringify(errorBody(err))}\n\n`);
  }
}
