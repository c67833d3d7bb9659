// loadModel / LlamaContext.completion through the engine worker, on a generated tiny llama
// (test/helpers/models.ts; llama.cpp's greedy output on stories260K is checked in
// shared-api.test.ts): llama.node's result shape, streamed tokens concatenating to the
// text, stop strings never streamed, n_predict / ignore_eos / n_keep with context shift /
// truncation, prefix reuse, n_probs, stopCompletion and AbortSignal, a second concurrent
// completion, bad options.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Engine } from '../src/api/engine.js';
import { checkModelOptions } from '../src/api/options.js';
import {
  type LlamaCompletionResult,
  type LlamaCompletionToken,
  type LlamaContext,
  LlamaError,
  loadModel,
} from '../src/index.js';
import { TINY_EOS, tinyLlama } from './helpers/models.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODEL = tinyLlama();
/** Output in plain letters: every token is one streamed piece (the random model's bytes may not be UTF-8). */
const LETTERS = 'root ::= [a-z ]+';
const PROMPT = 'Once upon a time';

function isLlamaError(code: string, re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof LlamaError, `expected a LlamaError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return true;
  };
}

async function run(ctx: LlamaContext, o: Parameters<LlamaContext['completion']>[0]) {
  const pieces: LlamaCompletionToken[] = [];
  const r = await ctx.completion(o, (t) => pieces.push(t));
  return { r, pieces, streamed: pieces.map((p) => p.token).join('') };
}

describe('completion', () => {
  let ctx: LlamaContext;
  before(async () => {
    ctx = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 256 });
  });
  after(async () => {
    await ctx?.release();
  });

  test("llama.node's result shape; streamed tokens concatenate to the text", async () => {
    const { r, pieces, streamed } = await run(ctx, { prompt: PROMPT, n_predict: 20, temperature: 0, seed: 0 });
    assert.ok(pieces.length > 0 && pieces.every((p) => typeof p.token === 'string' && p.token !== ''));
    assert.equal(streamed, r.text);
    assert.equal(r.tokens_predicted, 20);
    assert.equal(r.tokens_evaluated, (await ctx.tokenize(PROMPT)).tokens.length + 1); // BOS + the prompt
    assert.equal(r.stopped_limit, true);
    assert.equal(r.stopped_limited, true);
    assert.equal(r.stopped_eos, false);
    assert.equal(r.stopped_word, false);
    assert.equal(r.stopping_word, '');
    assert.equal(r.truncated, false);
    assert.equal(r.interrupted, false);
    assert.equal(r.context_full, false);
    assert.equal(r.chat_format, 0);
    assert.deepEqual(Object.keys(r.timings).sort(), [
      'predicted_ms',
      'predicted_n',
      'predicted_per_second',
      'predicted_per_token_ms',
      'prompt_ms',
      'prompt_n',
      'prompt_per_second',
      'prompt_per_token_ms',
    ]);
    assert.equal(r.timings.predicted_n, 20);
    assert.ok(r.timings.predicted_ms > 0 && r.timings.predicted_per_second > 0);
  });

  test('the cached prefix is reused by the next completion', async () => {
    await run(ctx, { prompt: PROMPT, n_predict: 4, temperature: 0 });
    const { r } = await run(ctx, { prompt: `${PROMPT}, there`, n_predict: 4, temperature: 0 });
    const shared = (await ctx.tokenize(PROMPT)).tokens.length; // BOS + all but maybe the last piece
    assert.ok(r.tokens_cached >= shared, `tokens_cached ${r.tokens_cached}`);
    assert.equal(r.timings.prompt_n, r.tokens_evaluated - r.tokens_cached);
    // the same prompt again: all but the last token come from the cache
    const again = await run(ctx, { prompt: `${PROMPT}, there`, n_predict: 4, temperature: 0 });
    assert.equal(again.r.tokens_cached, again.r.tokens_evaluated - 1);
    assert.equal(again.r.text, r.text);
  });

  test('seeded sampling is reproducible; different seeds differ', async () => {
    const a = await run(ctx, { prompt: PROMPT, n_predict: 24, temperature: 1, seed: 7 });
    const b = await run(ctx, { prompt: PROMPT, n_predict: 24, temperature: 1, seed: 7 });
    const c = await run(ctx, { prompt: PROMPT, n_predict: 24, temperature: 1, seed: 8 });
    assert.equal(a.r.text, b.r.text);
    assert.notEqual(a.r.text, c.r.text);
  });

  test('stop strings end generation and never reach the streamed text (12 seeds)', async () => {
    let stoppedRuns = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const base = { prompt: PROMPT, n_predict: 48, temperature: 1, seed };
      const full = (await run(ctx, base)).r.text;
      // stop strings taken from this seed's text (two letters, often two tokens), and one that does not occur
      const found = [...full.matchAll(/[a-z]{2}/g)].map((m) => m[0]);
      const stops = [found[2], found[found.length - 1], 'xyzzy'].filter((s): s is string => s !== undefined);
      const { r, streamed, pieces } = await run(ctx, { ...base, stop: stops });
      assert.equal(streamed, r.text);
      for (const s of stops) assert.ok(!streamed.includes(s), `seed ${seed}: '${s}' leaked into ${streamed}`);
      // no piece ever ended in a possible start of a stop string that then completed it
      const at = Math.min(...stops.map((s) => (full.includes(s) ? full.indexOf(s) : Infinity)));
      if (Number.isFinite(at)) {
        stoppedRuns++;
        assert.equal(r.stopped_word, true);
        assert.equal(r.stopped_words, true);
        assert.equal(r.text, full.slice(0, at), `seed ${seed}`);
        assert.ok(stops.includes(r.stopping_word));
        assert.ok(full.slice(at).startsWith(r.stopping_word));
        let acc = '';
        for (const p of pieces) {
          acc += p.token;
          assert.ok(full.startsWith(acc));
        }
      } else {
        assert.equal(r.text, full);
      }
    }
    assert.ok(stoppedRuns >= 8, `only ${stoppedRuns} runs hit a stop string`);
  });

  test('n_predict 0 evaluates the prompt only; ignore_eos runs to n_predict', async () => {
    const zero = await run(ctx, { prompt: PROMPT, n_predict: 0 });
    assert.equal(zero.r.text, '');
    assert.equal(zero.r.tokens_predicted, 0);
    assert.equal(zero.r.stopped_limit, true);
    // bias EOS up to make it end
    const bias = { logit_bias: [[TINY_EOS, 30]] as [number, number][] };
    const ended = (await run(ctx, { prompt: PROMPT, n_predict: 100, temperature: 1, seed: 5, ...bias })).r;
    assert.equal(ended.stopped_eos, true);
    assert.equal(ended.stopped_limit, false);
    assert.equal(ended.tokens_predicted, 1, 'the end-of-generation token counts as predicted');
    assert.equal(ended.text, '', 'and adds no text');
    const forced = await run(ctx, {
      prompt: PROMPT,
      n_predict: 100,
      temperature: 1,
      seed: 5,
      ...bias,
      ignore_eos: true,
    });
    assert.equal(forced.r.stopped_eos, false);
    assert.equal(forced.r.tokens_predicted, 100);
  });

  test('n_probs: completion_probabilities per token, in the result and the stream', async () => {
    const { r, pieces } = await run(ctx, { prompt: PROMPT, n_predict: 8, temperature: 0, n_probs: 3 });
    const probs = r.completion_probabilities!;
    assert.equal(probs.length, 8);
    for (const p of probs) {
      assert.equal(p.probs.length, 3);
      assert.ok(p.probs[0]!.prob >= p.probs[1]!.prob && p.probs[1]!.prob >= p.probs[2]!.prob);
      assert.ok(p.probs.reduce((s, x) => s + x.prob, 0) <= 1.0001);
      assert.equal(p.content, p.probs[0]!.tok_str, 'greedy picks the most probable token');
    }
    const streamed = pieces.flatMap((p) => p.completion_probabilities ?? []);
    assert.deepEqual(streamed, probs);
  });

  test('a second completion on a busy context is rejected with ERR_BUSY; the first completes', async () => {
    const first = ctx.completion({ prompt: PROMPT, n_predict: 16, temperature: 0 });
    assert.equal(ctx.busy, true);
    await assert.rejects(ctx.completion({ prompt: PROMPT, n_predict: 4 }), isLlamaError('ERR_BUSY', /already running/));
    const r = await first;
    assert.equal(r.tokens_predicted, 16);
    assert.equal(ctx.busy, false);
    // and the context is usable again
    assert.equal((await ctx.completion({ prompt: PROMPT, n_predict: 2, temperature: 0 })).tokens_predicted, 2);
  });

  test('stopCompletion ends generation at the next token step (resolves with interrupted)', async () => {
    // The flag is shared memory, polled by the worker before every step: generation ends
    // at once; tokens it had already posted still arrive (in order), nothing is lost.
    let seen = 0;
    let t0 = 0;
    let afterStop = 0;
    const r = await ctx.completion(
      { prompt: PROMPT, n_predict: 2000, temperature: 1, seed: 3, ignore_eos: true, grammar: LETTERS },
      () => {
        seen++;
        if (t0 > 0) afterStop++;
        if (seen === 5) {
          t0 = performance.now();
          ctx.stopCompletion();
        }
      },
    );
    const dt = performance.now() - t0;
    assert.equal(r.interrupted, true);
    assert.equal(r.stopped_limit, false);
    assert.equal(r.tokens_predicted, seen);
    assert.ok(r.tokens_predicted < 2000);
    const perToken = r.timings.predicted_ms / r.tokens_predicted;
    assert.ok(
      dt < 100 + 2 * perToken,
      `result ${dt.toFixed(0)} ms after stopCompletion (${afterStop} tokens in flight)`,
    );
  });

  test('an AbortSignal ends generation the same way; an aborted signal generates nothing', async () => {
    const ac = new AbortController();
    let seen = 0;
    const r = await ctx.completion(
      {
        prompt: PROMPT,
        n_predict: 200,
        temperature: 1,
        seed: 4,
        ignore_eos: true,
        grammar: LETTERS,
        signal: ac.signal,
      },
      () => {
        if (++seen === 3) ac.abort();
      },
    );
    assert.equal(r.interrupted, true);
    assert.equal(r.tokens_predicted, seen);
    assert.ok(r.tokens_predicted < 200);
    const r2 = await ctx.completion({ prompt: PROMPT, n_predict: 10, signal: AbortSignal.abort() });
    assert.equal(r2.interrupted, true);
    assert.equal(r2.tokens_predicted, 0);
    assert.equal(r2.text, '');
  });

  test('bad options are clear errors and leave the context usable', async () => {
    await assert.rejects(
      ctx.completion({ prompt: PROMPT, samplers: ['top_k', 'nonsense'] }),
      isLlamaError('ERR_OPTION', /samplers.*unknown sampler "nonsense"/),
    );
    await assert.rejects(ctx.completion({ prompt: PROMPT, mirostat: 3 }), isLlamaError('ERR_OPTION', /mirostat/));
    await assert.rejects(ctx.completion({ prompt: PROMPT, top_p: 2 }), isLlamaError('ERR_OPTION', /top_p/));
    await assert.rejects(ctx.completion({ prompt: PROMPT, n_predict: -2 }), isLlamaError('ERR_OPTION', /n_predict/));
    await assert.rejects(ctx.completion({ prompt: PROMPT, n_predict: 1.5 }), isLlamaError('ERR_OPTION', /n_predict/));
    await assert.rejects(ctx.completion({ n_predict: 3 }), isLlamaError('ERR_OPTION', /prompt/));
    await assert.rejects(
      ctx.completion({ prompt: PROMPT, grammar: 'root ::= (' }),
      isLlamaError('ERR_OPTION', /grammar/),
    );
    await assert.rejects(
      ctx.completion({ prompt: PROMPT, response_format: { type: 'yaml' as 'text' } }),
      isLlamaError('ERR_OPTION', /response_format/),
    );
    await assert.rejects(
      ctx.completion({ prompt: PROMPT, stop: [3 as unknown as string] }),
      isLlamaError('ERR_OPTION', /stop/),
    );
    const ok = await ctx.completion({ prompt: PROMPT, n_predict: 3, temperature: 0 });
    assert.equal(ok.tokens_predicted, 3);
  });
});

describe('context limits', () => {
  let ctx: LlamaContext;
  before(async () => {
    ctx = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 48, n_batch: 16 });
  });
  after(async () => {
    await ctx?.release();
  });

  test('n_keep and context shift: generation continues past the context', async () => {
    const { r, streamed } = await run(ctx, {
      prompt: PROMPT,
      n_predict: 120,
      n_keep: 4,
      temperature: 0.8,
      seed: 11,
      ignore_eos: true,
    });
    assert.equal(r.tokens_predicted, 120);
    assert.equal(r.context_full, false);
    assert.equal(r.stopped_limit, true);
    assert.equal(streamed, r.text);
    assert.ok(r.text.length > 120);
  });

  test('n_predict -1 stops when the context is full', async () => {
    const r = await ctx.completion({ prompt: PROMPT, n_predict: -1, temperature: 0.8, seed: 2, ignore_eos: true });
    assert.equal(r.context_full, true);
    assert.equal(r.stopped_limit, true);
    assert.equal(r.tokens_evaluated + r.tokens_predicted, 48 + 1);
  });

  test('a prompt longer than the context is truncated, keeping n_keep tokens', async () => {
    const long = `${PROMPT}, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big red ball in the sky and she ran to get it.`;
    const r = await ctx.completion({ prompt: long, n_predict: 4, temperature: 0, n_keep: 3 });
    assert.equal(r.truncated, true);
    assert.ok(r.tokens_evaluated < 48, `${r.tokens_evaluated}`);
    assert.equal(r.tokens_predicted, 4);
  });
});

describe('loadModel errors', () => {
  test('missing file, bad options and an n_ctx beyond the model are clear errors', async () => {
    await assert.rejects(loadModel({ model: '/nonexistent/model.gguf' }), isLlamaError('ERR_MODEL', /not found/));
    await assert.rejects(loadModel({ model: '' }), isLlamaError('ERR_OPTION', /model/));
    await assert.rejects(loadModel({ model: MODEL, n_ctx: -5 }), isLlamaError('ERR_OPTION', /n_ctx/));
    await assert.rejects(
      loadModel({ model: MODEL, cache_type_k: 'q4_0' as 'f16' }),
      isLlamaError('ERR_OPTION', /cache_type_k/),
    );
    await assert.rejects(
      loadModel({ model: MODEL, n_ctx: 100000 }),
      isLlamaError('ERR_OPTION', /n_ctx = 100000: must be at most 512/),
    );
    await assert.rejects(loadModel({ model: MODEL, devices: ['NoSuchGPU'] }), isLlamaError('ERR_OPTION', /NoSuchGPU/));
    const notGguf = `${REPO_ROOT}package.json`;
    await assert.rejects(loadModel({ model: notGguf }), isLlamaError('ERR_MODEL'));
  });

  test('llama.node options are accepted; onProgress reports loading; a signal aborts it', async () => {
    const seen: number[] = [];
    const ctx = await loadModel(
      {
        model: MODEL,
        embedding: false,
        n_ctx: 64,
        n_batch: 32,
        n_threads: 1,
        n_gpu_layers: 99,
        use_mlock: false,
        use_mmap: true,
        lib_variant: 'default',
      },
      (p) => seen.push(p),
    );
    try {
      assert.ok(seen.length > 0 && seen[seen.length - 1] === 1, `progress ${seen}`);
      assert.match(ctx.getSystemInfo(), /n_threads = 1/);
      const info = ctx.getModelInfo();
      assert.equal(info.nEmbd, 64);
      assert.equal(info.metadata['general.architecture'], 'llama');
      assert.equal(info.metadata['llama.context_length'], '512');
      assert.equal(info.metadata['llama.attention.layer_norm_rms_epsilon'], '0.000010');
      assert.ok(!('tokenizer.ggml.tokens' in info.metadata));
      assert.match(info.desc, /^llama /);
      assert.ok(info.nParams > 100000 && info.size > 1e5, `${info.nParams} parameters, ${info.size} bytes`);
    } finally {
      await ctx.release();
    }
    await assert.rejects(loadModel({ model: MODEL, signal: AbortSignal.abort() }), { name: 'AbortError' });
  });
});

describe('release', () => {
  test('release() during a completion stops it; afterwards every method fails with ERR_RELEASED', async () => {
    const ctx = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 512 });
    let tokens = 0;
    const running = ctx.completion({ prompt: PROMPT, n_predict: 400, ignore_eos: true, seed: 1 }, () => {
      if (++tokens === 3) void ctx.release();
    });
    const r = await running;
    assert.equal(r.interrupted, true);
    await ctx.release();
    await assert.rejects(ctx.completion({ prompt: PROMPT }), isLlamaError('ERR_RELEASED'));
    await assert.rejects(ctx.tokenize('x'), isLlamaError('ERR_RELEASED'));
    await assert.rejects(ctx.embedding('x'), isLlamaError('ERR_RELEASED'));
    assert.throws(() => ctx.getFormattedChat([{ role: 'user', content: 'x' }]), isLlamaError('ERR_RELEASED'));
    assert.match(ctx.getSystemInfo(), /^llama-ts/);
  });
});

describe('the engine (in-process)', () => {
  const engine = new Engine();
  after(() => engine.close());

  test('contexts on one model share its weights', async () => {
    const a = await engine.createContext(checkModelOptions({ model: MODEL, n_threads: 1, n_ctx: 64 }));
    const b = await engine.createContext(checkModelOptions({ model: MODEL, n_threads: 1, n_ctx: 128 }));
    assert.equal(a.model, b.model);
    assert.equal(engine.modelCount, 1);
    const [ra, rb] = await Promise.all([
      a.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 }),
      b.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 }),
    ]);
    assert.equal(ra.text, rb.text);
    await a.release();
    assert.equal(engine.modelCount, 1);
    await b.release();
    assert.equal(engine.modelCount, 0);
  });

  test('a stop request seen before the next step: exactly the tokens streamed so far', async () => {
    const ec = await engine.createContext(checkModelOptions({ model: MODEL, n_threads: 1 }));
    for (const k of [1, 4, 9]) {
      let seen = 0;
      let stop = false;
      const r: LlamaCompletionResult = await ec.completion(
        { prompt: PROMPT, n_predict: 100, temperature: 1, seed: k, ignore_eos: true, grammar: LETTERS },
        {
          onToken: () => {
            if (++seen === k) stop = true;
          },
          shouldStop: () => stop,
        },
      );
      assert.equal(r.interrupted, true);
      assert.equal(r.tokens_predicted, k);
    }
    await ec.release();
  });
});
