// Speculative decoding's core: drafters (a draft model, n-gram lookup, replay), the
// verifier and the generation loop over batched decodes. At temperature 0 (and with the
// match rule at any temperature, for the same seed) the output is token for token that of
// plain decoding; the standard acceptance rule keeps the target's distribution (a
// chi-square test over 10^4 draws of the first two tokens on a 16-token model, with a
// broken rule as a negative control).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { ensureModel } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, KVCache, Model } from '../src/model/index.js';
import { GrammarSampler } from '../src/sampling/grammar/index.js';
import {
  DistSampler,
  GreedyStep,
  Mt19937,
  SamplerChain,
  type SamplingStep,
  TempSampler,
  TopKSampler,
} from '../src/sampling/index.js';
import {
  checkDraftCompatible,
  type Draft,
  DraftModelDrafter,
  lookup,
  NgramDrafter,
  ReplayDrafter,
  SpeculativeError,
  speculativeGenerate,
  verifyDraft,
} from '../src/speculative/index.js';
import { chiSquare, gammaQ } from './helpers/stats.js';

let target: Model;
let draftModel: Model;
before(async () => {
  setLogCallback(() => {});
  target = await Model.load(ensureModel('tiny-llama', 'F32'));
  draftModel = await Model.load(ensureModel('tiny-llama', 'F32', undefined, { seed: 2, shape: { nLayer: 1 } }));
});
after(() => {
  target?.free();
  draftModel?.free();
});

const greedy = () => new SamplerChain([new GreedyStep()]);
const sampling = (seed: number) => new SamplerChain([new TopKSampler(40), new TempSampler(0.8), new DistSampler(seed)]);

/** Plain decoding, written independently of the speculative loop: one token per decode. */
async function plain(ctx: Context, prompt: number[], n: number, chain: SamplerChain): Promise<number[]> {
  ctx.clearMemory();
  await ctx.decode({ tokens: prompt });
  const out = [chain.sample(ctx.getLogits(-1))];
  while (out.length < n) {
    await ctx.decode({ tokens: [out[out.length - 1]] });
    out.push(chain.sample(ctx.getLogits(-1)));
  }
  return out;
}

/** Prompts: random runs, and runs that repeat themselves (so n-gram lookup finds something). */
function prompts(count: number): number[][] {
  const rng = new Mt19937(5);
  const out: number[][] = [];
  for (let i = 0; i < count; i++) {
    const part = Array.from({ length: 4 + (i % 5) }, () => 3 + Math.floor(rng.nextDouble() * 500));
    out.push(i % 2 === 0 ? [1, ...part] : [1, ...part, 7, ...part, 7, ...part.slice(0, 2)]);
  }
  return out;
}

test('the helpers: n-gram lookup and the chi-square p-value', () => {
  assert.deepEqual(lookup([1, 2, 3, 9, 9, 1, 2, 3], 3, 1, 4), [9, 9, 1]);
  assert.deepEqual(lookup([5, 1, 2, 6, 1, 2], 4, 2, 4), [6, 1, 2]);
  assert.deepEqual(lookup([1, 2, 3], 4, 2, 4), []);
  assert.deepEqual(lookup([4, 4, 4], 2, 1, 3), [4]);
  // known quantiles: p = 0.05 at 3.841 (1 df), 18.307 (10 df), 124.342 (100 df)
  for (const [df, x] of [
    [1, 3.841459],
    [10, 18.307038],
    [100, 124.342113],
  ]) {
    assert.ok(Math.abs(gammaQ(df / 2, x / 2) - 0.05) < 1e-5, `df ${df}`);
  }
});

