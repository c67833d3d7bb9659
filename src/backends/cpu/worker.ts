// A CPU device worker: waits for jobs on the control block, runs its share of each
// (runner.ts), and reports the job done. It takes new arenas at a K_ARENA job: from its
// port without returning to the event loop where the platform can (Node), else (the web)
// by returning to its event loop until the pool's count of arenas has arrived.

import { type PlatformPort, platform } from '../../platform/index.js';
import { C, K_ARENA, type WorkerInit } from './protocol.js';
import { jobRunner } from './runner.js';
import type { WasmMemory } from './wasm-api.js';

const init = (await platform.workerSide())?.data as WorkerInit & { port: PlatformPort };
const ctrl = new Int32Array(init.control);
const me = init.index;
const receiveNow = platform.receiveNow;
let received = 0;

const runner = jobRunner(ctrl, init.module, me, () => {
  for (;;) {
    const m = receiveNow?.(init.port);
    if (!m) break;
    take(m.message);
  }
});

function take(message: unknown): void {
  const { index, memory } = message as { index: number; memory: WasmMemory };
  received++;
  runner.addArena(index, memory);
}

/** An arena job waiting for its arenas to arrive (the web). */
let waiting: { want: number; gen: number; nth: number } | undefined;
if (!receiveNow) {
  init.port.onMessage((m) => {
    take(m);
    if (waiting && received >= waiting.want) {
      finish(waiting.gen, waiting.nth);
      waiting = undefined;
      serve();
    }
  });
}

function finish(gen: number, nth: number): void {
  if (Atomics.add(ctrl, C.DONE, 1) === nth - 1) {
    Atomics.store(ctrl, C.FINISHED, gen);
    Atomics.notify(ctrl, C.FINISHED);
  }
}

// The job loop runs in a task of its own, not in the module's evaluation: the platform
// seam's top-level await makes that evaluation asynchronous, and Node 26's V8 aborts the
// process ("Check failed: !is_null()") when a worker is terminated while its module
// evaluation is still pending, blocked in this loop's Atomics.wait.
let last = init.gen;
function serve(): void {
  for (;;) {
    Atomics.wait(ctrl, C.GEN, last);
    const gen = Atomics.load(ctrl, C.GEN);
    if (gen === last) continue;
    last = gen;
    if (Atomics.load(ctrl, C.QUIT) !== 0) break;
    const nth = ctrl[C.NTH];
    if (me >= nth) continue;
    // an arena job (always alone) on the web: its arenas arrive as events
    if (!receiveNow && ctrl[C.NSTEPS] === 1 && ctrl[C.STEPS + 1] === K_ARENA && received < ctrl[C.STEPS + 2]) {
      waiting = { want: ctrl[C.STEPS + 2], gen, nth };
      return;
    }
    runner.runJob();
    runner.jobDone();
    finish(gen, nth);
  }
  init.port.close();
}
setTimeout(serve, 0);
