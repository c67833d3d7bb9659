// Checking a model against a `.ref.json` of llama.cpp's answers whose `top10` holds
// log-probabilities (../shared/fixtures/archs/, and the references made with
// ../shared/tools/ref.mjs for generated models): prompt tokens, the top-10 logits relative
// to llama.cpp's top-1 token, and greedy decoding generated incrementally (one decode per
// token through the cache, so a sliding window's ring of cells is exercised), each step's
// argmax checked except near-ties. Returns the figures and every step's logits, so callers
// can check thread counts give the same bits.

import assert from 'node:assert/strict';
import { Context, type ContextParams, type Model } from '../../src/model/index.js';

export interface RefCase {
  prompt: string;
  tokens: number[];
  /** [token id, log-probability, probability] */
  top10: [number, number, number][];
  greedy: number[];
  greedy_gap: number[];
}

export interface CaseResult {
  /** Largest |Δ| of the top-10 logits relative to llama.cpp's top-1. */
  maxDelta: number;
  matched: number;
  required: number;
  /** The logits after the prompt and after each greedy token. */
  steps: Float32Array[];
}

export function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[b]) b = i;
  return b;
}

export async function checkRefCase(
  model: Model,
  c: RefCase,
  tol: number,
  where: string,
  params: ContextParams = {},
): Promise<CaseResult> {
  // (../shared/tools/ref.mjs puts BOS first also where the vocabulary adds none: a BPE
  // vocabulary's generated model; llama.cpp evaluated it so, and so do we)
  const ours = model.vocab.encode(c.prompt, { addSpecial: true, parseSpecial: false });
  const tokens = ours[0] !== c.tokens[0] && c.tokens[0] === model.vocab.bos ? [model.vocab.bos, ...ours] : ours;
  assert.deepEqual(tokens, c.tokens, `${where}: prompt tokens`);
  const ctx = new Context(model, { nCtx: 256, ...params });
  try {
    await ctx.decode({ tokens });
    const first = ctx.getLogits(-1);
    const steps = [first];

    // top-10 relative to llama.cpp's top-1 (log-probabilities differ from logits by a constant)
    const [top1] = c.top10[0];
    let maxDelta = 0;
    for (const [id, lp] of c.top10) {
      const ours = first[id] - first[top1];
      const theirs = lp - c.top10[0][1];
      const d = Math.abs(ours - theirs);
      maxDelta = Math.max(maxDelta, d);
      assert.ok(
        d <= tol,
        `${where}: logit of ${id} relative to ${top1} is ${ours}, llama.cpp ${theirs} (tolerance ${tol})`,
      );
    }
    const order = Array.from(first.keys()).sort((a, b) => first[b] - first[a]);
    const rank = new Map(order.map((id, r) => [id, r]));
    const tenth = c.top10[9][1];
    for (let i = 0; i < 10; i++) {
      const [id, li] = c.top10[i];
      if (li - tenth > 2 * tol) assert.ok(rank.get(id)! < 10, `${where}: token ${id} not in the top 10`);
    }

    // greedy, one token per decode through the cache
    let matched = 0;
    let required = 0;
    let logits = first;
    for (let s = 0; s < c.greedy.length; s++) {
      if (c.greedy_gap[s] > 2 * tol) {
        required++;
        const picked = argmax(logits);
        assert.equal(
          picked,
          c.greedy[s],
          `${where}: greedy step ${s} picked ${picked}, llama.cpp ${c.greedy[s]} (gap ${c.greedy_gap[s]})`,
        );
        matched++;
      }
      if (s + 1 < c.greedy.length) {
        await ctx.decode({ tokens: [c.greedy[s]] });
        logits = ctx.getLogits(-1);
        steps.push(logits);
      }
    }
    return { maxDelta, matched, required, steps };
  } finally {
    ctx.free();
  }
}

/** Whether two runs gave the same bits at every step. */
export function sameBits(a: readonly Float32Array[], b: readonly Float32Array[]): boolean {
  if (a.length !== b.length) return false;
  for (let s = 0; s < a.length; s++) {
    const x = new Uint32Array(a[s].buffer, a[s].byteOffset, a[s].length);
    const y = new Uint32Array(b[s].buffer, b[s].byteOffset, b[s].length);
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  }
  return true;
}
