// UntrustedWorker: one worker thread for work whose cost the input decides (chat
// templates from model files; grammars and JSON schemas from requests), so that it runs
// off the thread that answers HTTP or generates, bounded, and can be stopped.
//
// Jobs run one at a time, in order, at most `maxQueue` waiting. Each has a time limit:
// a template render stops itself at its limit (and when its job is aborted) through its
// budget; past the limit plus a grace period, or a grace period after an abort, the
// worker is terminated and the next job gets a fresh one. The worker also has a heap
// limit (running out ends the job with an error naming it). Idle, the worker does not keep
// the process alive, and it is stopped after `idleMs`.
//
// A V8 "invalid size" or out-of-memory abort for one huge allocation takes the whole
// process down, worker threads included (measured on Node 20: a worker growing an array
// past V8's maximum, or flattening a string near the heap limit, aborted the process
// despite resourceLimits), so the worker is no substitute for bounds inside the work:
// templates run on a bounded interpreter (template.ts) and grammars have size limits
// (compile.ts). The worker adds what bounds cannot: another thread, and a kill switch.
import { ChatMessageError } from '../chat/messages.js';
import { type ChatTemplate, ChatTemplateError, type RenderOptions } from '../chat/template.js';
import type { ToolGrammarRequest } from '../chat/tool-grammar.js';
import type { ChatMessage } from '../chat/types.js';
import { getLogCallback } from '../log.js';
import { type PlatformTimer, type PlatformWorker, platform, sharedBuffer } from '../platform/index.js';
import type { CompiledGrammar, GrammarLimits, GrammarSource } from '../sampling/grammar/compile.js';
import { SchemaError } from '../sampling/grammar/json-schema.js';
import { GrammarError } from '../sampling/grammar/rules.js';
import type { CompiledToolGrammar, ErrorData, Job, RenderOptionsData, Reply } from './protocol.js';

export interface UntrustedWorkerOptions {
  /** Heap limit of the worker, in MiB. Default 1024. */
  memoryMb?: number;
  /** Jobs waiting at most (beyond: UntrustedBusyError). Default 256. */
  maxQueue?: number;
  /** An idle worker is stopped after this many ms. Default 30,000. */
  idleMs?: number;
  /** Time a job may run past its limit, or after an abort, before the worker is terminated (ms). Default 1000. */
  graceMs?: number;
}

export interface JobOptions {
  /** Aborting rejects the job with an AbortError at once (a running job is stopped). */
  signal?: AbortSignal;
}

export interface RenderJobOptions extends JobOptions {}

export interface CompileJobOptions extends JobOptions {
  limits?: GrammarLimits;
  /** Wall-clock time for the compilation, in ms. Default 10,000. */
  timeMs?: number;
}

/** Default time for a template render (TemplateLimits.timeMs's default). */
const RENDER_TIME_MS = 5000;
const COMPILE_TIME_MS = 10_000;
/** How long a fresh worker may take to load before its job fails. */
const STARTUP_MS = 30_000;

/** Too many jobs waiting. */
export class UntrustedBusyError extends Error {
  override name = 'UntrustedBusyError';
}

interface Pending {
  id: number;
  job: Job;
  timeMs: number;
  /** The error for a job stopped by its time limit or by the worker's death. */
  failure: (why: string) => Error;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  settled: boolean;
}

function abortError(signal: AbortSignal | undefined): unknown {
  const r = signal?.reason;
  return r instanceof Error ? r : new DOMException('the operation was aborted', 'AbortError');
}

function rebuild(e: ErrorData): Error {
  switch (e.name) {
    case 'ChatTemplateError':
      return new ChatTemplateError(e.message, (e.kind ?? 'render') as ChatTemplateError['kind']);
    case 'SchemaError':
      return new SchemaError(e.pointer ?? '#', e.reason ?? e.message);
    case 'GrammarError':
      return new GrammarError(e.reason ?? e.message, e.line ?? 0, e.column ?? 0);
    case 'ChatMessageError':
      return new ChatMessageError(e.message);
    default: {
      const err = new Error(e.message);
      err.name = e.name;
      return err;
    }
  }
}

