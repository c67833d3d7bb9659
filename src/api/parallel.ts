// ctx.parallel: llama.node 1.x's parallel decoding API. After enable({ n_parallel }), each
// completion() is queued at once and returns its request id, a promise of the result and
// a stop function; up to n_parallel requests run together on the context's batcher (one
// decode per step for all of them, in the engine worker), the rest wait in its queue.
import { type BatcherStatus, type PromptInfo, tokenAccumulator } from '../generation/index.js';
import type { EngineClient, RequestBody } from './client.js';
import type { ParallelConfig, SlotActionResult } from './engine.js';
import { LlamaError } from './errors.js';
import { optionError } from './options.js';
import type {
  EmbeddingResult,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
  RerankedDocument,
  RerankParams,
  RerankResult,
} from './types.js';

/** Scores with their documents, best first (ties: document order), as llama.node's rerank gives them. */
export function rankedDocuments(r: readonly RerankResult[], documents: readonly string[]): RerankedDocument[] {
  return r
    .map((x) => ({
      score: x.score,
      index: x.index,
      document: documents[x.index]!,
      ...(x.n_tokens !== undefined ? { n_tokens: x.n_tokens } : {}),
    }))
    .sort((a, b) => b.score - a.score || a.index - b.index);
}

/** What a parallel request is (llama.node's ParallelRequestStatus, plus counters). */
export type ParallelStatus = BatcherStatus;
export type ParallelRequestStatus = BatcherStatus['requests'][number];
export type ParallelSlotStatus = BatcherStatus['slots'][number];
export type { ParallelConfig, PromptInfo, SlotActionResult };

export type LlamaParallelCompletionOptions = LlamaCompletionOptions;

/** A parallel completion's result: the completion's, with its request id. */
export type LlamaParallelCompletionResult = LlamaCompletionResult & {
  requestId: number;
  timings: LlamaCompletionResult['timings'] & { cache_n: number };
};

/** The parts of a LlamaContext the parallel API uses. */
export interface ParallelPort {
  readonly client: EngineClient;
  readonly ctx: number;
  check(): void;
}

function transferable(o: LlamaCompletionOptions): LlamaCompletionOptions {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'signal' && typeof v !== 'function') out[k] = v;
  return out as LlamaCompletionOptions;
}

function notEnabled(): LlamaError {
  return new LlamaError('ERR_CONTEXT', 'Parallel mode is not enabled. Call enable() first.');
}

export class LlamaParallelAPI {
  readonly #port: ParallelPort;
  #enabled = false;
  #status: ParallelStatus | undefined;
  readonly #subscribers = new Set<(s: ParallelStatus) => void>();

  /** @internal Use ctx.parallel. */
  constructor(port: ParallelPort) {
    this.#port = port;
  }