test('greedy: every drafter gives plain decoding token for token, over many prompts', async () => {
  const ctx = new Context(target, { nCtx: 256, nThreads: 2 });
  const drafter = new DraftModelDrafter(draftModel, { nCtx: 256, nThreads: 2 });
  const ngram = new NgramDrafter();
  try {
    const totals = new Map<string, { drafted: number; accepted: number; decodes: number }>();
    const N = 40;
    for (const prompt of prompts(8)) {
      const want = await plain(ctx, prompt, N, greedy());
      const replayed = [...prompt, ...want];
      const runs = [
        ['draft model', drafter, 4],
        ['n-gram', ngram, 8],
        ['replay 100%', new ReplayDrafter(replayed, { nVocab: 512 }), 8],
        ['replay 70%', new ReplayDrafter(replayed, { nVocab: 512, accuracy: 0.7, seed: prompt.length }), 8],
      ] as const;
      for (const [name, d, nDraft] of runs) {
        const r = await speculativeGenerate(ctx, { prompt, nPredict: N, chain: greedy(), drafter: d, nDraft });
        assert.deepEqual(r.tokens, want, `${name}, prompt ${prompt.join(' ')}`);
        const t = totals.get(name) ?? { drafted: 0, accepted: 0, decodes: 0 };
        t.drafted += r.stats.drafted;
        t.accepted += r.stats.accepted;
        t.decodes += r.decodes;
        totals.set(name, t);
      }
    }
    const replay = totals.get('replay 100%')!;
    assert.equal(replay.accepted, replay.drafted);
    // 39 tokens after the first, 9 per decode: 5 decodes per prompt
    assert.equal(replay.decodes, 8 * 5);
    const seventy = totals.get('replay 70%')!;
    assert.ok(seventy.accepted < seventy.drafted && seventy.accepted > 0);
    // (random weights copy little, but their greedy output falls into loops now and then)
    assert.ok(totals.get('n-gram')!.accepted > 0, 'some n-gram drafts are accepted');
    assert.ok(totals.get('draft model')!.drafted > 0);
  } finally {
    drafter.free();
    ctx.free();
  }
});

test('a sliding-window target and draft model (window 8): the ring wraps, rejected drafts leave it, plain decoding’s tokens', async (t) => {
  const swaTarget = await Model.load(ensureModel('tiny-gemma3', 'F32'));
  const swaDraft = await Model.load(ensureModel('tiny-gemma3', 'F32', undefined, { seed: 2, shape: { nLayer: 2 } }));
  // n_ubatch 16: the ring has pad256(8 + 16) = 256 cells; 20 + 300 positions wrap it
  const ctx = new Context(swaTarget, { nCtx: 1024, nUbatch: 16, nThreads: 2 });
  const drafter = new DraftModelDrafter(swaDraft, { nCtx: 1024, nThreads: 2 });
  try {
    assert.ok(ctx.slidingWindow);
    const prompt = [1, ...Array.from({ length: 19 }, (_, i) => 10 + ((i * 37) % 480))];
    const N = 300;
    const want = await plain(ctx, prompt, N, greedy());
    const script = [...prompt, ...want];
    // what the cache holds after plain decoding: the logits of one more token
    const probe = async () => {
      const pos = prompt.length + N - 1;
      await ctx.decode({ tokens: [want[N - 1]], pos: [pos] });
      const l = ctx.getLogits(-1).slice();
      ctx.seqRm(0, pos, -1);
      return l;
    };
    const wantLogits = await probe();
    for (const [name, d, nDraft] of [
      ['draft model', drafter, 6],
      ['n-gram', new NgramDrafter(), 8],
      ['replay 70%', new ReplayDrafter(script, { nVocab: 512, accuracy: 0.7, seed: 3 }), 8],
      // more than n_ubatch - 1: [last, ...draft] is cut to one ubatch
      ['replay 100%, 40 drafted', new ReplayDrafter(script, { nVocab: 512 }), 40],
    ] as const) {
      const r = await speculativeGenerate(ctx, { prompt, nPredict: N, chain: greedy(), drafter: d, nDraft });
      assert.deepEqual(r.tokens, want, name);
      if (name.startsWith('replay 70')) assert.ok(r.stats.accepted < r.stats.drafted && r.stats.accepted > 0);
      if (name.startsWith('replay 100')) assert.equal(r.decodes, Math.ceil((N - 1) / 16));
      // (this random model's greedy text soon repeats one token: the window's cells are
      // checked by the next token's logits, which read every cell of the last 8 positions)
      const got = await probe();
      let worst = 0;
      for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - wantLogits[i]));
      t.diagnostic(`${name}: logits after the run within ${worst.toExponential(1)}`);
      assert.ok(worst < 1e-4, `${name}: logits after the run differ by ${worst}`);
    }
  } finally {
    drafter.free();
    ctx.free();
    swaTarget.free();
    swaDraft.free();
  }
});

