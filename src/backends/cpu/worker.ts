// A CPU device worker: waits for jobs on the control block, runs its share of every step
// (a wasm kernel on one of the arenas, or a JavaScript copy between arenas), meets the
// other workers at a barrier after each step, and reports the job done.

import { type PlatformPort, platform } from '../../platform/index.js';
import {
  C,
  F_NO_BARRIER,
  F_SINGLE,
  K_ARENA,
  K_COPY,
  K_TOUCH,
  KERNELS,
  STEP_WORDS,
  type WorkerInit,
} from './protocol.js';
import { Wasm, type WasmMemory } from './wasm-api.js';

type Kernel = (node: number, ith: number, nth: number) => void;

const init = platform.workerSide()?.data as WorkerInit & { port: PlatformPort };
const ctrl = new Int32Array(init.control);
const me = init.index;

interface ArenaInstance {
  memory: WasmMemory;
  kernels: Kernel[];
}
const arenas: ArenaInstance[] = [];

function instantiate(memory: WasmMemory): ArenaInstance {
  const inst = new Wasm.Instance(init.module, { env: { memory } });
  const kernels = KERNELS.map((name) => inst.exports[name] as Kernel);
  return { memory, kernels };
}

const SPIN = 4000;

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

// LLAMA_TS_CPU_PROFILE=N: each worker prints, every N jobs, its time per kernel and waiting at
// barriers (a worker's waits are the others' work: imbalance shows only side by side)
const PROFILE_EVERY = Number(platform.env('LLAMA_TS_CPU_PROFILE')) || 0;
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

// Fresh memory costs a page fault per 4 KiB page on first write (several microseconds each
// on some virtual machines), so the loader has the workers fault in weight buffers while
// it fills them. The loader goes front to back, the workers back to front (chunks dealt
// round-robin), so they meet instead of queueing on the same pages.
const TOUCH_CHUNK = 256 << 10;
const TOUCH_PAGE = 4096;

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
      for (;;) {
        const m = platform.receiveNow(init.port);
        if (!m) break;
        const { index, memory } = m.message as { index: number; memory: WasmMemory };
        try {
          arenas[index] = instantiate(memory);
        } catch (e) {
          fail(e);
        }
      }
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

// The job loop runs in a task of its own, not in the module's evaluation: the platform
// seam's top-level await makes that evaluation asynchronous, and Node 26's V8 aborts the
// process ("Check failed: !is_null()") when a worker is terminated while its module
// evaluation is still pending, blocked in this loop's Atomics.wait.
function serve(): void {
  let last = init.gen;
  for (;;) {
    Atomics.wait(ctrl, C.GEN, last);
    const gen = Atomics.load(ctrl, C.GEN);
    if (gen === last) continue;
    last = gen;
    if (Atomics.load(ctrl, C.QUIT) !== 0) break;
    const nth = ctrl[C.NTH];
    if (me >= nth) continue;
    runJob();
    if (PROFILE_EVERY && ++profiledJobs >= PROFILE_EVERY) printProfile();
    if (Atomics.add(ctrl, C.DONE, 1) === nth - 1) {
      Atomics.store(ctrl, C.FINISHED, gen);
      Atomics.notify(ctrl, C.FINISHED);
    }
  }
  init.port.close();
}
setTimeout(serve, 0);
