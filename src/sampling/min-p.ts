// Min-p (llama.cpp's `min-p`): keep the tokens whose probability is at least p times the
// most probable one's, compared as logits (logit ≥ max + ln p), keeping the order of an
// unsorted list; at least minKeep tokens. p ≤ 0 keeps all.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

export class MinPSampler implements SamplingStep {
  readonly name = 'min-p';
  readonly p: number;

  constructor(
    p: number,
    readonly minKeep = 0,
  ) {
    this.p = Math.fround(p);
  }

  apply(c: Candidates): void {
    if (this.p <= 0 || c.size === 0) return;
    const logP = Math.fround(Math.log(this.p));
    if (!c.sorted) {
      let max = -3.4028234663852886e38;
      for (let i = 0; i < c.size; i++) if (c.logits[i]! > max) max = c.logits[i]!;
      const min = Math.fround(max + logP);
      let kept = 0;
      for (let i = 0; i < c.size; i++) if (c.logits[i]! >= min) kept++;
      if (kept > 0 && kept >= this.minKeep) {
        if (kept < c.size) {
          let j = 0;
          for (let i = 0; i < c.size; i++) {
            if (c.logits[i]! < min) continue;
            c.ids[j] = c.ids[i]!;
            c.logits[j] = c.logits[i]!;
            c.probs[j] = c.probs[i]!;
            j++;
          }
          c.size = kept;
          c.identity = false;
        }
        return;
      }
      c.sortTop(c.size);
    }
    const min = Math.fround(c.logits[0]! + logP);
    let i = 1;
    for (; i < c.size; i++) if (c.logits[i]! < min && i >= this.minKeep) break;
    c.size = i;
  }

  clone(): MinPSampler {
    return new MinPSampler(this.p, this.minKeep);
  }
}