test('a sliding-window ring keeps every window after rejected drafts leave it when each step is one ubatch (not when split)', async () => {
  // the rule the batcher and speculativeGenerate follow (Context.slidingWindow): random
  // steps of 2–3 sequences, each a token and up to 3 drafts, some rejected, in a ring of
  // W·nSeq + ubatch cells; after each step every sequence must still hold the window its
  // next token reads (reusablePrefix). The same steps split over two ubatches lose cells.
  const hp = (await Model.load(ensureModel('tiny-gemma3', 'F32'))).hp;
  const W = 4;
  const lost = { one: 0, split: 0 };
  const rng = new Mt19937(9);
  const TRIALS = 1000;
  for (let trial = 0; trial < TRIALS; trial++) {
    const nSeq = 2 + (trial % 2);
    const choices = Array.from({ length: 40 * 3 * 3 }, () => rng.nextDouble());
    for (const mode of ['one', 'split'] as const) {
      const c = new KVCache(hp, {
        layers: [0],
        // (a ubatch: up to 4 tokens per sequence)
        size: W * nSeq + 4 * nSeq,
        typeK: 'f32',
        typeV: 'f32',
        layerBufts: [referenceDevice.bufferType()],
        swa: { type: 'standard', window: W },
      });
      let k = 0;
      const next = new Array<number>(nSeq).fill(0);
      let bad = false;
      for (let step = 0; step < 40 && !bad; step++) {
        const toks: [number, number][] = [];
        const plan: [number, number, number][] = [];
        for (let s = 0; s < nSeq; s++) {
          const n = Math.floor(choices[k++] * 4);
          plan.push([s, next[s], n]);
          for (let j = 0; j <= n; j++) toks.push([s, next[s] + j]);
        }
        const half = Math.ceil(toks.length / 2);
        for (const u of mode === 'one' ? [toks] : [toks.slice(0, half), toks.slice(half)]) {
          const ub = { pos: Int32Array.from(u.map((t) => t[1])), seq: Int32Array.from(u.map((t) => t[0])) };
          const cells = c.findSlots(ub);
          assert.ok(cells, 'room for a step');
          c.store(cells, ub);
        }
        for (const [s, p, n] of plan) {
          const keep = p + 1 + Math.floor(choices[k++] * (n + 1));
          c.seqRm(s, keep, -1);
          next[s] = keep;
          if (c.reusablePrefix(s, keep) < keep) bad = true;
        }
      }
      if (bad) lost[mode]++;
      c.dispose();
    }
  }
  assert.equal(lost.one, 0);
  assert.ok(lost.split > TRIALS / 10, `split steps lose window cells (${lost.split} of ${TRIALS})`);
});

test('sampling with the match rule: the same seed gives plain decoding’s tokens', async () => {
  const ctx = new Context(target, { nCtx: 256, nThreads: 2 });
  const drafter = new DraftModelDrafter(draftModel, { nCtx: 256, nThreads: 2 });
  try {
    for (const [i, prompt] of prompts(6).entries()) {
      const want = await plain(ctx, prompt, 20, sampling(100 + i));
      for (const d of [
        drafter,
        new NgramDrafter({ nMin: 1 }),
        new ReplayDrafter([...prompt, ...want], { nVocab: 512 }),
      ]) {
        const r = await speculativeGenerate(ctx, {
          prompt,
          nPredict: 20,
          chain: sampling(100 + i),
          drafter: d,
          nDraft: 5,
        });
        assert.deepEqual(r.tokens, want, `${d.kind}, prompt ${i}`);
      }
    }
  } finally {
    drafter.free();
    ctx.free();
  }
});

test('under a grammar that copies a passage, target and draft model both follow it: plain decoding’s tokens, every draft accepted', async (t) => {
  const ctx = new Context(target, { nCtx: 256, nThreads: 2 });
  const drafter = new DraftModelDrafter(draftModel, { nCtx: 256, nThreads: 2 });
  // the passage's own tokens, one token literal each: a single path through the grammar
  const passage = target.vocab.encode('the cat sat on the mat and the dog sat on the log', { addSpecial: false });
  const gbnf = `root ::= ${passage.map((id) => `<[${id}]>`).join(' ')}`;
  const grammarChain = () => new SamplerChain([new GreedyStep()], { grammar: new GrammarSampler(gbnf, target.vocab) });
  try {
    const prompt = [1, ...target.vocab.encode('copy:', { addSpecial: false }), ...passage, 13];
    const want = await plain(ctx, prompt, passage.length, grammarChain());
    assert.deepEqual(want, passage);
    for (const d of [drafter, new NgramDrafter()]) {
      const r = await speculativeGenerate(ctx, {
        prompt,
        nPredict: passage.length,
        chain: grammarChain(),
        drafter: d,
        nDraft: 6,
      });
      assert.deepEqual(r.tokens, want, d.kind);
      t.diagnostic(
        `${d.kind}: ${r.stats.accepted}/${r.stats.drafted} drafted tokens accepted, ${r.decodes} decodes for ${r.tokens.length} tokens`,
      );
      if (d === drafter) assert.equal(r.stats.accepted, r.stats.drafted);
      else assert.ok(r.stats.accepted >= r.tokens.length / 2);
    }
  } finally {
    drafter.free();
    ctx.free();
  }
});

