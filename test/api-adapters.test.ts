// LoRA adapters, speculative decoding and reranking through the library (loadModel →
// LlamaContext, the engine worker, the one generation loop): adapters from lora_list and
// applyLoraAdapters give the model layer's logits, per-request scales, units with other
// adapters in other steps; speculative decoding in the unit and the batcher's slots gives
// plain decoding's text (greedy, and sampled with a seed) and counts drafts in timings;
// rerank in llama.node's shape, and its errors.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, type LlamaError, loadModel } from '../src/api/index.js';
import { ensureModel, generateLora } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, LoraAdapter, Model, rerankScore, rerankTokens } from '../src/model/index.js';
import { clientModel, GREEDY, THINKING_HERMES, thinking } from './helpers/clients.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-adapters-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = ensureModel('tiny-llama', 'F32');
const DRAFT = ensureModel('tiny-llama', 'F32', undefined, { seed: 2, shape: { nLayer: 1 } });
let loraA: string;
let loraB: string;

before(() => {
  setLogCallback(() => {});
  loraA = generateLora(
    BASE,
    { targets: ['attn_q', 'attn_v', 'ffn_down', 'output'], rank: 8, seed: 3 },
    join(dir, 'a.gguf'),
  ).path;
  loraB = generateLora(BASE, { targets: ['ffn_up'], rank: 4, alpha: 0, seed: 4 }, join(dir, 'b.gguf')).path;
});

const PROMPTS = ['once upon a time', 'the cat sat on the mat', 'hello world, hello world, hello'];

async function texts(ctx: LlamaContext, extra: Record<string, unknown> = {}): Promise<string[]> {
  const out: string[] = [];
  for (const prompt of PROMPTS)
    out.push((await ctx.completion({ prompt, n_predict: 20, temperature: 0, ...extra })).text);
  return out;
}

