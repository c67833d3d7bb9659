// The worker pool (main-thread side): persistent workers over one control block, all
// instantiating the same compiled kernel module on every arena. `run` posts a job and
// awaits it with Atomics.waitAsync, so the main thread never blocks or computes. Workers
// are unref'd between jobs so an idle pool never keeps the process alive.

import { type PlatformPort, type PlatformWorker, platform } from '../../platform/index.js';

export { canShareMemory } from '../../platform/index.js';

import type { Arena } from './arena.js';
import { C, CONTROL_WORDS, K_ARENA, STEP_CAP, STEP_WORDS, type WorkerInit } from './protocol.js';
import { jobRunner } from './runner.js';
import { type WasmModule, waitAsync } from './wasm-api.js';

/** What the device needs of a pool: workers (Pool) or its own thread (InlinePool). */
export interface KernelPool {
  readonly size: number;
  resize(threads: number): void;
  addArena(a: Arena): void;
  run(steps: Int32Array, nsteps: number, nth: number, counters?: readonly [Arena, number][]): Promise<void>;
  close(): Promise<void>;
}

/**
 * The pool's fallback where workers cannot share the arenas: one runner in the calling
 * thread (the engine worker), so one thread. Each job first yields a task, so the thread's
 * messages (a stop) are read between graphs.
 */
export class InlinePool implements KernelPool {
  private readonly control = new Int32Array(CONTROL_WORDS);
  private readonly runner;
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(module: WasmModule) {
    this.runner = jobRunner(this.control, module, 0, () => {});
  }

  get size(): number {
    return 1;
  }

  resize(): void {}

  addArena(a: Arena): void {
    this.runner.addArena(a.index, a.memory);
  }

  run(steps: Int32Array, nsteps: number, _nth: number, counters: readonly [Arena, number][] = []): Promise<void> {
    const job = this.queue.then(async () => {
      if (this.closed) throw new Error('cpu: the worker pool is closed');
      await nextTask();
      const c = this.control;
      for (const [arena, word] of counters) new Int32Array(arena.memory.buffer, word * 4, 1)[0] = 0;
      for (let done = 0; done < nsteps; done += STEP_CAP) {
        const n = Math.min(STEP_CAP, nsteps - done);
        c.set(steps.subarray(done * STEP_WORDS, (done + n) * STEP_WORDS), C.STEPS);
        c[C.NSTEPS] = n;
        c[C.NTH] = 1;
        c[C.ERROR] = 0;
        this.runner.runJob();
        this.runner.jobDone();
        if (c[C.ERROR] !== 0) throw new Error(`cpu kernel failed: ${errorText(c)}`);
      }
    });
    this.queue = job.catch(() => {});
    return job;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
  }
}

function nextTask(): Promise<void> {
  return new Promise((resolve) => platform.nextTask(resolve));
}

function errorText(c: Int32Array): string {
  const len = c[C.ERR_LEN];
  let msg = '';
  for (let i = 0; i < len; i++) msg += String.fromCharCode(c[C.ERR_MSG + i]);
  return msg;
}

export class Pool implements KernelPool {
  readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  private readonly workers: PlatformWorker[] = [];
  private readonly ports: PlatformPort[] = [];
  /** Arenas every worker has instantiated (or will, at the start of the next job). */
  private readonly arenas: Arena[] = [];
  private unregistered = false;
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly module: WasmModule,
    threads: number,
  ) {
    this.resize(threads);
  }

  get size(): number {
    return this.workers.length;
  }

  /** Start workers until there are `threads` (never fewer than before). */
  resize(threads: number): void {
    while (this.workers.length < threads) {
      const [port1, port2] = platform.channel();
      const init: WorkerInit & { port: PlatformPort } = {
        control: this.control.buffer as SharedArrayBuffer,
        module: this.module,
        index: this.workers.length,
        gen: Atomics.load(this.control, C.GEN),
        port: port2,
      };
      const w = platform.startWorker(new URL('./worker.js', import.meta.url), { data: init, transfer: [port2] });
      w.unref();
      port1.unref();
      this.workers.push(w);
      this.ports.push(port1);
      // a new worker also needs every arena created so far
      for (const a of this.arenas) port1.postMessage({ index: a.index, memory: a.memory });
      if (this.arenas.length > 0) this.unregistered = true;
    }
  }

  /** Make an arena known to the workers (they instantiate it before the next job). */
  addArena(a: Arena): void {
    this.arenas.push(a);
    for (const p of this.ports) p.postMessage({ index: a.index, memory: a.memory });
    this.unregistered = true;
  }

  /**
   * Run `nsteps` steps (STEP_WORDS int32 each, from `steps`) on `nth` workers. Jobs are
   * serialized; the promise settles when every worker is done.
   */
  run(steps: Int32Array, nsteps: number, nth: number, counters: readonly [Arena, number][] = []): Promise<void> {
    const job = this.queue.then(() => this.exec(steps, nsteps, nth, counters));
    this.queue = job.catch(() => {});
    return job;
  }

  private async exec(
    steps: Int32Array,
    nsteps: number,
    nth: number,
    counters: readonly [Arena, number][],
  ): Promise<void> {
    if (this.closed) throw new Error('cpu: the worker pool is closed');
    nth = Math.max(1, Math.min(nth, this.workers.length));
    for (const w of this.workers) w.ref();
    try {
      if (this.unregistered) {
        // every worker drains its port and instantiates the kernels on the new arenas
        this.unregistered = false;
        this.control[C.STEPS + 1] = K_ARENA;
        // how many a worker must have (the web's workers wait for them to arrive)
        this.control[C.STEPS + 2] = this.arenas.length;
        await this.go(1, this.workers.length);
      }
      // the job's claim counters start at zero (its previous run left them past the end)
      for (const [arena, word] of counters) new Int32Array(arena.memory.buffer, word * 4, 1)[0] = 0;
      for (let done = 0; done < nsteps; done += STEP_CAP) {
        const n = Math.min(STEP_CAP, nsteps - done);
        this.control.set(steps.subarray(done * STEP_WORDS, (done + n) * STEP_WORDS), C.STEPS);
        await this.go(n, nth);
      }
    } finally {
      for (const w of this.workers) w.unref();
    }
  }

  private async go(nsteps: number, nth: number): Promise<void> {
    const c = this.control;
    Atomics.store(c, C.NSTEPS, nsteps);
    Atomics.store(c, C.NTH, nth);
    Atomics.store(c, C.DONE, 0);
    Atomics.store(c, C.ERROR, 0);
    const gen = Atomics.add(c, C.GEN, 1) + 1;
    Atomics.notify(c, C.GEN);
    for (;;) {
      const f = Atomics.load(c, C.FINISHED);
      if (f === gen) break;
      const r = waitAsync(c, C.FINISHED, f);
      if (r.async) await r.value;
    }
    if (Atomics.load(c, C.ERROR) !== 0) throw new Error(`cpu kernel failed: ${errorText(c)}`);
  }

  /** Stop the workers (pending jobs fail). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    Atomics.store(this.control, C.QUIT, 1);
    Atomics.add(this.control, C.GEN, 1);
    Atomics.notify(this.control, C.GEN);
    await Promise.all(this.workers.map((w) => w.terminate()));
    for (const p of this.ports) p.close();
  }
}
