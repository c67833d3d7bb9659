// Worker of the generator's pool: takes jobs from a shared counter, fills chunk ranges of
// the current tensor into shared memory, counts them done, and wakes the main thread.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { CHUNK, type FillJob, fillChunks } from './fill.js';
import { CTRL, type PoolTask } from './pool.js';

const errors = (workerData as { errors: MessagePort }).errors;
const scratch = new Float32Array(CHUNK);

parentPort?.on('message', (task: PoolTask) => {
  const ctrl = new Int32Array(task.ctrl);
  const out = new Uint8Array(task.out);
  const job: FillJob = task.job;
  try {
    for (;;) {
      const j = Atomics.add(ctrl, CTRL.next, 1);
      if (j >= task.nJobs) break;
      const c0 = j * task.chunksPerJob;
      fillChunks(job, out, c0, Math.min(c0 + task.chunksPerJob, task.nChunks), scratch);
      Atomics.add(ctrl, CTRL.done, 1);
      Atomics.notify(ctrl, CTRL.done);
    }
  } catch (e) {
    errors.postMessage(e instanceof Error ? e.message : String(e));
    Atomics.store(ctrl, CTRL.failed, 1);
    Atomics.notify(ctrl, CTRL.done);
  }
});
