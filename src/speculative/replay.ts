// A drafter that replays a known sequence (benchmarks): for a sequence that is a prefix
// of `script`, it proposes the script's next tokens. With `accuracy` below 1 each proposed
// token is replaced, with probability 1 - accuracy (seeded), by another token, so the
// target rejects it: this measures what speculation itself costs at a given acceptance rate.
import { Mt19937 } from '../sampling/index.js';
import { type Draft, type Drafter, type DraftRequest, SpeculativeError } from './types.js';

export interface ReplayOptions {
  /** Probability that a proposed token is the script's. Default 1. */
  accuracy?: number;
  seed?: number;
  /** Vocabulary size (wrong tokens are drawn below it). */
  nVocab: number;
}

export class ReplayDrafter implements Drafter {
  readonly kind = 'replay';
  private readonly rng: Mt19937;
  readonly accuracy: number;

  constructor(
    readonly script: readonly number[],
    readonly opts: ReplayOptions,
  ) {
    this.accuracy = opts.accuracy ?? 1;
    if (!(this.accuracy >= 0 && this.accuracy <= 1)) {
      throw new SpeculativeError(`replay accuracy ${this.accuracy} is not within 0..1`);
    }
    this.rng = new Mt19937(opts.seed ?? 1);
  }

  async draft(requests: readonly DraftRequest[]): Promise<Draft[]> {
    return requests.map((r) => {
      const h = r.tokens;
      const s = this.script;
      for (let i = 0; i < h.length; i++) if (h[i] !== s[i]) return { tokens: [] };
      const tokens = s.slice(h.length, h.length + r.nMax) as number[];
      for (let i = 0; i < tokens.length; i++) {
        if (this.accuracy < 1 && this.rng.nextDouble() >= this.accuracy) {
          tokens[i] = (tokens[i] + 1 + Math.floor(this.rng.nextDouble() * (this.opts.nVocab - 1))) % this.opts.nVocab;
          tokens.length = i + 1;
          break;
        }
      }
      return { tokens };
    });
  }
}
