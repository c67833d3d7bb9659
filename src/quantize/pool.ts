// Worker threads that convert the rows of one slab at a time: the caller puts the slab's
// source bytes in shared memory and awaits; workers take chunks of rows from a shared
// counter (fast and slow chunks balance out), write the destination bytes in place and
// count the chunks done. Rows are independent, so the bytes do not depend on the number
// of threads.

import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { nodeWorker } from '../platform/node.js';
import type { ConvertTask } from './rows.js';

/** Atomics.waitAsync, which the project's ES2022 typings lack. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(a: Int32Array, i: number, v: number, t?: number): { async: boolean; value: unknown };
  }
).waitAsync;

/** Slots of the shared control array. */
export const CTRL = { next: 0, done: 1, failed: 2 } as const;

export interface SlabTask extends Omit<ConvertTask, 'imatrix'> {
  src: SharedArrayBuffer;
  dst: SharedArrayBuffer;
  /** The tensor's importance matrix (f32, one row per expert), or null. */
  imatrix: SharedArrayBuffer | null;
  ctrl: SharedArrayBuffer;
  nrows: number;
  rowsPerChunk: number;
  nChunks: number;
}

export class QuantizePool {
  private readonly workers: Worker[] = [];
  private readonly errorPorts: MessagePort[] = [];

  /** `threads` workers (default: one per core). */
  constructor(threads = availableParallelism()) {
    for (let i = 0; i < threads; i++) {
      const ch = new MessageChannel();
      const w = nodeWorker(new URL('./worker.js', import.meta.url), {
        workerData: { errors: ch.port2 },
        transferList: [ch.port2],
      });
      w.unref();
      this.workers.push(w);
      this.errorPorts.push(ch.port1);
    }
  }

  get size(): number {
    return this.workers.length;
  }

  /** Converts the slab's rows (task.src → task.dst), resolving when every chunk is done. */
  async run(task: SlabTask): Promise<void> {
    const ctrl = new Int32Array(task.ctrl);
    // a pending Atomics.waitAsync does not keep the process alive: the workers do, while busy
    for (const w of this.workers) {
      w.ref();
      w.postMessage(task);
    }
    try {
      for (;;) {
        if (Atomics.load(ctrl, CTRL.failed) !== 0) {
          const msg = this.errorPorts.map((p) => receiveMessageOnPort(p)?.message).find(Boolean);
          throw new Error(String(msg ?? 'a quantization worker failed'));
        }
        const done = Atomics.load(ctrl, CTRL.done);
        if (done >= task.nChunks) return;
        const r = waitAsync(ctrl, CTRL.done, done, 1000);
        if (r.async) await r.value;
      }
    } finally {
      for (const w of this.workers) w.unref();
    }
  }

  close(): void {
    for (const w of this.workers) void w.terminate();
    this.workers.length = 0;
    for (const p of this.errorPorts) p.close();
    this.errorPorts.length = 0;
  }
}
