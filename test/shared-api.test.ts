// The API against references in ../shared (skipped, with a note, when it is absent; the
// API's behaviour is tested on generated models in the api-* files): llama.cpp's greedy
// output and top probabilities on stories260K (a trained model), llama.node 0.3.3's own
// test on its model, BERT embeddings against llama.cpp's, and the pooled embedding of a
// generative model next to its text.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type FormattedChatResult, type LlamaContext, LlamaError, loadModel } from '../src/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const STORIES = sharedPath('models/stories260K.gguf');
const TINY = sharedPath('models/tiny-random-llama.gguf');
const PROMPT = 'Once upon a time';
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-shared-api-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

function norm(v: ArrayLike<number>, p = 2): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += Math.abs(v[i]!) ** p;
  return s ** (1 / p);
}

describe('stories260K against llama.cpp', { skip: STORIES ? false : missingShared('models/stories260K.gguf') }, () => {
  let ctx: LlamaContext;
  before(async () => {
    ctx = await loadModel({ model: STORIES!, n_threads: 1, n_ctx: 256 });
  });
  after(async () => {
    await ctx?.release();
  });

  test("greedy output is llama.cpp's (stories260K.ref.json)", async () => {
    const ref = JSON.parse(readFileSync(sharedPath('models/stories260K.ref.json')!, 'utf8')) as {
      cases: { prompt: string; tokens: number[]; greedy: number[] }[];
    };
    const c = ref.cases[0]!;
    const n = 32;
    const r = await ctx.completion({ prompt: c.prompt, n_predict: n, temperature: 0 });
    const promptText = await ctx.detokenize(c.tokens.slice(1));
    const full = await ctx.detokenize([...c.tokens.slice(1), ...c.greedy.slice(0, n)]);
    assert.equal(r.text, full.slice(promptText.length));
    assert.equal(r.tokens_evaluated, 5); // BOS + 4
  });

  test("n_probs: the first token's probability is llama.cpp's", async () => {
    const r = await ctx.completion({ prompt: PROMPT, n_predict: 4, temperature: 0, n_probs: 3 });
    const probs = r.completion_probabilities!;
    // stories260K is confident after "Once upon a time": ',' at ~0.97 (llama.cpp's top10)
    assert.equal(probs[0]!.content, ',');
    assert.ok(Math.abs(probs[0]!.probs[0]!.prob - 0.968718) < 0.01);
  });

  test('a generative model: mean-pooled embedding beside its greedy text', async () => {
    const mean = await loadModel({ model: STORIES!, embedding: true, n_threads: 1, n_ctx: 128 });
    try {
      const a = (await mean.embedding(PROMPT)).embedding;
      assert.equal(a.length, 64);
      assert.ok(Math.abs(norm(a) - 1) < 1e-5);
      const r = await mean.completion({ prompt: PROMPT, n_predict: 4, temperature: 0 });
      assert.equal(r.text, ', there was a');
    } finally {
      await mean.release();
    }
  });
});