  #request<T>(body: RequestBody, onEvent?: (e: string, v: unknown) => void) {
    return this.#port.client.request<T>(body, onEvent);
  }

  /** Turns parallel mode on (or reconfigures it once running requests end). */
  async enable(config: ParallelConfig = {}): Promise<boolean> {
    this.#port.check();
    if (config === null || typeof config !== 'object') throw optionError('config', config, 'must be an object');
    const ok = await this.#request<boolean>({ op: 'parallelEnable', ctx: this.#port.ctx, config: { ...config } })
      .promise;
    if (!this.#enabled) {
      this.#port.client.onStatus(this.#port.ctx, (s) => {
        this.#status = s;
        for (const f of this.#subscribers) f(s);
      });
    }
    this.#enabled = ok;
    return ok;
  }

  /** Same as enable(): changes n_parallel / n_batch, enabling if needed. */
  configure(config: ParallelConfig): Promise<boolean> {
    return this.enable(config);
  }

  /** Back to one completion at a time; queued and running parallel requests are stopped. */
  disable(): Promise<void> {
    this.#enabled = false;
    this.#status = undefined;
    this.#port.client.onStatus(this.#port.ctx, undefined);
    return this.#request<void>({ op: 'parallelDisable', ctx: this.#port.ctx }).promise.catch(() => {});
  }

  isEnabled(): boolean {
    return this.#enabled;
  }

  /**
   * Queues a completion. Returns at once with the request's id, a promise of its result
   * and `stop()`, which ends it (the promise then rejects with ERR_CANCELLED, as
   * llama.node's 'Request cancelled'). `onToken(requestId, token)` streams its text.
   * llama-ts additions: `onPrompt(requestId, info)` is called once the prompt is rendered
   * and tokenized, before it is evaluated (its length; with the `prefix_key` option, the
   * key); `interrupt()` ends the request too, but its promise resolves with what was
   * generated (`interrupted: true`), as completion() does after stopCompletion().
   */
  async completion(
    options: LlamaParallelCompletionOptions,
    onToken?: (requestId: number, data: LlamaCompletionToken) => void,
    onPrompt?: (requestId: number, info: PromptInfo) => void,
  ): Promise<{
    requestId: number;
    promise: Promise<LlamaParallelCompletionResult>;
    stop: () => void;
    interrupt: () => void;
  }> {
    this.#port.check();
    if (!this.#enabled) throw notEnabled();
    if (options === null || typeof options !== 'object') throw optionError('options', options, 'must be an object');
    if (onToken !== undefined && typeof onToken !== 'function') {
      throw optionError('onToken', onToken, 'must be a function');
    }
    if (onPrompt !== undefined && typeof onPrompt !== 'function') {
      throw optionError('onPrompt', onPrompt, 'must be a function');
    }
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw optionError('signal', signal, 'must be an AbortSignal');
    }
    let requestId = 0;
    let cancel: (e: LlamaError) => void = () => {};
    let callbackError: unknown;
    const accumulate = tokenAccumulator();
    const req = this.#request<LlamaParallelCompletionResult>(
      { op: 'parallelCompletion', ctx: this.#port.ctx, options: transferable(options), stream: onToken !== undefined },
      (event, value) => {
        if ((event !== 'token' && event !== 'prompt') || callbackError !== undefined) return;
        try {
          if (event === 'prompt') onPrompt?.(requestId, value as PromptInfo);
          else onToken?.(requestId, accumulate(value as LlamaCompletionToken));
        } catch (e) {
          // a throwing callback ends the request; its promise rejects with the error
          callbackError = e;
          stop();
        }
      },
    );
    requestId = req.id;
    const cancelled = new Promise<never>((_, reject) => {
      cancel = reject;
    });
    cancelled.catch(() => {});
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.#request({ op: 'cancel', ctx: this.#port.ctx, target: requestId }).promise.catch(() => {});
      cancel(new LlamaError('ERR_CANCELLED', 'Request cancelled'));
    };
    const interrupt = () => {
      if (stopped) return;
      this.#request({ op: 'cancel', ctx: this.#port.ctx, target: requestId }).promise.catch(() => {});
    };
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    const promise = Promise.race([req.promise, cancelled])
      .then((r) => {
        if (callbackError !== undefined) throw callbackError;
        return r;
      })
      .finally(() => signal?.removeEventListener('abort', stop));
    promise.catch(() => {});
    return { requestId, promise, stop, interrupt };
  }

  /** Queues an embedding (computed on the context's embedding sequence, in order). */
  async embedding(
    text: string,
    params: { embd_normalize?: number } = {},
  ): Promise<{ requestId: number; promise: Promise<EmbeddingResult> }> {
    this.#port.check();
    if (!this.#enabled) throw notEnabled();
    const r = this.#request<EmbeddingResult>({ op: 'embedding', ctx: this.#port.ctx, text, params: params ?? {} });
    r.promise.catch(() => {});
    return { requestId: r.id, promise: r.promise };
  }

  /** Queues a rerank (scored on the context's rank sequence, in order with embeddings); results best first. */
  async rerank(
    query: string,
    documents: string[],
    params: RerankParams = {},
  ): Promise<{ requestId: number; promise: Promise<RerankedDocument[]> }> {
    this.#port.check();
    if (!this.#enabled) throw notEnabled();
    const r = this.#request<RerankResult[]>({
      op: 'rerank',
      ctx: this.#port.ctx,
      query,
      documents,
      params: params ?? {},
    });
    const promise = r.promise.then((x) => rankedDocuments(x, documents));
    promise.catch(() => {});
    return { requestId: r.id, promise };
  }

  /**
   * A slot's cache (llama-server's /slots actions, a llama-ts extension): `save` writes its
   * tokens and K/V to `path` (the session format), `restore` loads them into the slot,
   * `erase` empties it. The slot must be idle (else ERR_BUSY).
   */
  async slotAction(action: 'save' | 'restore' | 'erase', slot: number, path?: string): Promise<SlotActionResult> {
    this.#port.check();
    if (!this.#enabled) throw notEnabled();
    return this.#request<SlotActionResult>({
      op: 'slotAction',
      ctx: this.#port.ctx,
      action,
      slot,
      ...(path !== undefined ? { path } : {}),
    }).promise;
  }

  /** The last status the engine reported (slots, queue, each request's progress). */
  getStatus(): ParallelStatus {
    if (!this.#enabled) throw notEnabled();
    return (
      this.#status ?? {
        n_parallel: 0,
        active_slots: 0,
        queued_requests: 0,
        requests: [],
        slots: [],
        n_decode_total: 0,
        n_tokens_total: 0,
        n_draft_total: 0,
        n_draft_accepted_total: 0,
      }
    );
  }

  /** The status as the engine reports it now (asks the worker). */
  async fetchStatus(): Promise<ParallelStatus> {
    if (!this.#enabled) throw notEnabled();
    const s = await this.#request<ParallelStatus>({ op: 'parallelStatus', ctx: this.#port.ctx }).promise;
    this.#status = s;
    return s;
  }

  /** Calls `callback` whenever the status changes. */
  subscribeToStatus(callback: (status: ParallelStatus) => void): { remove: () => void } {
    if (!this.#enabled) throw notEnabled();
    this.#subscribers.add(callback);
    return { remove: () => this.#subscribers.delete(callback) };
  }
}
