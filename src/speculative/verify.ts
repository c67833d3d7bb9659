// Verification: given the target's logits after the sequence's last token and after each
// drafted token (one batched decode of [last, d0 … dk-1]), keep the drafted tokens the
// target agrees with and add the target's own next token, so that the tokens produced
// follow the target's distribution exactly.
//
// - match (llama.cpp's common_sampler_sample_and_accept_n): the target's sampling chain
//   picks the token at each position; drafted tokens are kept while they equal its picks.
//   With drafts that are a drafter's single choice this is the standard rule for a point
//   mass, and the chain draws exactly what plain decoding draws: the same tokens for the
//   same seed, greedy or not.
// - standard (Leviathan et al. / Chen et al.): for drafts sampled from a distribution q,
//   accept d with probability min(1, p(d)/q(d)), where p is the chain's distribution;
//   on rejection draw from max(0, p − q), normalized. Used when a draft carries q and the
//   chain ends in a plain draw (dist) with no grammar; otherwise match.
import type { Mt19937, SamplerChain } from '../sampling/index.js';
import type { Draft } from './types.js';

export interface VerifyOptions {
  /** Uniform draws for the standard rule (seed it for reproducible runs). */
  rng?: Mt19937;
  /**
   * Called after each token is chosen and accepted by the chain (chain.candidates hold its
   * candidates); return false to stop there (end of generation, a stop string, the
   * length limit): the rest of the draft is then not used.
   */
  onToken?: (token: number, index: number) => boolean;
}

export interface VerifyResult {
  /** Tokens produced: the accepted drafted tokens, then the target's own (unless stopped early). */
  tokens: number[];
  /** Drafted tokens accepted (tokens.length - 1, or tokens.length when onToken stopped on a drafted one). */
  accepted: number;
  rule: 'match' | 'standard';
}

/**
 * Verifies `draft` against the target: `row(i)` is the logits row after batch token i of
 * [last, ...draft.tokens] (i = 0 … k). Produces at least one token unless onToken stops.
 */
export function verifyDraft(
  chain: SamplerChain,
  row: (i: number) => Float32Array,
  draft: Draft,
  opts: VerifyOptions = {},
): VerifyResult {
  const k = draft.tokens.length;
  const standard =
    draft.probs !== undefined && opts.rng !== undefined && !chain.grammar && chain.steps.at(-1)?.name === 'dist';
  const out: number[] = [];
  let accepted = 0;
  const emit = (t: number): boolean => {
    chain.accept(t);
    out.push(t);
    return opts.onToken ? opts.onToken(t, out.length - 1) !== false : true;
  };
  for (let i = 0; i <= k; i++) {
    const picked = chain.choose(row(i));
    if (i === k) {
      emit(picked);
      break;
    }
    const d = draft.tokens[i];
    if (!standard) {
      if (picked !== d) {
        emit(picked);
        break;
      }
      accepted++;
      if (!emit(d)) break;
      continue;
    }
    // the standard rule: p from the chain's candidates (after its steps), q from the draft
    const c = chain.candidates;
    const q = draft.probs![i];
    let pd = 0;
    for (let j = 0; j < c.size; j++) {
      if (c.ids[j] === d) {
        pd = c.probs[j];
        break;
      }
    }
    const qd = q[d] ?? 0;
    if (qd > 0 && opts.rng!.nextDouble() * qd < pd) {
      accepted++;
      if (!emit(d)) break;
      continue;
    }
    // rejected: a draw from the residual max(0, p - q)
    let sum = 0;
    for (let j = 0; j < c.size; j++) sum += Math.max(0, c.probs[j] - (q[c.ids[j]] ?? 0));
    let t = picked;
    if (sum > 0) {
      const u = opts.rng!.nextDouble() * sum;
      let run = 0;
      for (let j = 0; j < c.size; j++) {
        const r = Math.max(0, c.probs[j] - (q[c.ids[j]] ?? 0));
        if (r <= 0) continue;
        run += r;
        t = c.ids[j];
        if (run > u) break;
      }
    }
    emit(t);
    break;
  }
  return { tokens: out, accepted, rule: standard ? 'standard' : 'match' };
}
