// Logit bias (llama.cpp's `logit-bias`): add a fixed bias to chosen tokens' logits;
// -Infinity bans a token. Entries for the same token add up. An entry is applied by
// direct index while the list is still the whole vocabulary in order, else by search.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

export interface LogitBias {
  token: number;
  bias: number;
}

export class LogitBiasSampler implements SamplingStep {
  readonly name = 'logit-bias';
  readonly biases: readonly LogitBias[];
  private readonly toSearch: LogitBias[] = [];

  constructor(biases: readonly LogitBias[]) {
    this.biases = biases.map((b) => ({ token: b.token, bias: Math.fround(b.bias) }));
  }

  apply(c: Candidates): void {
    if (this.biases.length === 0) return;
    const search = this.toSearch;
    search.length = 0;
    for (const b of this.biases) {
      if (b.token >= 0 && b.token < c.size && c.ids[b.token] === b.token) {
        c.logits[b.token] = c.logits[b.token]! + b.bias;
      } else {
        search.push(b);
      }
    }
    if (search.length === 0) return;
    for (let i = 0; i < c.size; i++) {
      const id = c.ids[i]!;
      for (const b of search) {
        if (b.token === id) {
          c.logits[i] = c.logits[i]! + b.bias;
          break;
        }
      }
    }
  }

  clone(): LogitBiasSampler {
    return new LogitBiasSampler(this.biases);
  }
}
