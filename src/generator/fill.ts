// A tensor's values: drawn chunk by chunk, each chunk of CHUNK elements from its own
// stream seeded by (model seed, tensor name, chunk index), then quantized. Chunks are
// independent, so any split of the work (threads, ranges) gives the same bytes.
import { quantizerOf } from '../ggml/quants/index.js';
import { GGMLType, traitsOf, typeName } from '../ggml/types.js';
import { useWasmQuantizers } from '../quantize/wasm-quantizers.js';
import type { PlannedTensor } from './layout.js';
import { mixSeed, Rng } from './rng.js';

useWasmQuantizers();

/** Elements per seeded stream: a multiple of every block size (32, 256). */
export const CHUNK = 1 << 16;

export interface FillJob {
  seed: number;
  name: string;
  mean: number;
  std: number;
  type: GGMLType;
  /** Elements in the tensor. */
  n: number;
}

export function chunkCount(n: number): number {
  return Math.ceil(n / CHUNK);
}

/** Writes chunks [c0, c1) of the tensor into `out` (the whole tensor's bytes). */
export function fillChunks(job: FillJob, out: Uint8Array, c0: number, c1: number, scratch: Float32Array): void {
  const tensorSeed = mixSeed(job.seed, job.name);
  const { n, mean, std, type } = job;
  if (type === GGMLType.F32) {
    // Drawn straight into the output (ggml files are little-endian, as is every host Node runs on).
    const f = new Float32Array(out.buffer, out.byteOffset, n);
    for (let c = c0; c < c1; c++) {
      new Rng(mixSeed(tensorSeed, c)).fillNormal(f, c * CHUNK, Math.min(CHUNK, n - c * CHUNK), mean, std);
    }
    return;
  }
  const tr = traitsOf(type);
  const q = quantizerOf(type);
  if (!q) throw new RangeError(`tensor '${job.name}': no quantizer for ${typeName(type)}`);
  for (let c = c0; c < c1; c++) {
    const len = Math.min(CHUNK, n - c * CHUNK);
    new Rng(mixSeed(tensorSeed, c)).fillNormal(scratch, 0, len, mean, std);
    q(scratch, 0, out, ((c * CHUNK) / tr.blockSize) * tr.typeSize, len / tr.blockSize);
  }
}

export function tensorByteSize(type: GGMLType, n: number): number {
  const tr = traitsOf(type);
  return (n / tr.blockSize) * tr.typeSize;
}

/** A tensor's bytes: its values (seeded by the model seed and its name) in `type`. */
export function tensorBytes(seed: number, t: PlannedTensor, type: GGMLType): Uint8Array {
  const job = { seed, name: t.name, mean: t.init.mean, std: t.init.std, type, n: t.dims.reduce((a, b) => a * b, 1) };
  const out = new Uint8Array(tensorByteSize(type, job.n));
  fillChunks(job, out, 0, chunkCount(job.n), new Float32Array(CHUNK));
  return out;
}
