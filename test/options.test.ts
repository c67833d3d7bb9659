// The one option table (src/generation/options.ts): every option has a documented range
// or size, README.md shows the table as it is, and values out of range are refused
// before anything is allocated, naming the option and the value, in the library
// (LlamaError ERR_OPTION) and the server (400 with the field as `param`): samplers of a
// million letters, look-backs of 1e9 tokens, seeds of 2^64 or 1e300, logit biases of
// ±1e308, a temperature of 1e400 (which JSON reads as Infinity).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { checkOptions, OPTIONS, OptionError, type OptionSpec, optionsMarkdown } from '../src/generation/index.js';
import { type LlamaContext, LlamaError, loadModel } from '../src/index.js';
import { LlamaServer } from '../src/server/index.js';
import { tinyLlama } from './helpers/models.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODEL = tinyLlama();
const MILLION = 'k'.repeat(1_000_000);

/** Out-of-range values: [library options, the option named, what the message must say]. */
const BAD: [Record<string, unknown>, string, RegExp][] = [
  [{ samplers: MILLION }, 'samplers', /at most 64 letters \(got 1000000\)/],
  [{ samplers: Array(100).fill('top_k') }, 'samplers', /at most 64 names/],
  [{ repeat_last_n: 1e9 }, 'repeat_last_n', /1000000000: must be an integer in \[-1, 1048576\]/],
  [{ penalty_last_n: 1e9 }, 'penalty_last_n', /in \[-1, 1048576\]/],
  [{ dry_penalty_last_n: 1e9 }, 'dry_penalty_last_n', /1000000000: must be an integer in \[-1, 1048576\]/],
  [{ seed: 2 ** 64 }, 'seed', /18446744073709552000: must be an integer in \[-1, 4294967295\]/],
  [{ seed: 1e300 }, 'seed', /1e\+300: must be an integer in \[-1, 4294967295\]/],
  [{ logit_bias: [[1, 1e308]] }, 'logit_bias', /bias 1e\+308 must be a number in \[-100, 100\]/],
  [{ logit_bias: [[1, -1e308]] }, 'logit_bias', /bias -1e\+308/],
  [{ logit_bias: { 1: 1e308 } }, 'logit_bias', /bias 1e\+308/],
  [{ temperature: Infinity }, 'temperature', /temperature = Infinity: must be a finite number/],
  [{ stop: Array(65).fill('x') }, 'stop', /at most 64 items/],
  [{ n_probs: 1e6 }, 'n_probs', /in \[0, 100\]/],
  [{ grammar: 'x'.repeat((1 << 20) + 1) }, 'grammar', /at most 1048576 characters/],
];

describe('the table', () => {
  test('every option has a documented range or size, a kind and a doc line', () => {
    for (const s of OPTIONS as readonly OptionSpec[]) {
      assert.ok(s.doc.length > 10, s.name);
      if (s.kind === 'number' || s.kind === 'integer') {
        assert.ok((s.min !== undefined || s.above !== undefined) && s.max !== undefined, `${s.name}: a range`);
      } else if (s.kind === 'string' || s.kind === 'strings' || s.kind === 'object') {
        assert.ok(s.size !== undefined, `${s.name}: a size`);
      } else if (s.kind === 'enum') {
        assert.ok(s.values && s.values.length > 0, s.name);
      } else if (s.kind === 'custom') {
        assert.ok(s.sizeDoc && s.check, `${s.name}: a check and its size in words`);
      }
    }
  });

  test('README.md shows the table as it is', () => {
    const readme = readFileSync(`${REPO_ROOT}README.md`, 'utf8');
    const m = /<!-- options:begin -->\n([\s\S]*?)\n<!-- options:end -->/.exec(readme);
    assert.ok(m, 'README.md has the options section');
    assert.equal(
      m[1],
      optionsMarkdown(),
      "README.md's option table is stale: regenerate it with node --input-type=module -e \"import('./dist/src/generation/index.js').then((m) => console.log(m.optionsMarkdown()))\"",
    );
  });

  for (const [o, option, re] of BAD) {
    test(`${option}: out of range is refused at once`, () => {
      const t0 = performance.now();
      assert.throws(
        () => checkOptions({ prompt: 'x', ...o }),
        (e: unknown) => {
          assert.ok(e instanceof OptionError, String(e));
          assert.equal(e.option, option);
          assert.match(e.message, re);
          assert.ok(e.message.length < 300, 'the message shows a short form of the value');
          return true;
        },
      );
      assert.ok(performance.now() - t0 < 200, `${(performance.now() - t0).toFixed(0)} ms`);
    });
  }
});

describe('the library and the server refuse them', () => {
  let ctx: LlamaContext;
  let server: LlamaServer;
  before(async () => {
    ctx = await loadModel({ model: MODEL, n_ctx: 128, n_threads: 1 });
    server = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 128, threads: 1 });
  });
  after(async () => {
    await ctx?.release();
    await server?.close();
  });

  test('library: LlamaError ERR_OPTION naming the option and the value', async () => {
    for (const [o, option, re] of BAD) {
      await assert.rejects(ctx.completion({ prompt: 'x', n_predict: 1, ...o }), (e: unknown) => {
        assert.ok(e instanceof LlamaError, String(e));
        assert.equal(e.code, 'ERR_OPTION', e.message);
        assert.ok(e.message.startsWith(`${option} = `), e.message);
        assert.match(e.message, re);
        return true;
      });
    }
    assert.equal((await ctx.completion({ prompt: 'x', n_predict: 2 })).tokens_predicted, 2);
  });

  test('server: 400 with the field as param, before any work; raw JSON values as clients send them', async () => {
    const cases: [string, string, RegExp][] = [
      [`{"prompt":"x","samplers":"${MILLION}"}`, 'samplers', /at most 64 letters/],
      ['{"prompt":"x","repeat_last_n":1e9}', 'repeat_last_n', /1000000000/],
      ['{"prompt":"x","dry_penalty_last_n":1000000000}', 'dry_penalty_last_n', /1000000000/],
      ['{"prompt":"x","seed":18446744073709551616}', 'seed', /18446744073709552000/],
      ['{"prompt":"x","seed":1e300}', 'seed', /1e\+300/],
      ['{"prompt":"x","logit_bias":[[1,1e308]]}', 'logit_bias', /1e\+308/],
      ['{"prompt":"x","logit_bias":[[1,-1e308]]}', 'logit_bias', /-1e\+308/],
      ['{"prompt":"x","temperature":1e400}', 'temperature', /temperature = Infinity: must be a finite number/],
      ['{"prompt":"x","frequency_penalty":1e400}', 'frequency_penalty', /Infinity/],
      ['{"prompt":"x","max_tokens":-5}', 'max_tokens', /max_tokens = -5/],
    ];
    for (const [body, param, re] of cases) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      const ms = performance.now() - t0;
      const j = (await res.json()) as { error: { message: string; param: string; type: string } };
      assert.equal(res.status, 400, `${param}: ${JSON.stringify(j)}`);
      assert.equal(j.error.param, param);
      assert.equal(j.error.type, 'invalid_request_error');
      assert.match(j.error.message, re);
      assert.ok(ms < 2000, `${param}: ${ms.toFixed(0)} ms`);
    }
    const ok = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"prompt":"x","max_tokens":2}',
    });
    assert.equal(ok.status, 200);
  });
});