test('a draft model drafts for several sequences in one batch as for each alone', async () => {
  const one = new DraftModelDrafter(draftModel, { nCtx: 128, nThreads: 2 });
  const many = new DraftModelDrafter(draftModel, { nSeq: 3, nCtx: 128, nThreads: 2 });
  try {
    const ps = prompts(3);
    const alone: Draft[] = [];
    for (const p of ps) {
      one.reset(0);
      alone.push((await one.draft([{ seq: 0, tokens: p, nMax: 6 }]))[0]);
    }
    const together = await many.draft(ps.map((p, seq) => ({ seq, tokens: p, nMax: 6 })));
    assert.deepEqual(
      together.map((d) => d.tokens),
      alone.map((d) => d.tokens),
    );
    // the next draft reuses what each sequence holds (a common prefix) and still agrees
    const longer = ps.map((p, seq) => [...p, ...together[seq].tokens.slice(0, 2), 9]);
    const again = await many.draft(longer.map((p, seq) => ({ seq, tokens: p, nMax: 4 })));
    for (const [seq, p] of longer.entries()) {
      one.reset(0);
      assert.deepEqual(again[seq].tokens, (await one.draft([{ seq: 0, tokens: p, nMax: 4 }]))[0].tokens);
    }
  } finally {
    one.free();
    many.free();
  }
});

test('a draft model evaluates a prompt ahead (prefill): the first draft then evaluates one token and drafts the same', async () => {
  const ahead = new DraftModelDrafter(draftModel, { nSeq: 2, nCtx: 256, nThreads: 2 });
  const cold = new DraftModelDrafter(draftModel, { nSeq: 2, nCtx: 256, nThreads: 2 });
  let evaluated = 0;
  const decode = ahead.ctx.decode.bind(ahead.ctx);
  ahead.ctx.decode = (b) => {
    evaluated += b.tokens.length;
    return decode(b);
  };
  try {
    const ps = prompts(2);
    await ahead.prefill(ps.map((p, seq) => ({ seq, tokens: p })));
    assert.equal(evaluated, ps[0].length + ps[1].length, 'the prompts, once');
    evaluated = 0;
    const reqs = ps.map((p, seq) => ({ seq, tokens: [...p, 11], nMax: 5 }));
    const got = await ahead.draft(reqs);
    // catching up is the new token of each sequence; then four extension steps of two
    assert.equal(evaluated, 2 + 4 * 2);
    assert.deepEqual(
      got.map((d) => d.tokens),
      (await cold.draft(reqs)).map((d) => d.tokens),
    );
  } finally {
    ahead.free();
    cold.free();
  }
});

test('a draft model must share the target vocabulary', async () => {
  const other = await Model.load(ensureModel('tiny-qwen2', 'F32'));
  try {
    assert.throws(
      () => checkDraftCompatible(target, other),
      (e: Error) => {
        assert.ok(e instanceof SpeculativeError);
        assert.match(e.message, /cannot draft for .*vocabulary types differ/);
        return true;
      },
    );
    checkDraftCompatible(target, draftModel);
  } finally {
    other.free();
  }
});

// ---- the target's distribution is kept ----

/** Softmax of logits / temp over the top-k (float64): the chain's distribution, computed independently. */
function chainProbs(logits: Float32Array, temp: number, k: number): Float64Array {
  const ids = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
  const keep = ids.slice(0, k);
  const max = logits[keep[0]];
  const p = new Float64Array(logits.length);
  let sum = 0;
  for (const id of keep) {
    p[id] = Math.exp((logits[id] - max) / temp);
    sum += p[id];
  }
  for (const id of keep) p[id] /= sum;
  return p;
}

