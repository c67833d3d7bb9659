// Greedy sampling: the highest logit (the lowest id among equal ones).

import type { Sampler } from './sampler.js';

export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

export class GreedySampler implements Sampler {
  readonly name = 'greedy';

  sample(logits: Float32Array): number {
    return argmax(logits);
  }
}
