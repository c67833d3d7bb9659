// Worker of the quantization pool: takes chunks of the current slab's rows from a shared
// counter, converts them (rows.ts) into shared memory, counts them done and wakes the
// caller.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { CTRL, type SlabTask } from './pool.js';
import { convertRows } from './rows.js';

const errors = (workerData as { errors: MessagePort }).errors;
let scratch = new Float32Array(0);

parentPort?.on('message', (task: SlabTask) => {
  const ctrl = new Int32Array(task.ctrl);
  const src = new Uint8Array(task.src);
  const dst = new Uint8Array(task.dst);
  const conv = { ...task, imatrix: task.imatrix ? new Float32Array(task.imatrix) : null };
  try {
    if (scratch.length < task.rowsPerChunk * task.nPerRow) scratch = new Float32Array(task.rowsPerChunk * task.nPerRow);
    for (;;) {
      const c = Atomics.add(ctrl, CTRL.next, 1);
      if (c >= task.nChunks) break;
      const r0 = c * task.rowsPerChunk;
      convertRows(conv, src, dst, r0, Math.min(task.nrows, r0 + task.rowsPerChunk), scratch);
      Atomics.add(ctrl, CTRL.done, 1);
      Atomics.notify(ctrl, CTRL.done);
    }
  } catch (e) {
    errors.postMessage(e instanceof Error ? e.message : String(e));
    Atomics.store(ctrl, CTRL.failed, 1);
    Atomics.notify(ctrl, CTRL.done);
  }
});
