// Embedding normalization with llama.cpp's meaning of embd_normalize
// (common_embd_normalize): -1 none, 0 max-abs scaled to the int16 range, 1 taxicab,
// 2 Euclidean (L2, the default), p > 2 the p-norm.
import { optionError } from './options.js';

export function checkNormalize(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -1) {
    throw optionError('embd_normalize', v, 'must be an integer ≥ -1 (-1 none, 0 max-abs, 1 taxicab, 2 L2, >2 p-norm)');
  }
  return v;
}

export function normalizeEmbedding(v: Float32Array, mode: number): Float32Array {
  let sum = 0;
  if (mode === -1) sum = 1;
  else if (mode === 0) {
    for (const x of v) sum = Math.max(sum, Math.abs(x));
    sum /= 32760;
  } else if (mode === 2) {
    for (const x of v) sum += x * x;
    sum = Math.sqrt(sum);
  } else {
    for (const x of v) sum += Math.abs(x) ** mode;
    sum = sum ** (1 / mode);
  }
  const k = sum > 0 ? 1 / sum : 0;
  return v.map((x) => x * k);
}
