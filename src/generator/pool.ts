// A pool of worker threads that fill one tensor at a time, synchronously from the caller's
// view (the GGUF writer asks for tensor bytes in a synchronous callback): the main thread
// hands the tensor to every worker, then sleeps in Atomics.wait until all chunk ranges are
// done. Workers pull ranges from a shared counter, so fast and slow ranges balance out.
import { MessageChannel, type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { nodeWorker } from '../platform/node.js';
import { CHUNK, chunkCount, type FillJob, fillChunks, tensorByteSize } from './fill.js';

/** Slots of the shared control array. */
export const CTRL = { next: 0, done: 1, failed: 2 } as const;

export interface PoolTask {
  job: FillJob;
  out: SharedArrayBuffer;
  ctrl: SharedArrayBuffer;
  nChunks: number;
  chunksPerJob: number;
  nJobs: number;
}

/** Tensors smaller than this many elements are filled on the calling thread. */
const INLINE_BELOW = 1 << 20;

export class FillPool {
  private readonly workers: Worker[] = [];
  /** One error port per worker, read synchronously after a failure. */
  private readonly errorPorts: MessagePort[] = [];
  private readonly scratch = new Float32Array(CHUNK);

  /** `threads` workers (0: everything on the calling thread). */
  constructor(threads: number) {
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

  /** The tensor's bytes (in shared memory when workers made them). */
  fill(job: FillJob): Uint8Array {
    const nChunks = chunkCount(job.n);
    const bytes = tensorByteSize(job.type, job.n);
    if (this.workers.length === 0 || job.n < INLINE_BELOW) {
      const out = new Uint8Array(bytes);
      fillChunks(job, out, 0, nChunks, this.scratch);
      return out;
    }
    const chunksPerJob = Math.max(1, Math.min(16, Math.floor(nChunks / (this.workers.length * 4))));
    const nJobs = Math.ceil(nChunks / chunksPerJob);
    const out = new SharedArrayBuffer(bytes);
    const ctrlBuf = new SharedArrayBuffer(3 * 4);
    const ctrl = new Int32Array(ctrlBuf);
    const task: PoolTask = { job, out, ctrl: ctrlBuf, nChunks, chunksPerJob, nJobs };
    for (const w of this.workers) w.postMessage(task);
    for (;;) {
      const done = Atomics.load(ctrl, CTRL.done);
      if (Atomics.load(ctrl, CTRL.failed) !== 0) {
        const msg = this.errorPorts.map((p) => receiveMessageOnPort(p)?.message).find(Boolean);
        throw new Error(`generator worker failed on '${job.name}': ${String(msg ?? 'unknown error')}`);
      }
      if (done >= nJobs) break;
      Atomics.wait(ctrl, CTRL.done, done, 1000);
    }
    return new Uint8Array(out);
  }

  close(): void {
    for (const w of this.workers) void w.terminate();
    this.workers.length = 0;
    for (const p of this.errorPorts) p.close();
    this.errorPorts.length = 0;
  }
}
