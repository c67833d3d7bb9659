// Starting worker threads the same way everywhere (kernel pool, engine, generator).
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A Worker that inherits the process's node flags where a worker may have them: flags
 * for the main script only (`--input-type`) are dropped, and when node refuses the rest
 * in a worker (`--trace-gc`, …) it starts without any.
 */
export function startWorker(url: URL, options: Omit<WorkerOptions, 'execArgv'> = {}): Worker {
  try {
    return new Worker(url, { ...options, execArgv: process.execArgv.filter((a) => !a.startsWith('--input-type')) });
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
    return new Worker(url, { ...options, execArgv: [] });
  }
}
