// Speculative generation of one sequence on a context (tests and benchmarks; the server and
// the library run the same steps inside their generation units): evaluate the prompt (and
// have a draft model evaluate it too), then per step draft up to nDraft tokens, evaluate
// [last, ...draft] in one decode with logits for every token, verify, and drop the
// rejected tokens from the KV cache.
import type { Context } from '../model/index.js';
import type { Mt19937, SamplerChain } from '../sampling/index.js';
import { type Drafter, newStats, SpeculativeError, type SpeculativeStats } from './types.js';
import { verifyDraft } from './verify.js';

export interface SpeculativeRun {
  /** Generated tokens (the prompt not included). */
  tokens: number[];
  stats: SpeculativeStats;
  /** Target decodes for generated tokens (the prompt's not counted). */
  decodes: number;
  /** Milliseconds evaluating the prompt (and choosing the first token), and generating the rest. */
  promptMs: number;
  generationMs: number;
}

export interface SpeculativeGenerateOptions {
  prompt: readonly number[];
  nPredict: number;
  chain: SamplerChain;
  /** No drafter: plain decoding, one token per decode. */
  drafter?: Drafter;
  /** Most tokens drafted per step. Default 16. */
  nDraft?: number;
  /** Sequence id in the context. Default 0. */
  seq?: number;
  /** For the standard acceptance rule (drafts with distributions). */
  rng?: Mt19937;
  /** Generation ends after a token for which this is true (end of generation). */
  isEnd?: (token: number) => boolean;
}

export async function speculativeGenerate(ctx: Context, o: SpeculativeGenerateOptions): Promise<SpeculativeRun> {
  const seq = o.seq ?? 0;
  // with a sliding window, [last, ...draft] stays one ubatch (see Context.slidingWindow)
  const nDraft = Math.min(o.nDraft ?? 16, ctx.slidingWindow ? ctx.nUbatch - 1 : Number.POSITIVE_INFINITY);
  const stats = newStats();
  const out: number[] = [];
  if (o.nPredict <= 0 || o.prompt.length === 0) return { tokens: out, stats, decodes: 0, promptMs: 0, generationMs: 0 };
  const t0 = performance.now();
  ctx.seqRm(seq, -1, -1);
  for (let i = 0; i < o.prompt.length; i += ctx.nBatch) {
    const chunk = o.prompt.slice(i, i + ctx.nBatch);
    await ctx.decode({
      tokens: chunk,
      pos: chunk.map((_, j) => i + j),
      seqIds: chunk.map(() => seq),
      logits: chunk.map((_, j) => i + j === o.prompt.length - 1),
    });
  }
  // the draft model evaluates the prompt with the target, as prompt processing
  await o.drafter?.prefill?.([{ seq, tokens: o.prompt }]);
  let last = o.chain.sample(ctx.getLogits(-1));
  out.push(last);
  let decodes = 0;
  const t1 = performance.now();
  const done = () => out.length >= o.nPredict || (o.isEnd?.(last) ?? false);
  while (!done()) {
    const pos = o.prompt.length + out.length - 1;
    const room = Math.min(o.nPredict - out.length - 1, ctx.nBatch - 1, ctx.nCtx - pos - 1);
    const history = [...o.prompt, ...out];
    const draft =
      o.drafter && room > 0
        ? (await o.drafter.draft([{ seq, tokens: history, nMax: Math.min(nDraft, room), grammar: o.chain.grammar }]))[0]
        : { tokens: [] };
    if (draft.tokens.length > room) draft.tokens.length = room;
    const batch = [last, ...draft.tokens];
    await ctx.decode({
      tokens: batch,
      pos: batch.map((_, j) => pos + j),
      seqIds: batch.map(() => seq),
      logits: batch.map(() => true),
    });
    decodes++;
    const r = verifyDraft(o.chain, (i) => ctx.getLogits(i), draft, {
      ...(o.rng ? { rng: o.rng } : {}),
      onToken: (t) => {
        out.push(t);
        last = t;
        return !done();
      },
    });
    if (draft.tokens.length > 0) {
      stats.steps++;
      stats.drafted += draft.tokens.length;
      stats.accepted += r.accepted;
    }
    // keep `last` and the accepted drafted tokens; the rejected ones leave the cache
    const keep = pos + 1 + r.accepted;
    ctx.seqRm(seq, keep, -1);
    if (ctx.slidingWindow && ctx.reusablePrefix(seq, keep) < keep) {
      throw new SpeculativeError(`speculative decoding: sequence ${seq} lost window cells its next token reads`);
    }
  }
  return { tokens: out, stats, decodes, promptMs: t1 - t0, generationMs: performance.now() - t1 };
}