export class UntrustedWorker {
  private worker: PlatformWorker | undefined;
  // not shared on a page that is not cross-origin isolated: a render is then only ever killed
  private readonly cancel = sharedBuffer(4);
  private readonly cancelFlag = new Int32Array(this.cancel);
  private readonly queue: Pending[] = [];
  private running: Pending | undefined;
  private nextId = 1;
  private hardTimer: ReturnType<typeof setTimeout> | undefined;
  private idleTimer: PlatformTimer | undefined;
  private closed = false;
  private readonly memoryMb: number;
  private readonly maxQueue: number;
  private readonly idleMs: number;
  private readonly graceMs: number;
  /** Workers started so far (a fresh one after each termination). */
  starts = 0;

  constructor(opts: UntrustedWorkerOptions = {}) {
    this.memoryMb = opts.memoryMb ?? 1024;
    this.maxQueue = opts.maxQueue ?? 256;
    this.idleMs = opts.idleMs ?? 30_000;
    this.graceMs = opts.graceMs ?? 1000;
  }

  /**
   * Renders `template`'s Jinja text on the worker (ChatTemplate.renderJinja there, within
   * `opts.limits`). Rejects with ChatTemplateError (its `kind` says why; 'limit' for a
   * limit or the time limit), ChatMessageError for messages that cannot be sent, an
   * AbortError, or UntrustedBusyError.
   */
  renderChatTemplate(
    template: ChatTemplate,
    messages: readonly ChatMessage[],
    opts: RenderOptions = {},
    job: RenderJobOptions = {},
  ): Promise<string> {
    const { shouldStop: _local, ...limits } = opts.limits ?? {};
    const data: RenderOptionsData = { ...opts, limits };
    const timeMs = limits.timeMs ?? RENDER_TIME_MS;
    const label = template.label;
    if (template.source === undefined) {
      return Promise.reject(new ChatTemplateError(`${label}: no Jinja template`, 'missing'));
    }
    return this.submit<string>(
      {
        op: 'render',
        template: {
          source: template.source,
          bosToken: template.bosToken,
          eosToken: template.eosToken,
          addBos: template.addBos,
          addEos: template.addEos,
          label,
        },
        messages,
        opts: data,
      },
      timeMs,
      (why) => new ChatTemplateError(`${label} ${why}`, 'limit'),
      job.signal,
    );
  }

  /**
   * Compiles GBNF text or a JSON Schema on the worker (compileGrammar there). Rejects with
   * GrammarError or SchemaError (limits included), an AbortError, or UntrustedBusyError.
   */
  compileGrammar(source: GrammarSource, opts: CompileJobOptions = {}): Promise<CompiledGrammar> {
    const what = 'grammar' in source ? 'the grammar' : 'the JSON schema';
    return this.submit<CompiledGrammar>(
      { op: 'compile', source, limits: opts.limits ?? {} },
      opts.timeMs ?? COMPILE_TIME_MS,
      (why) => new GrammarError(`compiling ${what} ${why}`),
      opts.signal,
    );
  }

  /**
   * Builds and compiles the grammar of tool calls (src/chat/tool-grammar.ts) on the
   * worker: the tools' schemas are untrusted. Rejects as compileGrammar does.
   */
  compileToolGrammar(request: ToolGrammarRequest, opts: CompileJobOptions = {}): Promise<CompiledToolGrammar> {
    return this.submit<CompiledToolGrammar>(
      { op: 'toolGrammar', request, limits: opts.limits ?? {} },
      opts.timeMs ?? COMPILE_TIME_MS,
      (why) => new GrammarError(`compiling the tool-call grammar ${why}`),
      opts.signal,
    );
  }