test('sampling: the standard rule and the match rule keep the target distribution (chi-square, 10^4 draws)', async (t) => {
  const V = 16;
  const tm = await Model.load(ensureModel('tiny-llama', 'F32', undefined, { vocab: { kind: 'toy-spm', size: V } }));
  const dm = await Model.load(
    ensureModel('tiny-llama', 'F32', undefined, { seed: 3, vocab: { kind: 'toy-spm', size: V } }),
  );
  const tctx = new Context(tm, { nCtx: 64, nThreads: 1 });
  const dctx = new Context(dm, { nCtx: 64, nThreads: 1 });
  try {
    const prompt = [1, 5, 9, 4];
    // target rows come from batched decodes of [history…, d0, d1] (every row kept), drafts'
    // from the draft model; both memoized by prefix
    const targetRows = new Map<string, Float32Array>();
    const draftRows = new Map<string, Float32Array>();
    const targetRow = async (prefix: number[], extra: number[] = []): Promise<void> => {
      const all = [...prefix, ...extra];
      if (targetRows.has(all.join())) return;
      tctx.clearMemory();
      await tctx.decode({ tokens: all, logits: all.map((_, i) => i >= prefix.length - 1) });
      for (let i = prefix.length - 1; i < all.length; i++) {
        targetRows.set(all.slice(0, i + 1).join(), tctx.getLogits(i));
      }
    };
    const draftRow = async (prefix: number[]): Promise<Float32Array> => {
      const key = prefix.join();
      let r = draftRows.get(key);
      if (!r) {
        dctx.clearMemory();
        await dctx.decode({ tokens: prefix });
        r = dctx.getLogits(-1);
        draftRows.set(key, r);
      }
      return r;
    };
    const T = 0.9;
    const K = 12;
    const steps = (seed: number): SamplingStep[] => [new TopKSampler(K), new TempSampler(T), new DistSampler(seed)];
    // expected: p(t1 | prompt) · p(t2 | prompt, t1)
    await targetRow(prompt);
    const p1 = chainProbs(targetRows.get(prompt.join())!, T, K);
    const expected = new Array<number>(V * V).fill(0);
    for (let a = 0; a < V; a++) {
      if (p1[a] === 0) continue;
      await targetRow([...prompt, a]);
      const p2 = chainProbs(targetRows.get([...prompt, a].join())!, T, K);
      for (let b = 0; b < V; b++) expected[a * V + b] = p1[a] * p2[b];
    }

    type Mode = 'standard' | 'match' | 'broken';
    const run = async (mode: Mode, draws: number): Promise<number[]> => {
      const chain = new SamplerChain(steps(42));
      const rng = new Mt19937(7);
      const draftRng = new Mt19937(9);
      const counts = new Array<number>(V * V).fill(0);
      for (let n = 0; n < draws; n++) {
        const got: number[] = [];
        while (got.length < 2) {
          const history = [...prompt, ...got];
          // two drafted tokens: sampled from the draft model's distribution (standard), or its top token (match)
          const draft: Draft = { tokens: [], probs: [] };
          let prefix = history;
          for (let i = 0; i < 2; i++) {
            const q = chainProbs(await draftRow(prefix), T, K);
            let t = 0;
            if (mode === 'match') t = q.indexOf(Math.max(...q));
            else {
              const u = draftRng.nextDouble();
              let run = 0;
              for (t = 0; t < V - 1; t++) {
                run += q[t];
                if (run > u) break;
              }
            }
            draft.tokens.push(t);
            draft.probs!.push(Float32Array.from(q));
            prefix = [...prefix, t];
          }
          if (mode === 'match') delete draft.probs;
          await targetRow(history, draft.tokens);
          const row = (i: number) => targetRows.get([...history, ...draft.tokens.slice(0, i)].join())!;
          if (mode === 'broken') {
            // accepts every draft: the draft model's distribution, not the target's
            got.push(...draft.tokens);
            continue;
          }
          const r = verifyDraft(chain, row, draft, { rng });
          assert.equal(r.rule, mode);
          got.push(...r.tokens);
        }
        counts[got[0] * V + got[1]]++;
      }
      return counts;
    };
    for (const mode of ['standard', 'match'] as const) {
      const c = chiSquare(await run(mode, 10000), expected);
      assert.ok(c.p > 0.01, `${mode}: chi-square ${c.statistic.toFixed(1)} on ${c.df} df, p = ${c.p}`);
      t.diagnostic(`${mode}: chi-square ${c.statistic.toFixed(1)} on ${c.df} df, p = ${c.p.toFixed(3)}`);
    }
    const bad = chiSquare(await run('broken', 10000), expected);
    assert.ok(bad.p < 1e-6, `the test detects a rule that does not keep the distribution (p = ${bad.p})`);
    t.diagnostic(
      `accepting every draft: chi-square ${bad.statistic.toFixed(1)} on ${bad.df} df, p = ${bad.p.toExponential(1)}`,
    );
  } finally {
    tctx.free();
    dctx.free();
    tm.free();
    dm.free();
  }
});
