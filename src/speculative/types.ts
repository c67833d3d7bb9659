// What drafters and the verifier share. A drafter proposes tokens that may follow a
// sequence; the target model evaluates them in one batch after the sequence's last token;
// the verifier keeps the longest prefix the target agrees with, plus one token of its own.
import type { GrammarSampler } from '../sampling/grammar/index.js';

/** One sequence asking for a draft. */
export interface DraftRequest {
  /** The sequence (a slot of the target context; drafters with state keep it per id). */
  seq: number;
  /** Every token of the sequence so far: prompt and generated, the last one not yet evaluated by the target. */
  tokens: readonly number[];
  /** Tokens to propose at most (0: none). */
  nMax: number;
  /** Drafts shorter than this are dropped (a draft model's default: its own nMin). */
  nMin?: number;
  /** A draft model's greedy drafts end at a token below this probability (default: its own pMin). */
  pMin?: number;
  /**
   * The target's grammar in its state after `tokens` (the drafter works on a copy): a
   * drafter that can keeps its proposals within it.
   */
  grammar?: GrammarSampler;
}

/** Proposed continuation of one sequence. */
export interface Draft {
  tokens: number[];
  /**
   * The drafter's distribution for each proposed token (dense, over the vocabulary), when
   * it sampled them; absent: each token was the drafter's one choice (a point mass).
   */
  probs?: Float32Array[];
}

/** Proposes continuations: a draft model, lookups in the sequence itself, a replay. */
export interface Drafter {
  /** 'draft-model', 'ngram' or 'replay'. */
  readonly kind: string;
  /** Drafts for several sequences at once (a drafter with a model evaluates them in one batch per step). */
  draft(requests: readonly DraftRequest[]): Promise<Draft[]>;
  /**
   * Evaluates sequences' prompts while the target evaluates them, ahead of their first
   * draft (a drafter with a model; the others keep nothing to evaluate).
   */
  prefill?(requests: readonly Pick<DraftRequest, 'seq' | 'tokens'>[]): Promise<void>;
  /** Forget what is kept for a sequence (its slot starts over). */
  reset?(seq: number): void;
  /** Free what the drafter holds (a draft model's context). */
  free?(): void;
}

/** Counters of speculative decoding (llama-server's draft_n / draft_n_accepted). */
export interface SpeculativeStats {
  /** Verification steps that had a draft. */
  steps: number;
  /** Tokens proposed. */
  drafted: number;
  /** Proposed tokens the target accepted. */
  accepted: number;
}

export function newStats(): SpeculativeStats {
  return { steps: 0, drafted: 0, accepted: 0 };
}

/** accepted / drafted (0 before any draft). */
export function acceptanceRate(s: SpeculativeStats): number {
  return s.drafted > 0 ? s.accepted / s.drafted : 0;
}

export class SpeculativeError extends Error {
  override name = 'SpeculativeError';
}
