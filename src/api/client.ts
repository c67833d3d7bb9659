// The main thread's side of the engine worker: one worker per process, started on the
// first request and terminated when the last context is released. The worker is ref'd
// only while a request is in flight, so an idle context never keeps the process alive.
import type { BatcherStatus } from '../generation/index.js';
import { getLogCallback } from '../log.js';
import { type PlatformTimer, type PlatformWorker, platform } from '../platform/index.js';
import { deserializeError, LlamaError } from './errors.js';
import type { Reply, Request } from './protocol.js';

/** A request without its id (the client assigns it). */
export type RequestBody = Request extends infer R ? (R extends Request ? Omit<R, 'id'> : never) : never;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  onEvent?: (event: string, value: unknown) => void;
}

/** How long an idle worker (no context left) waits for new work before it is stopped. */
const IDLE_MS = 3000;

export class EngineClient {
  private worker: PlatformWorker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Contexts loaded or loading. */
  private live = 0;
  private idleTimer: PlatformTimer | undefined;
  /** Status listeners by context id (parallel mode). */
  private readonly statusListeners = new Map<number, (s: BatcherStatus) => void>();

  /** Receives a context's parallel status as the worker sends it (undefined: stop). */
  onStatus(ctx: number, fn: ((s: BatcherStatus) => void) | undefined): void {
    if (fn) this.statusListeners.set(ctx, fn);
    else this.statusListeners.delete(ctx);
  }

  private start(): PlatformWorker {
    const url = new URL('./worker.js', import.meta.url);
    const w = platform.startWorker(url);
    w.onMessage((r) => this.onReply(r as Reply));
    w.onError((e) => {
      if (this.worker === w) this.worker = undefined;
      this.failAll(new LlamaError('ERR_INTERNAL', `the engine worker failed: ${e.message}`, { cause: e }));
    });
    w.onExit((code) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      this.failAll(new LlamaError('ERR_INTERNAL', `the engine worker exited (code ${code})`));
    });
    w.unref();
    return w;
  }

  private failAll(e: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(e);
  }

  private onReply(r: Reply): void {
    if ('log' in r) {
      const [level, message, source] = r.log;
      getLogCallback()(level, message, source);
      return;
    }
    if ('status' in r) {
      this.statusListeners.get(r.status)?.(r.value);
      return;
    }
    if ('decode' in r) {
      this.decodeAudio(r);
      return;
    }
    const p = this.pending.get(r.id);
    if (!p) return;
    if ('event' in r) {
      p.onEvent?.(r.event, r.value);
      return;
    }
    this.pending.delete(r.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (r.ok) p.resolve(r.value);
    else p.reject(deserializeError(r.error));
  }

  /** Decodes audio for the worker with this thread's decoder (a page's OfflineAudioContext) and answers it. */
  private decodeAudio(r: Extract<Reply, { decode: number }>): void {
    const w = this.worker;
    const decode = platform.decodeAudioNative;
    const answer = (m: Extract<Request, { op: 'decoded' }>) =>
      // (each channel's buffer moved once, should a decoder share one between channels)
      w?.postMessage(m, m.value ? [...new Set(m.value.channels.map((c) => c.buffer))] : undefined);
    if (!decode) {
      answer({ op: 'decoded', id: r.decode, error: 'this thread has no audio decoder (OfflineAudioContext)' });
      return;
    }
    decode(r.bytes, r.mime, r.sampleRate).then(
      (value) => answer({ op: 'decoded', id: r.decode, value }),
      (e) => answer({ op: 'decoded', id: r.decode, error: (e as Error)?.message ?? String(e) }),
    );
  }

  /** Posts a request; `promise` settles with the worker's reply. */
  request<T>(
    body: RequestBody,
    onEvent?: (event: string, value: unknown) => void,
    /** Runs with the request's id before the worker can see the request (e.g. to raise its stop flag). */
    beforePost?: (id: number) => void,
  ): { id: number; promise: Promise<T> } {
    const id = this.nextId++;
    beforePost?.(id);
    this.worker ??= this.start();
    const promise = new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, ...(onEvent ? { onEvent } : {}) });
    });
    this.worker.ref();
    try {
      this.worker.postMessage({ ...body, id });
    } catch (e) {
      this.pending.delete(id);
      if (this.pending.size === 0) this.worker.unref();
      return {
        id,
        promise: Promise.reject(new LlamaError('ERR_OPTION', `cannot send the request: ${(e as Error).message}`)),
      };
    }
    return { id, promise };
  }

  opened(): void {
    this.live++;
  }

  /** A context is gone; the last one stops the worker (models are freed with it). */
  async closed(): Promise<void> {
    this.live = Math.max(0, this.live - 1);
    await this.stopIfIdle();
  }

  /**
   * Stops the worker when no context is alive and nothing is in flight: after `IDLE_MS`
   * (a new loadModel soon after reuses it), or at once with `now`. The worker is unref'd
   * meanwhile, so waiting never delays the process's exit.
   */
  async stopIfIdle(now = false): Promise<void> {
    if (this.live > 0 || this.pending.size > 0 || !this.worker) return;
    this.idleTimer?.cancel();
    this.idleTimer = undefined;
    if (!now) {
      this.idleTimer = platform.timer(() => {
        this.idleTimer = undefined;
        void this.stopIfIdle(true);
      }, IDLE_MS);
      return;
    }
    const w = this.worker;
    this.worker = undefined;
    await w.terminate();
  }

  /** Whether the worker is running (for tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }
}

let client: EngineClient | undefined;

/** The process's engine client. */
export function engineClient(): EngineClient {
  client ??= new EngineClient();
  return client;
}
