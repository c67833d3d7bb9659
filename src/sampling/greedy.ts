// Greedy sampling: the highest logit (the lowest id among equal ones). `argmax` works on a
// raw logits row; `GreedyStep` is the same choice as a chain's last step (llama.cpp's
// `greedy`: the first of equal candidates).

import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

export class GreedyStep implements SamplingStep {
  readonly name = 'greedy';

  apply(c: Candidates): void {
    c.selected = c.size > 0 ? c.argmax() : -1;
  }

  clone(): GreedyStep {
    return new GreedyStep();
  }
}
