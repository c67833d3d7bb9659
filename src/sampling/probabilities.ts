// n_probs: the top-N probabilities of each generated token, as llama.cpp's server
// reports them in `completion_probabilities`. By default (post_sampling_probs false)
// they come from the raw distribution: softmax over the model's logits, before any
// sampler (bias, penalties, temperature, truncation); with post_sampling_probs, from
// the chain's final candidates (what the last draw used), highest first, zeros left out.

import { binaryToText } from '../vocab/unicode.js';
import { Candidates } from './candidates.js';

export interface TokenProbability {
  id: number;
  prob: number;
}

/** One generated token: its probability and the top N. */
export interface ProbabilityRow extends TokenProbability {
  top: TokenProbability[];
}

/** Softmax of a raw logits row: the chosen token's probability and the N most probable. */
export function rawProbabilities(logits: ArrayLike<number>, token: number, nProbs: number): ProbabilityRow {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.fround(Math.exp(Math.fround(logits[i]! - max)));
  const total = Math.fround(sum);
  const prob = (i: number) => Math.fround(Math.fround(Math.exp(Math.fround(logits[i]! - max))) / total);
  const k = Math.max(0, Math.min(nProbs, n));
  let top: number[];
  if (k <= 32) {
    // a short sorted list (ties: lower id first)
    top = [];
    for (let i = 0; i < n && k > 0; i++) {
      const v = logits[i]!;
      if (top.length === k && !(v > logits[top[k - 1]!]!)) continue;
      let j = top.length === k ? k - 1 : top.length;
      while (j > 0 && logits[top[j - 1]!]! < v) {
        top[j] = top[j - 1]!;
        j--;
      }
      top[j] = i;
    }
  } else {
    top = Array.from(Candidates.from(logits).topPositions(k).subarray(0, k));
  }
  return {
    id: token,
    prob: token >= 0 && token < n ? prob(token) : 0,
    top: top.map((id) => ({ id, prob: prob(id) })),
  };
}

/**
 * From a chain's final candidates (sorted by probability in place, as llama.cpp's
 * common_sampler_get_candidates does).
 */
export function postSamplingProbabilities(c: Candidates, token: number, nProbs: number): ProbabilityRow {
  c.sortByProb();
  let prob = 0;
  for (let i = 0; i < c.size; i++) {
    if (c.ids[i] === token) {
      prob = c.probs[i]!;
      break;
    }
  }
  const top: TokenProbability[] = [];
  // candidates the chain left at probability 0 (greedy's) are listed too, as llama-server
  for (let i = 0; i < Math.min(c.size, nProbs); i++) top.push({ id: c.ids[i]!, prob: c.probs[i]! });
  return { id: token, prob, top };
}

/** llama.cpp's `completion_probabilities` entries (logprob form by default, prob form with post_sampling_probs). */
export interface CompletionProbability {
  id: number;
  token: string;
  bytes: number[];
  logprob?: number;
  prob?: number;
  top_logprobs?: CompletionTokenProbability[];
  top_probs?: CompletionTokenProbability[];
}

export interface CompletionTokenProbability {
  id: number;
  token: string;
  bytes: number[];
  logprob?: number;
  prob?: number;
}

const FLOAT_LOWEST = -3.4028234663852886e38;

/** ln p, with p = 0 as the lowest float (JSON has no -Infinity), as llama.cpp's server writes it. */
export function logprob(p: number): number {
  return p === 0 ? FLOAT_LOWEST : Math.log(p);
}

/** Length of a byte string without a trailing cut UTF-8 character (llama.cpp's validate_utf8). */
export function completeUtf8Length(bytes: string): number {
  const len = bytes.length;
  for (let i = 1; i <= 4 && i <= len; i++) {
    const c = bytes.charCodeAt(len - i);
    if ((c & 0xe0) === 0xc0) {
      if (i < 2) return len - i;
    } else if ((c & 0xf0) === 0xe0) {
      if (i < 3) return len - i;
    } else if ((c & 0xf8) === 0xf0) {
      if (i < 4) return len - i;
    }
  }
  return len;
}

function entry(id: number, piece: string, p: number, post: boolean): CompletionTokenProbability {
  const token = binaryToText(piece.slice(0, completeUtf8Length(piece)));
  const bytes = Array.from(piece, (ch) => ch.charCodeAt(0));
  return post ? { id, token, bytes, prob: p } : { id, token, bytes, logprob: logprob(p) };
}

/**
 * Rows → `completion_probabilities` JSON. `piece(id)` is the token's text as a byte
 * string (Vocab.pieceBytes(id, special)).
 */
export function completionProbabilities(
  rows: readonly ProbabilityRow[],
  piece: (id: number) => string,
  postSamplingProbs = false,
): CompletionProbability[] {
  return rows.map((r) => {
    const e: CompletionProbability = entry(r.id, piece(r.id), r.prob, postSamplingProbs);
    const top = r.top.map((t) => entry(t.id, piece(t.id), t.prob, postSamplingProbs));
    if (postSamplingProbs) e.top_probs = top;
    else e.top_logprobs = top;
    return e;
  });
}
