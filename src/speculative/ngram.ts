// Prompt-lookup drafting (n-gram lookup, no second model): the last n tokens of a sequence
// are looked for earlier in it (the prompt and what was generated), longest n first, most
// recent occurrence first; the tokens that followed that occurrence are the draft. Text
// that repeats or quotes its prompt (code edits, extraction, summaries with quotes) gets
// long accepted drafts; elsewhere the lookup finds nothing and costs next to nothing.
import { type Draft, type Drafter, type DraftRequest, SpeculativeError } from './types.js';

export interface NgramOptions {
  /** Longest n-gram to look up. Default 4. */
  nMax?: number;
  /** Shortest n-gram to look up. Default 2. */
  nMin?: number;
}

export class NgramDrafter implements Drafter {
  readonly kind = 'ngram';
  readonly nMax: number;
  readonly nMin: number;

  constructor(opts: NgramOptions = {}) {
    this.nMax = opts.nMax ?? 4;
    this.nMin = opts.nMin ?? 2;
    if (!(Number.isInteger(this.nMin) && this.nMin >= 1 && Number.isInteger(this.nMax) && this.nMax >= this.nMin)) {
      throw new SpeculativeError(`n-gram sizes ${this.nMin}..${this.nMax}: need integers 1 ≤ nMin ≤ nMax`);
    }
  }

  async draft(requests: readonly DraftRequest[]): Promise<Draft[]> {
    return requests.map((r) => {
      const tokens = lookup(r.tokens, r.nMax, this.nMin, this.nMax);
      return { tokens: tokens.length < (r.nMin ?? 0) ? [] : tokens };
    });
  }
}

/** The tokens after the most recent earlier occurrence of the longest matching suffix. */
export function lookup(h: readonly number[], nDraft: number, nMin: number, nMax: number): number[] {
  const len = h.length;
  if (nDraft <= 0) return [];
  for (let n = Math.min(nMax, len - 1); n >= nMin; n--) {
    // an occurrence ending at e (exclusive) < len, with at least one token after it
    for (let e = len - 1; e >= n; e--) {
      let k = 0;
      while (k < n && h[e - 1 - k] === h[len - 1 - k]) k++;
      if (k < n) continue;
      return h.slice(e, Math.min(len, e + nDraft)) as number[];
    }
  }
  return [];
}
