// ctx.parallel (llama.node 1.x's parallel API) on a generated llama: N requests decoded
// together on the context's batcher give what N sequential completions give; streamed
// pieces carry their request id; stop() ends one request and leaves the others; requests
// beyond n_parallel wait in the queue; the status reports slots and queue; disable()
// returns to one completion at a time; bad configurations are clear errors; a prompt goes
// to the slot it gains from, else an empty one, else the least recently used (chooseSlot).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chooseSlot } from '../src/generation/batcher.js';
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

  test('interrupt() resolves with the partial result, and the queued request takes the freed slot at once; onPrompt', async () => {
    await ctx.parallel.enable({ n_parallel: 1 });
    try {
      let seen = 0;
      let third!: () => void;
      const started = new Promise<void>((res) => {
        third = res;
      });
      const prompts: [number, unknown][] = [];
      const a = await ctx.parallel.completion(
        { prompt: PROMPTS[0], n_predict: 100_000, ignore_eos: true, prefix_key: '' },
        () => {
          if (++seen === 3) third();
        },
        (id, info) => prompts.push([id, info]),
      );
      await started;
      // waits for the only slot
      const b = await ctx.parallel.completion({ prompt: PROMPTS[1], n_predict: 4, temperature: 0 });
      for (let i = 0; i < 200 && (await ctx.parallel.fetchStatus()).queued_requests === 0; i++) {
        await new Promise((r) => setTimeout(r, 5));
      }
      assert.equal((await ctx.parallel.fetchStatus()).queued_requests, 1);
      a.interrupt();
      const ra = await a.promise;
      assert.equal(ra.interrupted, true);
      assert.ok(ra.tokens_predicted >= 3 && ra.tokens_predicted < 100_000, String(ra.tokens_predicted));
      assert.equal(ra.prefix_key, (prompts[0]![1] as { prefix_key: string }).prefix_key);
      // B must not wait for another request to wake the loop
      const timeout = new Promise<'timeout'>((res) => setTimeout(() => res('timeout'), 20_000).unref());
      const rb = await Promise.race([b.promise, timeout]);
      assert.notEqual(rb, 'timeout', 'the queued request never started');
      assert.equal((rb as LlamaCompletionResult).tokens_predicted, 4);
      const n = (await ctx.tokenize(PROMPTS[0]!, { add_special: true, parse_special: true })).tokens.length;
      assert.deepEqual(prompts, [[a.requestId, { n_prompt_tokens: n, prefix_key: ra.prefix_key }]]);
      assert.match(ra.prefix_key ?? '', new RegExp(`^${n}-[0-9a-f]{16}$`));
    } finally {
      await ctx.parallel.disable();
    }
  });

  test('a prompt that gains from no slot takes an empty one, else the least recently used, not an active conversation', async () => {
    await ctx.parallel.enable({ n_parallel: 3 });
    try {
      const run = async (prompt: number[]) =>
        (await ctx.parallel.completion({ prompt, n_predict: 4, temperature: 0, ignore_eos: true, return_tokens: true }))
          .promise;
      const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);
      // two conversations with a shared 8-token system prompt, and a long one-off request
      const system = [1, ...range(20, 7)];
      const turn = async (prompt: number[]) => {
        const r = await run(prompt);
        return { r, all: [...prompt, ...r.tokens!] };
      };
      const x1 = await turn([...system, ...range(30, 12)]);
      const x2 = await turn([...system, ...range(50, 12)]);
      const j = await run([1, ...range(70, 40)]);
      // each took a slot of its own (earlier tests' slots share at most BOS with them)
      assert.ok(j.tokens_cached <= 1, `cached ${j.tokens_cached}`);
      assert.ok(x2.r.tokens_cached <= 1, `cached ${x2.r.tokens_cached}: X2 took X1's slot`);
      // both conversations go on in their own slots (all but the last token, never decoded)
      const x1b = await turn([...x1.all, ...range(130, 5)]);
      const x2b = await turn([...x2.all, ...range(140, 5)]);
      assert.equal(x1b.r.tokens_cached, x1.all.length - 1);
      assert.equal(x2b.r.tokens_cached, x2.all.length - 1);
      // a new conversation: it would discard fewer tokens in X1's slot (it shares the system
      // prompt with it) than in the one-off's, but the one-off's slot is the least recently used
      const k = await turn([...system, ...range(90, 12)]);
      assert.ok(k.r.tokens_cached <= 1, `cached ${k.r.tokens_cached}: K took a conversation's slot`);
      // so both conversations still find their slots
      const x1c = await run([...x1b.all, ...range(150, 5)]);
      const x2c = await run([...x2b.all, ...range(160, 5)]);
      assert.equal(x1c.tokens_cached, x1b.all.length - 1);
      assert.equal(x2c.tokens_cached, x2b.all.length - 1);
      // a prompt that mostly repeats a slot's tokens goes to that slot
      const y = await run([...k.all.slice(0, -2), ...range(170, 3)]);
      assert.equal(y.tokens_cached, k.all.length - 2);
    } finally {
      await ctx.parallel.disable();
    }
  });

  test('chooseSlot: the most gain, else an empty slot, else the least recently used', () => {
    const c = (commonPrefix: number, cached: number, lastUsed: number) => ({ commonPrefix, cached, lastUsed });
    // a returning conversation: its slot, whatever the others
    assert.equal(chooseSlot([c(0, 0, 0), c(40, 41, 5), c(10, 12, 1)]), 1);
    // equal gains: the least recently used
    assert.equal(chooseSlot([c(10, 10, 7), c(10, 10, 3)]), 1);
    // no gain (a shared system prompt): an empty slot, not the least lossy full one
    assert.equal(chooseSlot([c(30, 70, 9), c(0, 0, 4), c(0, 0, 2)]), 2);
    // no gain, none empty: the least recently used, though it loses the most tokens
    assert.equal(chooseSlot([c(30, 70, 9), c(1, 90, 2), c(30, 65, 8)]), 1);
    // a gain of exactly 0 is no gain
    assert.equal(chooseSlot([c(10, 20, 9), c(0, 5, 1)]), 1);
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