describe("llama.node 0.3.3's test", { skip: TINY ? false : missingShared('models/tiny-random-llama.gguf') }, () => {
  test('basic completion, session save/load, release', async () => {
    let tokens = '';
    const model = await loadModel({ model: TINY! });
    const result = await model.completion(
      { prompt: 'My name is Merve and my favorite', temperature: 0, max_length: 100, n_predict: 10, seed: 0 },
      (data) => {
        assert.equal(typeof data.token, 'string');
        tokens += data.token;
      },
    );
    assert.equal(tokens, result.text);
    assert.equal(result.tokens_predicted, 10);
    assert.equal(result.tokens_evaluated, 9); // BOS + 8
    assert.equal(result.truncated, false);
    assert.equal(Object.keys(result.timings).length, 8);
    const sess = join(dir, 'tmp.sess');
    await model.saveSession(sess);
    const loaded = await model.loadSession(sess);
    assert.equal(loaded.tokens_loaded, 9 + 9);
    await model.release();
  });

  test('tokenize, detokenize, getFormattedChat', async () => {
    const model = await loadModel({ model: TINY! });
    try {
      const { tokens } = await model.tokenize('Once upon a time');
      assert.ok(tokens instanceof Int32Array);
      assert.deepEqual(Array.from(tokens), [9038, 2501, 263, 931]);
      assert.equal(await model.detokenize(Array.from(tokens)), 'Once upon a time');
      assert.equal(await model.detokenize([123, 123, 123]), 'xxx');
      for (const text of ['Hello world', ' leading space', 'ünïcödé 字 🦙', 'a\nb\tc']) {
        assert.equal(await model.detokenize(Array.from((await model.tokenize(text)).tokens)), text);
      }
      const expected = '<|im_start|>user\nHello<|im_end|>\n<|im_start|>bot\nHi<|im_end|>\n<|im_start|>assistant\n';
      assert.equal(
        model.getFormattedChat([
          { role: 'user', text: 'Hello' },
          { role: 'bot', text: 'Hi' },
        ]),
        expected,
      );
      assert.equal(
        model.getFormattedChat([
          { role: 'user', content: 'Hello' },
          { role: 'bot', content: 'Hi' },
        ]),
        expected,
      );
      const full = model.getFormattedChat([{ role: 'user', content: 'Hello' }], '', {
        jinja: true,
      }) as FormattedChatResult;
      assert.equal(full.type, 'llama-chat');
      assert.equal(full.prompt, '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n');
      const info = model.getModelInfo();
      assert.equal(info.chatTemplates.minja.default, false);
      assert.equal(info.isChatTemplateSupported, false);
      assert.equal(info.metadata['general.architecture'], 'llama');
      // a completion from messages formats them the same way
      const r = await model.completion({ messages: [{ role: 'user', text: 'Hello' }], n_predict: 3, temperature: 0 });
      assert.equal(r.tokens_evaluated, (await model.tokenize(full.prompt)).tokens.length + 1);
      assert.equal(r.content, r.text);
    } finally {
      await model.release();
    }
  });
});

for (const type of ['F16', 'Q8_0']) {
  const rel = `fixtures/rand-bert-${type}.gguf`;
  const path = sharedPath(rel);
  describe(`rand-bert-${type}`, { skip: path ? false : missingShared(rel) }, () => {
    let ctx: LlamaContext;
    const ref = path
      ? (JSON.parse(readFileSync(path.replace(/\.gguf$/, '.ref.json'), 'utf8')) as {
          cases: { prompt: string; embedding: number[] }[];
        })
      : { cases: [] };
    before(async () => {
      ctx = await loadModel({ model: path!, embedding: true, n_threads: 1 });
    });
    after(() => ctx?.release());

    test("embeddings match llama.cpp's (cosine ≥ 0.9999, L2 norm 1)", async () => {
      for (const c of ref.cases) {
        const { embedding } = await ctx.embedding(c.prompt);
        assert.ok(embedding instanceof Float32Array);
        assert.equal(embedding.length, c.embedding.length);
        const cos = cosine(embedding, c.embedding);
        assert.ok(cos >= 0.9999, `${c.prompt}: cosine ${cos}`);
        assert.ok(Math.abs(norm(embedding) - 1) < 1e-5);
      }
    });

    test('embd_normalize: -1 raw (llama.node 0.3.3), 0 max-abs, 1 taxicab, 2 L2, 3 p-norm', async () => {
      const text = ref.cases[0]!.prompt;
      const raw = (await ctx.embedding(text, { embd_normalize: -1 })).embedding;
      const l2 = (await ctx.embedding(text)).embedding;
      const n = norm(raw);
      assert.ok(Math.abs(n - 1) > 1e-3, 'raw is not normalized');
      for (let i = 0; i < raw.length; i++) assert.ok(Math.abs(raw[i]! / n - l2[i]!) < 1e-6);
      const maxAbs = (await ctx.embedding(text, { embd_normalize: 0 })).embedding;
      assert.ok(Math.abs(Math.max(...maxAbs.map(Math.abs)) - 32760) < 0.01);
      assert.ok(Math.abs(norm((await ctx.embedding(text, { embd_normalize: 1 })).embedding, 1) - 1) < 1e-5);
      assert.ok(Math.abs(norm((await ctx.embedding(text, { embd_normalize: 3 })).embedding, 3) - 1) < 1e-5);
      await assert.rejects(ctx.embedding(text, { embd_normalize: -2 }), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_OPTION' && /embd_normalize/.test(e.message));
        return true;
      });
    });

    test('an embedding model does not generate; a text longer than the context is an error', async () => {
      await assert.rejects(ctx.completion({ prompt: 'hello' }), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_CONTEXT' && /embedding model/.test(e.message));
        return true;
      });
      await assert.rejects(ctx.embedding('word '.repeat(2000)), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_CONTEXT', String(e));
        return true;
      });
    });
  });
}