describe('LoRA adapters', () => {
  test('lora_list gives the model layer’s logits with the adapter; other contexts on the model keep theirs', async () => {
    const plain = await loadModel({ model: BASE, n_ctx: 128 });
    const adapted = await loadModel({ model: BASE, n_ctx: 128, lora_list: [{ path: loraA, scaled: 0.7 }] });
    const single = await loadModel({ model: BASE, n_ctx: 128, lora: loraA, lora_scaled: 0.7 });
    try {
      assert.deepEqual(adapted.getLoadedLoraAdapters(), [{ path: loraA, scaled: 0.7 }]);
      assert.deepEqual(single.getLoadedLoraAdapters(), [{ path: loraA, scaled: 0.7 }]);
      const top = (c: LlamaContext) =>
        c.completion({ prompt: 'once upon a time', n_predict: 1, temperature: 0, top_logits: 5 });
      const [p, a, s] = await Promise.all([top(plain), top(adapted), top(single)]);
      assert.deepEqual(a.top_logits, s.top_logits);
      assert.notDeepEqual(a.top_logits, p.top_logits);
      // the same adapter at the model layer
      const model = await Model.load(BASE);
      const adapter = await LoraAdapter.load(model, loraA);
      const ctx = new Context(model, { nCtx: 64 });
      try {
        ctx.setLoras([{ adapter, scale: 0.7 }]);
        const tokens = (await adapted.tokenize('once upon a time', { add_special: true, parse_special: true })).tokens;
        await ctx.decode({ tokens: Array.from(tokens) });
        const logits = ctx.getLogits(-1);
        for (const [id, logit] of a.top_logits!) assert.ok(Math.abs(logits[id] - logit) < 1e-4, `token ${id}`);
      } finally {
        ctx.free();
        adapter.free();
        model.free();
      }
    } finally {
      await Promise.all([plain.release(), adapted.release(), single.release()]);
    }
  });

  test('applyLoraAdapters, removeLoraAdapters and per-request scales', async () => {
    const plain = await loadModel({ model: BASE, n_ctx: 256 });
    const ctx = await loadModel({ model: BASE, n_ctx: 256 });
    const ref = await loadModel({
      model: BASE,
      n_ctx: 256,
      lora_list: [{ path: loraA }, { path: loraB, scaled: 0.5 }],
    });
    const onlyB = await loadModel({ model: BASE, n_ctx: 256, lora_list: [{ path: loraB, scaled: 0.5 }] });
    try {
      const base = await texts(plain);
      const both = await texts(ref);
      assert.notDeepEqual(both, base);
      assert.deepEqual(ctx.getLoadedLoraAdapters(), []);
      await ctx.applyLoraAdapters([{ path: loraA }, { path: loraB, scaled: 0.5 }]);
      assert.deepEqual(ctx.getLoadedLoraAdapters(), [
        { path: loraA, scaled: 1 },
        { path: loraB, scaled: 0.5 },
      ]);
      // the cache made without adapters is not reused with them
      assert.deepEqual(await texts(ctx), both);
      // a request's own scales: adapters left out are off
      assert.deepEqual(await texts(ctx, { lora: [{ id: 1, scale: 0.5 }] }), await texts(onlyB));
      assert.deepEqual(await texts(ctx, { lora: [] }), base);
      await ctx.removeLoraAdapters();
      assert.deepEqual(ctx.getLoadedLoraAdapters(), []);
      assert.deepEqual(await texts(ctx), base);
      // errors: a request naming an adapter the context lacks, a file that is not an adapter
      await assert.rejects(
        ctx.completion({ prompt: 'x', n_predict: 1, lora: [{ id: 0, scale: 1 }] }),
        (e: LlamaError) => {
          assert.equal(e.code, 'ERR_OPTION');
          assert.match(e.message, /no adapter 0 \(the context has 0\)/);
          return true;
        },
      );
      await assert.rejects(ctx.applyLoraAdapters([{ path: BASE }]), (e: LlamaError) => {
        assert.equal(e.code, 'ERR_MODEL');
        assert.match(e.message, /general\.type is '', expected 'adapter'/);
        return true;
      });
      await assert.rejects(ctx.applyLoraAdapters([{ path: loraA, scaled: Number.NaN }]), /scaled = NaN/);
      await assert.rejects(
        loadModel({ model: ensureModel('tiny-qwen2', 'Q8_0'), lora_list: [{ path: loraA }] }),
        /the adapter is for architecture 'llama', but the model .* is 'qwen2'/,
      );
    } finally {
      await Promise.all([plain.release(), ctx.release(), ref.release(), onlyB.release()]);
    }
  });

  test('parallel requests with different adapters: each gets what it gets alone', async () => {
    const ctx = await loadModel({ model: BASE, n_ctx: 512, lora_list: [{ path: loraA }, { path: loraB }] });
    try {
      const sets = [undefined, [{ id: 0, scale: 1 }], [{ id: 1, scale: 0.5 }], []];
      const alone: string[] = [];
      for (const lora of sets) {
        alone.push(
          (
            await ctx.completion({
              prompt: 'once upon a time',
              n_predict: 16,
              temperature: 0,
              ...(lora ? { lora } : {}),
            })
          ).text,
        );
      }
      assert.equal(new Set(alone).size, 4);
      await ctx.parallel.enable({ n_parallel: 4 });
      const reqs = await Promise.all(
        sets.map((lora) =>
          ctx.parallel.completion({
            prompt: 'once upon a time',
            n_predict: 16,
            temperature: 0,
            ...(lora ? { lora } : {}),
          }),
        ),
      );
      assert.deepEqual(
        (await Promise.all(reqs.map((r) => r.promise))).map((r) => r.text),
        alone,
      );
      // n_cmpl: the followers copy the leader's cache and decode with its adapters
      // (greedy: every choice is the text of that adapter set alone)
      for (const [i, lora] of sets.entries()) {
        const r = await ctx.parallel.completion({
          prompt: 'once upon a time',
          n_predict: 16,
          temperature: 0,
          n_cmpl: 3,
          ...(lora ? { lora } : {}),
        });
        const out = await r.promise;
        assert.deepEqual(
          out.choices?.map((c) => c.text),
          [alone[i], alone[i], alone[i]],
          `set ${i}`,
        );
      }
    } finally {
      await ctx.release();
    }
  });
});

