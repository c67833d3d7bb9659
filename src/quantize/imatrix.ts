// The importance matrix llama-imatrix computes: the text is tokenized (BOS added) and cut
// into chunks of `chunkSize` tokens, each evaluated from an empty cache with its first
// token replaced by BOS; for every matrix product by a block weight (and output.weight
// with processOutput) whose input has at least 16 rows, the squares of the input's
// values are summed per column (in float32, row by row, as llama.cpp does) and the rows
// counted. The file then stores the sums and counts (imatrix-file.ts); llama-quantize
// divides one by the other.

import type { Context } from '../model/index.js';
import type { ImatrixEntry, ImatrixFile } from './imatrix-file.js';

export class ImatrixComputeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImatrixComputeError';
  }
}

export interface ImatrixOptions {
  /** Tokens per chunk (llama-imatrix's -c; default 512). */
  chunkSize?: number;
  /** Chunks to process (default: every whole chunk of the text). */
  chunks?: number;
  /** Also collect output.weight's input (--process-output). */
  processOutput?: boolean;
  /** The dataset name recorded in the file (the text file's path). */
  dataset?: string;
  onChunk?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** Accumulates llama-imatrix's per-column sums of squared matrix-product inputs. */
export class ImatrixCollector {
  readonly entries = new Map<string, ImatrixEntry & { sums: Float32Array }>();

  constructor(private readonly processOutput = false) {}

  /** The Context's onMatMulInput hook. */
  readonly observe = (weight: string, x: Float32Array, ne: readonly number[]): void => {
    const rows = x.length / ne[0]!;
    // llama-imatrix ignores small batches and everything but the block weights
    if (rows < 16) return;
    if (!(weight.startsWith('blk.') || (this.processOutput && weight === 'output.weight'))) return;
    const n = ne[0]!;
    let e = this.entries.get(weight);
    if (!e) {
      e = { sums: new Float32Array(n), counts: [0] };
      this.entries.set(weight, e);
    } else if (e.sums.length !== n) {
      throw new ImatrixComputeError(`inconsistent size for ${weight} (${e.sums.length} vs ${n})`);
    }
    const acc = e.sums;
    for (let r = 0; r < rows; r++) {
      const o = r * n;
      for (let j = 0; j < n; j++) {
        const v = x[o + j]!;
        acc[j] = acc[j]! + Math.fround(v * v);
      }
    }
    for (let j = 0; j < n; j++) {
      if (!Number.isFinite(acc[j]!)) throw new ImatrixComputeError(`non-finite values detected in ${weight}`);
    }
    e.counts[0]! += rows;
  };
}

/**
 * Runs the model over `tokens` chunk by chunk and returns the importance matrix. The
 * context must have been created with `onMatMulInput: collector.observe`, a context of
 * at least chunkSize tokens and a batch of at least chunkSize (one graph per chunk, as
 * llama-imatrix's 512-token ubatches).
 */
export async function computeImatrix(
  ctx: Context,
  collector: ImatrixCollector,
  tokens: Int32Array,
  bos: number | undefined,
  opts: ImatrixOptions = {},
): Promise<ImatrixFile> {
  const n = opts.chunkSize ?? 512;
  if (tokens.length < 2 * n) {
    throw new ImatrixComputeError(
      `you need at least ${2 * n} tokens for chunks of ${n} tokens; the text has only ${tokens.length}`,
    );
  }
  const max = Math.floor(tokens.length / n);
  const total = opts.chunks !== undefined && opts.chunks >= 0 ? Math.min(opts.chunks, max) : max;
  const logits = new Array<boolean>(n).fill(true);
  for (let c = 0; c < total; c++) {
    opts.signal?.throwIfAborted();
    const chunk = tokens.slice(c * n, (c + 1) * n);
    if (bos !== undefined) chunk[0] = bos;
    ctx.clearMemory();
    // every token's output, as llama-imatrix asks (output.weight then sees every row)
    await ctx.decode({ tokens: chunk, logits });
    opts.onChunk?.(c + 1, total);
  }
  return {
    entries: collector.entries,
    datasets: opts.dataset !== undefined ? [opts.dataset] : [],
    chunkCount: total,
    chunkSize: n,
    legacy: false,
  };
}