  /** Jobs waiting or running. */
  get pending(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  /** Rejects every job and stops the worker. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new Error('the untrusted-work worker was closed');
    for (const p of this.queue.splice(0)) this.settle(p, err, false);
    if (this.running) this.settle(this.running, err, false);
    this.running = undefined;
    this.idleTimer?.cancel();
    clearTimeout(this.hardTimer);
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }

  private submit<T>(job: Job, timeMs: number, failure: (why: string) => Error, signal?: AbortSignal): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the untrusted-work worker was closed'));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.queue.length >= this.maxQueue) {
      return Promise.reject(
        new UntrustedBusyError(
          `${this.queue.length} jobs are waiting for the untrusted-work worker (the limit); retry later`,
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const p: Pending = {
        id: this.nextId++,
        job,
        timeMs,
        failure,
        resolve: resolve as (v: unknown) => void,
        reject,
        signal,
        onAbort: undefined,
        settled: false,
      };
      if (signal) {
        p.onAbort = () => this.abort(p);
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.queue.push(p);
      this.pump();
    });
  }

  private settle(p: Pending, result: unknown, ok: boolean): void {
    if (p.settled) return;
    p.settled = true;
    if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
    if (ok) p.resolve(result);
    else p.reject(result);
  }

  private abort(p: Pending): void {
    this.settle(p, abortError(p.signal), false);
    const i = this.queue.indexOf(p);
    if (i >= 0) {
      this.queue.splice(i, 1);
      return;
    }
    if (this.running === p) {
      // ask the render to stop; if it does not within the grace period, kill the worker
      Atomics.store(this.cancelFlag, 0, p.id);
      clearTimeout(this.hardTimer);
      this.hardTimer = setTimeout(() => this.kill(p, 'was stopped'), this.graceMs);
    }
  }

  private start(): PlatformWorker {
    const w = platform.startWorker(new URL('./worker.js', import.meta.url), {
      data: { cancel: this.cancel },
      heapMb: { old: this.memoryMb, young: 64, stack: 8 },
    });
    this.starts++;
    w.onMessage((r) => this.onReply(w, r as Reply));
    w.onError((e) => this.onDeath(w, e));
    w.onExit((code) => this.onDeath(w, new Error(`exited with code ${code}`)));
    return w;
  }

  private onReply(w: PlatformWorker, r: Reply): void {
    if (w !== this.worker) return;
    if ('log' in r) {
      getLogCallback()(...(r.log as [Parameters<ReturnType<typeof getLogCallback>>[0], string, string]));
      return;
    }
    const p = this.running;
    if (!p || p.id !== r.id) return;
    if ('started' in r) {
      // the time limit runs from here (a fresh worker takes a while to load)
      if (p.settled) return; // aborted meanwhile: its grace timer is armed
      clearTimeout(this.hardTimer);
      this.hardTimer = setTimeout(
        () => this.kill(p, `took longer than ${p.timeMs} ms (timeMs)`),
        p.timeMs + this.graceMs,
      );
      return;
    }
    clearTimeout(this.hardTimer);
    this.running = undefined;
    if (r.ok) this.settle(p, r.value, true);
    else this.settle(p, rebuild(r.error), false);
    this.pump();
  }

  private onDeath(w: PlatformWorker, e: Error): void {
    if (w !== this.worker) return;
    this.worker = undefined;
    clearTimeout(this.hardTimer);
    const p = this.running;
    this.running = undefined;
    if (p) {
      const oom = (e as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.settle(
        p,
        p.failure(oom ? `ran out of memory (the worker's limit is ${this.memoryMb} MiB)` : `failed: ${e.message}`),
        false,
      );
    }
    this.pump();
  }

  /** Terminates the worker running `p` (past its time, or aborted and not stopping). */
  private kill(p: Pending, why: string): void {
    if (this.running !== p) return;
    const w = this.worker;
    this.worker = undefined;
    this.running = undefined;
    this.settle(p, p.failure(why), false);
    void w?.terminate();
    this.pump();
  }

  private pump(): void {
    if (this.running || this.closed) return;
    const p = this.queue.shift();
    if (!p) {
      this.worker?.unref();
      this.idleTimer?.cancel();
      if (this.worker) {
        this.idleTimer = platform.timer(() => {
          const w = this.worker;
          if (!w || this.running || this.queue.length > 0) return;
          this.worker = undefined;
          void w.terminate();
        }, this.idleMs);
      }
      return;
    }
    this.idleTimer?.cancel();
    this.worker ??= this.start();
    const w = this.worker;
    w.ref();
    this.running = p;
    try {
      w.postMessage({ id: p.id, ...p.job });
    } catch (e) {
      // messages or a schema that cannot be cloned (functions, cycles…)
      this.running = undefined;
      const why = `cannot be sent to the untrusted-work worker: ${(e as Error).message}`;
      this.settle(
        p,
        p.job.op === 'render' ? new ChatMessageError(`the messages ${why}`) : new GrammarError(`the input ${why}`),
        false,
      );
      this.pump();
      return;
    }
    // until the worker says the job began, only a worker that never loads is timed out
    this.hardTimer = setTimeout(() => this.kill(p, 'never started (the worker did not load)'), STARTUP_MS);
  }
}
