// A CPU job runner: runs its share of every step of a job (a wasm kernel on one of the
// arenas, or a JavaScript copy between arenas) and meets the others at a barrier after
// each step. Each pool worker runs one (worker.ts); where no memory can be shared with
// workers (a page that is not cross-origin isolated) the device runs one in its own
// thread (InlinePool, pool.ts).

import { platform } from '../../platform/index.js';
import { C, F_NO_BARRIER, F_SINGLE, K_ARENA, K_COPY, K_TOUCH, KERNELS, STEP_WORDS } from './protocol.js';
import { Wasm, type WasmMemory, type WasmModule } from './wasm-api.js';

type Kernel = (node: number, ith: number, nth: number) => void;

interface ArenaInstance {
  memory: WasmMemory;
  kernels: Kernel[];
}

const SPIN = 4000;

// LLAMA_TS_CPU_PROFILE=N: each worker prints, every N jobs, its time per kernel and waiting at
// barriers (a worker's waits are the others' work: imbalance shows only side by side)
const PROFILE_EVERY = Number(platform.env('LLAMA_TS_CPU_PROFILE')) || 0;

// Fresh memory costs a page fault per 4 KiB page on first write (several microseconds each
// on some virtual machines), so the loader has the workers fault in weight buffers while
// it fills them. The loader goes front to back, the workers back to front (chunks dealt
// round-robin), so they meet instead of queueing on the same pages.
const TOUCH_CHUNK = 256 << 10;
const TOUCH_PAGE = 4096;

export interface JobRunner {
  /** Instantiates the kernels on an arena (index as the pool numbers them). */
  addArena(index: number, memory: WasmMemory): void;
  /** Runs this runner's share of the job in the control block. */
  runJob(): void;
  /** After a job: prints the profile when one is due (LLAMA_TS_CPU_PROFILE). */
  jobDone(): void;
  /** Records a failure in the control block (the first one wins). */
  fail(e: unknown): void;
}

/**
 * A runner for thread `me` over the control block `ctrl`; `onArenaStep` is called on a
 * K_ARENA step (a worker takes the arenas posted to it there).
 */