describe('speculative decoding', () => {
  test('a draft model and n-gram lookup: plain decoding’s text, greedy and sampled, drafts counted', async () => {
    const plain = await loadModel({ model: BASE, n_ctx: 256 });
    const draft = await loadModel({ model: BASE, n_ctx: 256, model_draft: DRAFT, draft_max: 4, draft_p_min: 0 });
    const ngram = await loadModel({ model: BASE, n_ctx: 256, spec_type: 'ngram', draft_max: 6 });
    try {
      for (const extra of [{}, { temperature: 0.8, seed: 11 }]) {
        const want = await texts(plain, extra);
        for (const c of [draft, ngram]) assert.deepEqual(await texts(c, extra), want);
      }
      const r = await draft.completion({ prompt: 'once upon a time', n_predict: 20, temperature: 0 });
      assert.ok(r.timings.draft_n! > 0 && r.timings.draft_n_accepted! >= 0);
      // off for one request
      const off = await draft.completion({ prompt: 'once upon a time', n_predict: 20, temperature: 0, draft_max: 0 });
      assert.equal(off.timings.draft_n, undefined);
      assert.equal(off.text, r.text);
      assert.equal((await plain.completion({ prompt: 'x', n_predict: 2 })).timings.draft_n, undefined);
    } finally {
      await Promise.all([plain.release(), draft.release(), ngram.release()]);
    }
  });

  test('a reasoning reply with a thinking budget and a grammar after the block: plain decoding’s text', async () => {
    // the budget forces the block's end and the grammar attaches after it: a unit drafts
    // only outside such a block (verified drafts would skip the forced tokens)
    const model = clientModel();
    const base = { model, n_ctx: 1024, chat_template: THINKING_HERMES };
    const plain = await loadModel(base);
    const spec = await loadModel({
      ...base,
      model_draft: ensureModel('tiny-llama', 'F32', undefined, { shape: { nCtxTrain: 4096 } }),
      draft_max: 6,
      draft_p_min: 0,
    });
    try {
      const o = {
        messages: [{ role: 'user', content: 'Describe a person.' }],
        ...thinking(6),
        response_format: {
          type: 'json_schema' as const,
          json_schema: { schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
        },
        n_predict: 40,
        ...GREEDY,
      };
      const want = await plain.completion(o);
      const got = await spec.completion(o);
      assert.ok(got.timings.draft_n! > 0, 'drafts after the block');
      assert.equal(got.text, want.text);
      assert.match(want.text, /<\/think>/);
    } finally {
      await Promise.all([plain.release(), spec.release()]);
    }
  });

  test('a passage copied under a token grammar: drafts accepted, in parallel slots too', async () => {
    const plain = await loadModel({ model: BASE, n_ctx: 512 });
    const spec = await loadModel({ model: BASE, n_ctx: 512, model_draft: DRAFT, draft_max: 6, draft_p_min: 0.5 });
    const ngram = await loadModel({ model: BASE, n_ctx: 512, spec_type: 'ngram' });
    try {
      const passage = Array.from((await plain.tokenize('the cat sat on the mat and the dog sat on the log')).tokens);
      const grammar = `root ::= ${passage.map((t) => `<[${t}]>`).join(' ')}`;
      const o = { prompt: [1, ...passage, 13], n_predict: passage.length, temperature: 0, grammar };
      const want = await plain.completion(o);
      for (const c of [spec, ngram]) {
        const r = await c.completion(o);
        assert.equal(r.text, want.text);
        assert.ok(r.timings.draft_n_accepted! >= passage.length / 2, `${JSON.stringify(r.timings)}`);
        await c.parallel.enable({ n_parallel: 3 });
        const reqs = await Promise.all([0, 1, 2].map(() => c.parallel.completion(o)));
        for (const p of await Promise.all(reqs.map((x) => x.promise))) {
          assert.equal(p.text, want.text);
          assert.ok(p.timings.draft_n_accepted! > 0);
        }
        const st = await c.parallel.fetchStatus();
        assert.ok(st.n_draft_accepted_total > 0 && st.n_draft_total >= st.n_draft_accepted_total);
      }
    } finally {
      await Promise.all([plain.release(), spec.release(), ngram.release()]);
    }
  });

  test('a sliding-window model (window 8): drafts in 3 slots, past the ring’s wrap, give sequential plain decoding’s tokens', async () => {
    // n_parallel 3, n_ubatch 32: the window's ring has pad256(3·8 + 32) = 256 cells, which
    // three sequences of 40 + 100 tokens wrap
    const model = ensureModel('tiny-gemma3', 'Q8_0');
    const draftModel = ensureModel('tiny-gemma3', 'Q8_0', undefined, { seed: 2, shape: { nLayer: 2 } });
    const o = { model, n_ctx: 3 * 256, n_batch: 64, n_ubatch: 32, n_parallel: 3 } as const;
    const plain = await loadModel(o);
    const draft = await loadModel({ ...o, model_draft: draftModel, draft_max: 6, draft_p_min: 0 });
    const ngram = await loadModel({ ...o, spec_type: 'ngram', draft_max: 6 });
    try {
      const bos = (await plain.tokenize('a')).tokens[0] ?? 2;
      const prompts = [0, 1, 2].map((k) => {
        const part = Array.from({ length: 12 }, (_, i) => 10 + ((k * 97 + i * 31) % 480));
        return [bos, ...part, ...part, ...part, ...part.slice(0, 3)];
      });
      const req = (prompt: number[]) => ({
        prompt,
        n_predict: 100,
        temperature: 0,
        ignore_eos: true,
        return_tokens: true,
      });
      const want: unknown[] = [];
      for (const p of prompts) want.push((await plain.completion(req(p))).tokens);
      for (const [name, c] of [
        ['draft model', draft],
        ['n-gram', ngram],
      ] as const) {
        await c.parallel.enable({ n_parallel: 3 });
        const reqs = await Promise.all(prompts.map((p) => c.parallel.completion(req(p))));
        const got = await Promise.all(reqs.map((r) => r.promise));
        got.forEach((g, i) => {
          assert.deepEqual(g.tokens, want[i], `${name}, slot ${i}`);
        });
        const st = await c.parallel.fetchStatus();
        // (this random model's greedy text soon repeats one token, so most drafts are
        // accepted; speculative.test.ts checks the window's cells after rejections)
        assert.ok(st.n_draft_accepted_total > 0, `${name}: drafts accepted ${JSON.stringify(st)}`);
      }
    } finally {
      await Promise.all([plain.release(), draft.release(), ngram.release()]);
    }
  });

  test('bad speculative options and an incompatible draft model fail clearly', async () => {
    await assert.rejects(loadModel({ model: BASE, spec_type: 'draft' }), /spec_type = "draft": needs a draft model/);
    await assert.rejects(loadModel({ model: BASE, model_draft: DRAFT, draft_p_min: 2 }), /draft_p_min = 2/);
    await assert.rejects(
      loadModel({ model: BASE, model_draft: ensureModel('tiny-qwen2', 'Q8_0') }),
      (e: LlamaError) => {
        assert.equal(e.code, 'ERR_MODEL');
        assert.match(e.message, /cannot draft for .*vocabulary types differ/);
        return true;
      },
    );
  });
});

describe('reranking', () => {
  test('rerank: llama.node’s shape, best first, the model layer’s scores; normalize; parallel.rerank', async () => {
    const path = ensureModel('tiny-bert-reranker', 'F32');
    const ctx = await loadModel({ model: path });
    const model = await Model.load(path);
    try {
      const q = 'what is a panda?';
      const docs = ['hi', 'The giant panda is a bear species endemic to China.', 'paris', 'pandas eat bamboo'];
      const raw = await ctx.rerank(q, docs);
      const norm = await ctx.rerank(q, docs, { normalize: 1 });
      assert.deepEqual(
        raw.map((r) => r.index),
        norm.map((r) => r.index),
      );
      for (let i = 1; i < raw.length; i++) assert.ok(raw[i - 1]!.score >= raw[i]!.score);
      const c = new Context(model, { embeddings: true });
      try {
        for (const r of norm) {
          assert.equal(r.document, docs[r.index]);
          c.clearMemory();
          await c.decode({ tokens: rerankTokens(model, q, docs[r.index]!) });
          const head = c.getEmbeddingsSeq(0);
          // (rerank decodes the pairs together: from 64 rows attention takes ggml-cpu's
          // tiled kernel, whose sums differ from one pair's by ~1e-4, as in llama.cpp)
          assert.ok(Math.abs(r.score - rerankScore(model, head, true)) < 1e-3);
          assert.ok(r.score > 0 && r.score < 1);
          assert.ok(Math.abs(raw.find((x) => x.index === r.index)!.score - head[0]) < 1e-3);
        }
      } finally {
        c.free();
      }
      assert.deepEqual(await ctx.rerank(q, []), []);
    } finally {
      await ctx.release();
      model.free();
    }
  });

  test('a Qwen3-style reranker on a generative context; parallel.rerank; models that cannot rank', async () => {
    const ctx = await loadModel({ model: ensureModel('tiny-qwen3-reranker', 'F32'), n_ctx: 512 });
    const llama = await loadModel({ model: BASE, n_ctx: 128 });
    const bert = await loadModel({ model: ensureModel('tiny-bert', 'F16') });
    try {
      const docs = ['hi', 'pandas eat bamboo', 'paris'];
      const r = await ctx.rerank('what is a panda?', docs);
      assert.equal(r.length, 3);
      for (const x of r) assert.ok(x.score > 0 && x.score < 1, 'a softmaxed yes probability');
      await ctx.parallel.enable({ n_parallel: 2 });
      const p = await ctx.parallel.rerank('what is a panda?', docs);
      assert.deepEqual(await p.promise, r);
      // it still generates
      assert.equal((await ctx.completion({ prompt: 'hi', n_predict: 2 })).tokens_predicted, 2);
      await assert.rejects(llama.rerank('q', ['d']), (e: LlamaError) => {
        assert.equal(e.code, 'ERR_CONTEXT');
        assert.match(e.message, /cannot rerank: llama models cannot rank/);
        return true;
      });
      await assert.rejects(bert.rerank('q', ['d']), /is not a reranker/);
      await assert.rejects(ctx.rerank('q', 'd' as unknown as string[]), /documents = "d": must be an array of strings/);
    } finally {
      await Promise.all([ctx.release(), llama.release(), bert.release()]);
    }
  });
});
