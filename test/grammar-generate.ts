// Test helper (not a test): constrained random generation through a GrammarSampler, with
// every step checked independently of the token trie: the chosen token must extend the
// text to a valid prefix (a fresh matcher fed the raw bytes), and end-of-generation may
// only be chosen when the text is a complete match.
import assert from 'node:assert/strict';
import {
  type Grammar,
  GrammarMatcher,
  type GrammarSampler,
  type GrammarVocab,
  isTokenAllowed,
} from '../src/sampling/grammar/index.js';
import { seededRandom } from './helpers/random.js';

export interface GenerateOptions {
  maxSteps: number;
  /** From this step on, favour tokens made only of these characters (and EOG), so runs finish. */
  closeAfter?: number;
  closers?: string;
  /** Compare the whole-vocabulary filter with a token-by-token check at every n-th step (0: never). */
  crossCheckEvery?: number;
}

export interface Generated {
  /** The output as raw bytes (latin1 string) and as text. */
  bytes: string;
  text: string;
  completed: boolean;
  steps: number;
  allowedCounts: number[];
}

export function closerMask(vocab: GrammarVocab, closers: string): Uint8Array {
  const mask = new Uint8Array(vocab.nTokens);
  for (let t = 0; t < vocab.nTokens; t++) {
    const p = vocab.pieceBytes(t);
    if (p.length > 0 && [...p].every((c) => closers.includes(c))) mask[t] = 1;
  }
  return mask;
}

export function generate(
  grammar: Grammar,
  sampler: GrammarSampler,
  vocab: GrammarVocab,
  seed: number,
  o: GenerateOptions,
): Generated {
  const random = seededRandom(seed);
  const n = vocab.nTokens;
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i;
  const logits = new Float32Array(n);
  const isEog = new Uint8Array(n);
  for (let i = 0; i < n; i++) isEog[i] = vocab.isEog(i) ? 1 : 0;
  const close = o.closers ? closerMask(vocab, o.closers) : undefined;
  let bytes = '';
  const allowedCounts: number[] = [];
  sampler.reset();
  for (let step = 0; step < o.maxSteps; step++) {
    const closing = close !== undefined && step >= (o.closeAfter ?? 0);
    logits.fill(0);
    sampler.apply({ ids, logits, n });
    // a uniform choice among the allowed tokens; when closing, EOG first, then "closer" tokens
    let count = 0;
    let eog = -1;
    let closers = 0;
    for (let i = 0; i < n; i++) {
      if (logits[i] === -Infinity) continue;
      count++;
      if (closing && isEog[i]) eog = i;
      else if (closing && close[i]) closers++;
    }
    allowedCounts.push(count);
    assert.ok(count > 0, `seed ${seed} step ${step}: no token allowed after ${JSON.stringify(bytes)}`);
    let best = eog;
    if (best < 0) {
      let r = Math.floor(random() * (closers > 0 ? closers : count));
      for (let i = 0; i < n && best < 0; i++) {
        if (logits[i] === -Infinity || (closers > 0 && (!close![i] || isEog[i]))) continue;
        if (r-- === 0) best = i;
      }
    }
    if (o.crossCheckEvery && step % o.crossCheckEvery === 0) {
      for (let t = 0; t < n; t++) {
        const a = logits[t] !== -Infinity;
        if (a !== isTokenAllowed(sampler.matcher, sampler.index, t)) {
          assert.fail(`seed ${seed} step ${step}: filter and token check disagree on token ${t}`);
        }
      }
    }
    const id = ids[best]!;
    // independent check of the choice
    const fresh = new GrammarMatcher(grammar);
    assert.ok(fresh.acceptBytes(bytes), 'text so far is a valid prefix');
    if (isEog[id]) {
      assert.ok(fresh.isComplete(), `seed ${seed} step ${step}: end of generation before the grammar is complete`);
      return { bytes, text: utf8(bytes), completed: true, steps: step + 1, allowedCounts };
    }
    const piece = vocab.pieceBytes(id);
    assert.ok(
      fresh.acceptBytes(piece),
      `seed ${seed} step ${step}: token ${id} ${JSON.stringify(piece)} leaves the grammar`,
    );
    sampler.accept(id);
    bytes += piece;
  }
  return { bytes, text: utf8(bytes), completed: false, steps: o.maxSteps, allowedCounts };
}

export function utf8(bytes: string): string {
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** True when the bytes are a complete match of the grammar. */
export function completes(grammar: Grammar, bytes: string): boolean {
  const m = new GrammarMatcher(grammar);
  return m.acceptBytes(bytes) && m.isComplete();
}