export function jobRunner(ctrl: Int32Array, module: WasmModule, me: number, onArenaStep: () => void): JobRunner {
  const arenas: ArenaInstance[] = [];

  function instantiate(memory: WasmMemory): ArenaInstance {
    const inst = new Wasm.Instance(module, { env: { memory } });
    const kernels = KERNELS.map((name) => inst.exports[name] as Kernel);
    return { memory, kernels };
  }

  function barrier(nth: number): void {
    if (nth === 1) return;
    const g = Atomics.load(ctrl, C.BAR_GEN);
    if (Atomics.add(ctrl, C.BAR_COUNT, 1) === nth - 1) {
      Atomics.store(ctrl, C.BAR_COUNT, 0);
      Atomics.add(ctrl, C.BAR_GEN, 1);
      Atomics.notify(ctrl, C.BAR_GEN);
      return;
    }
    for (let i = 0; i < SPIN; i++) if (Atomics.load(ctrl, C.BAR_GEN) !== g) return;
    while (Atomics.load(ctrl, C.BAR_GEN) === g) Atomics.wait(ctrl, C.BAR_GEN, g);
  }

  function fail(e: unknown): void {
    if (Atomics.compareExchange(ctrl, C.ERROR, 0, 1) !== 0) return;
    const msg = `worker ${me}: ${(e as Error)?.stack ?? String(e)}`.slice(0, C.ERR_CAP);
    for (let i = 0; i < msg.length; i++) ctrl[C.ERR_MSG + i] = msg.charCodeAt(i);
    Atomics.store(ctrl, C.ERR_LEN, msg.length);
  }

  function copyShare(s: number, nth: number): void {
    const dst = new Uint8Array(arenas[ctrl[s]].memory.buffer);
    const src = new Uint8Array(arenas[ctrl[s + 4]].memory.buffer);
    const to = ctrl[s + 2] >>> 0;
    const from = ctrl[s + 5] >>> 0;
    const len = ctrl[s + 6] >>> 0;
    const a = Math.floor((len * me) / nth);
    const b = Math.floor((len * (me + 1)) / nth);
    if (b > a) dst.set(src.subarray(from + a, from + b), to + a);
  }

  const profile = new Map<string, { ms: number; n: number }>();
  let profiledJobs = 0;

  function profiled(name: string, ms: number): void {
    const e = profile.get(name);
    if (e) {
      e.ms += ms;
      e.n++;
    } else profile.set(name, { ms, n: 1 });
  }

  function printProfile(): void {
    let total = 0;
    for (const e of profile.values()) total += e.ms;
    const rows = [...profile].sort((a, b) => b[1].ms - a[1].ms);
    const lines = rows.map(
      ([k, e]) =>
        `  ${k.padEnd(16)} ${e.ms.toFixed(1).padStart(9)} ms ${((100 * e.ms) / total).toFixed(1).padStart(5)}%  ${e.n} calls, ${((1000 * e.ms) / e.n).toFixed(1)} us each`,
    );
    // synchronously: the process may end right after the job
    platform.writeErrorSync(
      `llama-ts cpu profile (worker ${me}, ${profiledJobs} jobs, ${total.toFixed(1)} ms):\n${lines.join('\n')}\n`,
    );
    profile.clear();
    profiledJobs = 0;
  }

  function touchShare(s: number, nth: number): void {
    const words = new Int32Array(arenas[ctrl[s]].memory.buffer);
    const start = ctrl[s + 2] >>> 0;
    const end = start + (ctrl[s + 4] >>> 0);
    for (let i = me; ; i += nth) {
      const hi = end - i * TOUCH_CHUNK;
      if (hi <= start) break;
      const lo = Math.max(start, hi - TOUCH_CHUNK);
      // adding 0 atomically writes the page without losing a byte the loader stores there meanwhile
      for (let p = hi - 1; p >= lo; p -= TOUCH_PAGE) Atomics.add(words, p >>> 2, 0);
      Atomics.add(words, lo >>> 2, 0);
    }
  }

  function runJob(): void {
    const nth = ctrl[C.NTH];
    const nsteps = ctrl[C.NSTEPS];
    for (let i = 0; i < nsteps; i++) {
      const s = C.STEPS + i * STEP_WORDS;
      const kernel = ctrl[s + 1];
      if (kernel === K_ARENA) {
        // every worker takes part; each only touches its own instances: no barrier needed
        onArenaStep();
        continue;
      }
      const flags = ctrl[s + 3];
      const single = (flags & F_SINGLE) !== 0;
      const mine = !single || me === flags >>> 8;
      const t0 = PROFILE_EVERY ? performance.now() : 0;
      if (Atomics.load(ctrl, C.ERROR) === 0 && mine) {
        try {
          if (kernel === K_COPY) copyShare(s, nth);
          else if (kernel === K_TOUCH) touchShare(s, nth);
          else if (single) arenas[ctrl[s]].kernels[kernel](ctrl[s + 2], 0, 1);
          else arenas[ctrl[s]].kernels[kernel](ctrl[s + 2], me, nth);
        } catch (e) {
          fail(e);
        }
      }
      if (PROFILE_EVERY === 0) {
        if ((flags & F_NO_BARRIER) === 0) barrier(nth);
        continue;
      }
      const t1 = performance.now();
      if (mine)
        profiled(
          kernel === K_COPY
            ? 'copy'
            : kernel === K_TOUCH
              ? 'prefault'
              : `${KERNELS[kernel].slice(2)}${single ? ' (1 thread)' : ''}`,
          t1 - t0,
        );
      if ((flags & F_NO_BARRIER) === 0) {
        barrier(nth);
        profiled('barrier wait', performance.now() - t1);
      }
    }
  }

  return {
    addArena(index, memory) {
      try {
        arenas[index] = instantiate(memory);
      } catch (e) {
        fail(e);
      }
    },
    runJob,
    jobDone() {
      if (PROFILE_EVERY && ++profiledJobs >= PROFILE_EVERY) printProfile();
    },
    fail,
  };
}
