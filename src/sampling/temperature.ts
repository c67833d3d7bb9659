// Temperature sampling: draw from softmax(logits / T) with a seeded generator, so a seed
// reproduces a run. T ≤ 0 is greedy.

import { argmax } from './greedy.js';
import type { Sampler } from './sampler.js';

/** A small seeded PRNG (mulberry32): uniform floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class TemperatureSampler implements Sampler {
  readonly name = 'temperature';
  private readonly random: () => number;
  private probs = new Float64Array(0);

  constructor(
    readonly temperature: number,
    readonly seed: number,
  ) {
    this.random = seededRandom(seed);
  }

  sample(logits: Float32Array): number {
    if (this.temperature <= 0) return argmax(logits);
    const n = logits.length;
    if (this.probs.length !== n) this.probs = new Float64Array(n);
    const p = this.probs;
    const max = logits[argmax(logits)];
    let sum = 0;
    for (let i = 0; i < n; i++) {
      p[i] = Math.exp((logits[i] - max) / this.temperature);
      sum += p[i];
    }
    let r = this.random() * sum;
    for (let i = 0; i < n; i++) {
      r -= p[i];
      if (r < 0) return i;
    }
    return n - 1;
  }
}
