// ctx.parallel (llama.node 1.x's parallel API) on a generated llama: N requests decoded
// together on the context's batcher give what N sequential completions give; streamed
// pieces carry their request id; stop() ends one request and leaves the others; requests
// beyond n_parallel wait in the queue; the status reports slots and queue; disable()
// returns to one completion at a time; bad configurations are clear errors.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type LlamaCompletionResult,
  type LlamaContext,
  LlamaError,
  type LlamaParallelCompletionResult,
  loadModel,
} from '../src/index.js';
import { tinyLlama } from './helpers/models.js';

const MODEL = tinyLlama();
const PROMPTS = ['Once upon a time', 'The cat sat on', 'In the beginning there was', 'Hello, my name is'];

function isLlamaError(code: string, re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof LlamaError, `expected a LlamaError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return true;
  };
}

describe('parallel completions', () => {
  let ctx: LlamaContext;
  before(async () => {
    // 4 slots of 128 tokens
    ctx = await loadModel({ model: MODEL, n_ctx: 512, n_threads: 1, n_parallel: 4 });
  });
  after(async () => {
    await ctx?.release();
  });

  test('4 requests in parallel give the greedy text of 4 sequential completions', async () => {
    const seq: LlamaCompletionResult[] = [];
    for (const prompt of PROMPTS) {
      seq.push(await ctx.completion({ prompt, n_predict: 24, temperature: 0, return_tokens: true }));
    }
    assert.equal(await ctx.parallel.enable({ n_parallel: 4, n_batch: 512 }), true);
    assert.equal(ctx.parallel.isEnabled(), true);
    try {
      const streamed = new Map<number, string>();
      const reqs = await Promise.all(
        PROMPTS.map((prompt) =>
          ctx.parallel.completion({ prompt, n_predict: 24, temperature: 0, return_tokens: true }, (id, t) => {
            streamed.set(id, (streamed.get(id) ?? '') + t.token);
          }),
        ),
      );
      assert.equal(new Set(reqs.map((r) => r.requestId)).size, 4);
      const par = await Promise.all(reqs.map((r) => r.promise));
      par.forEach((r: LlamaParallelCompletionResult, i) => {
        assert.equal(r.requestId, reqs[i]!.requestId);
        assert.deepEqual(r.tokens, seq[i]!.tokens, `request ${i}: ${JSON.stringify(PROMPTS[i])}`);
        assert.equal(r.text, seq[i]!.text);
        assert.equal(streamed.get(r.requestId) ?? '', r.text);
        assert.equal(typeof r.timings.cache_n, 'number');
      });
      // they ran together: the status counted fewer decodes than tokens
      const st = await ctx.parallel.fetchStatus();
      assert.equal(st.n_parallel, 4);
      assert.equal(st.active_slots, 0);
      assert.ok(st.n_tokens_total > st.n_decode_total * 2, JSON.stringify(st));
      // again: each prompt finds its cached prefix in some slot
      const again = await Promise.all(
        (
          await Promise.all(PROMPTS.map((prompt) => ctx.parallel.completion({ prompt, n_predict: 4, temperature: 0 })))
        ).map((r) => r.promise),
      );
      for (const r of again) assert.equal(r.tokens_cached, r.tokens_evaluated - 1);
    } finally {
      await ctx.parallel.disable();
    }
    assert.equal(ctx.parallel.isEnabled(), false);
  });

  test('stop() ends one request (its promise rejects) and the others finish; a queue beyond the slots', async () => {
    await ctx.parallel.enable({ n_parallel: 2 });
    try {
      const status: number[] = [];
      const sub = ctx.parallel.subscribeToStatus((s) => status.push(s.queued_requests));
      const long = { n_predict: 60, temperature: 0.8, seed: 3, ignore_eos: true };
      let stopped: Awaited<ReturnType<LlamaContext['parallel']['completion']>> | undefined;
      let seen = 0;
      stopped = await ctx.parallel.completion({ prompt: PROMPTS[0], ...long }, () => {
        if (++seen === 3) stopped!.stop();
      });
      const others = await Promise.all(PROMPTS.slice(1).map((prompt) => ctx.parallel.completion({ prompt, ...long })));
      await assert.rejects(stopped.promise, isLlamaError('ERR_CANCELLED', /cancelled/));
      for (const o of others) {
        const r = await o.promise;
        assert.equal(r.tokens_predicted, 60);
        assert.equal(r.interrupted, false);
      }
      sub.remove();
      // three more requests than two slots: some waited in the queue
      assert.ok(Math.max(...status) >= 1, `queue lengths seen: ${status}`);
      assert.equal(ctx.parallel.getStatus().active_slots, 0);
    } finally {
      await ctx.parallel.disable();
    }
  });

  test('a parallel request with a signal; embeddings; plain completions still work afterwards', async () => {
    await ctx.parallel.enable({ n_parallel: 2 });
    try {
      const ac = new AbortController();
      let seen = 0;
      const r = await ctx.parallel.completion(
        { prompt: PROMPTS[1], n_predict: 100, ignore_eos: true, signal: ac.signal },
        () => {
          if (++seen === 2) ac.abort();
        },
      );
      await assert.rejects(r.promise, isLlamaError('ERR_CANCELLED'));
      const e = await ctx.parallel.embedding('hello world');
      const { embedding } = await e.promise;
      assert.equal(embedding.length, 64);
      assert.equal(typeof e.requestId, 'number');
    } finally {
      await ctx.parallel.disable();
    }
    const plain = await ctx.completion({ prompt: PROMPTS[2]!, n_predict: 3, temperature: 0 });
    assert.equal(plain.tokens_predicted, 3);
  });

  test('bad configurations and requests are clear errors', async () => {
    await assert.rejects(
      ctx.parallel.completion({ prompt: 'x' }),
      isLlamaError('ERR_CONTEXT', /Parallel mode is not enabled/),
    );
    await assert.rejects(ctx.parallel.enable({ n_parallel: 33 }), isLlamaError('ERR_OPTION', /n_parallel/));
    await assert.rejects(ctx.parallel.enable({ n_parallel: 128 }), isLlamaError('ERR_OPTION', /n_parallel/));
    await assert.rejects(ctx.parallel.enable({ n_parallel: 0 }), isLlamaError('ERR_OPTION', /n_parallel/));
    await ctx.parallel.enable({ n_parallel: 2 });
    try {
      const bad = await ctx.parallel.completion({ prompt: 'x', top_p: 3 });
      await assert.rejects(bad.promise, isLlamaError('ERR_OPTION', /top_p = 3/));
    } finally {
      await ctx.parallel.disable();
    }
  });
});
