// A forced tool call cut by n_predict, through the library's completion() (llama.node's
// result), for each tool-call format the chat layer reads incrementally: the result says
// it stopped at the limit (stopped_limit / stopped_limited, not stopped_eos), and its call
// is as far as the model wrote it (llama.cpp's lenient reading of a cut reply): "{" when
// only the name was written, unterminated arguments inside them, the whole arguments once
// closed; never arguments closed into a call that looks whole ({} before). The streamed
// deltas add up to the result's call. The cut points come from the same reply uncut.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type LlamaCompletionOptions,
  type LlamaCompletionToken,
  type LlamaContext,
  loadModel,
} from '../src/api/index.js';
import { LLAMA31, MISTRAL_NEMO, QWEN25 } from './chat-fixtures.js';
import { ADD_TOOL, clientModel, WEATHER_TOOL, WeatherArgs } from './helpers/clients.js';
import { cutPoints } from './helpers/cut.js';

const CASES: { name: string; template: string | undefined }[] = [
  { name: 'Qwen 2.5 (Hermes)', template: QWEN25 },
  { name: 'Llama 3.1', template: LLAMA31 },
  { name: 'Mistral Nemo', template: MISTRAL_NEMO },
];

const request: LlamaCompletionOptions = {
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools: [WEATHER_TOOL, ADD_TOOL],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  jinja: true,
  temperature: 0,
  cache_prompt: false,
};

for (const c of CASES) {
  describe(`${c.name}: a forced call cut by n_predict`, () => {
    let ctx: LlamaContext;
    let whole: string;
    let points: ReturnType<typeof cutPoints>;
    before(async () => {
      ctx = await loadModel({
        model: clientModel(),
        n_ctx: 4096,
        ...(c.template ? { chat_template: c.template } : {}),
      });
      const r = await ctx.completion({ ...request, n_predict: 300, logprobs: true });
      assert.ok(r.stopped_eos, `the reference call did not end: ${r.text}`);
      whole = r.tool_calls![0]!.function.arguments;
      WeatherArgs.parse(JSON.parse(whole));
      points = cutPoints(r.logprobs!.map((e) => e.token));
    });
    after(async () => {
      await ctx?.release();
    });

    const cut = async (n: number) => {
      const deltas: string[] = [];
      const r = await ctx.completion({ ...request, n_predict: n }, (t: LlamaCompletionToken) => {
        for (const d of t.delta?.tool_calls ?? []) deltas.push(d.function.arguments ?? '');
      });
      assert.equal(r.tokens_predicted, n);
      assert.equal(r.stopped_eos, false);
      assert.equal(r.stopped_word, false);
      assert.equal(r.stopped_limit, true);
      assert.equal(r.stopped_limited, true);
      assert.equal(r.tool_calls?.length, 1, `no call in ${JSON.stringify(r.text)}`);
      const call = r.tool_calls![0]!;
      assert.equal(call.function.name, 'get_weather');
      assert.equal(deltas.join(''), call.function.arguments, 'the streamed deltas add up to the call');
      return call.function.arguments;
    };

    test('only the name written: arguments "{" (not {})', async () => {
      assert.equal(await cut(points.afterName), '{');
    });

    test('the name and "{" stream in one delta (llama-server sends them together)', async () => {
      const first: unknown[] = [];
      await ctx.completion({ ...request, n_predict: points.afterName }, (t: LlamaCompletionToken) => {
        for (const d of t.delta?.tool_calls ?? []) first.push(d);
      });
      assert.deepEqual(
        (first[0] as { function: unknown }).function,
        { name: 'get_weather', arguments: '{' },
        JSON.stringify(first),
      );
    });

    test('cut before the name is complete: no call, the content is the raw text (an empty reading falls back to it, as in llama-server)', async () => {
      const streamed: string[] = [];
      const r = await ctx.completion({ ...request, n_predict: points.beforeName }, (t: LlamaCompletionToken) => {
        if (t.delta?.content || t.delta?.tool_calls) streamed.push(JSON.stringify(t.delta));
      });
      assert.equal(r.stopped_limit, true);
      assert.deepEqual(r.tool_calls, []);
      assert.ok(r.text.length > 0);
      assert.equal(r.content, r.text);
      assert.deepEqual(streamed, [], 'nothing was read, so nothing streamed');
    });

    test('inside the arguments: what was written, unterminated', async () => {
      const args = await cut(points.inArgs);
      assert.ok(whole.startsWith(args) && args.length < whole.length, `${args} is not a prefix of ${whole}`);
      assert.throws(() => JSON.parse(args), SyntaxError);
    });

    test('the arguments closed, the call not: the whole arguments, still stopped at the limit', async () => {
      assert.equal(await cut(points.argsClosed), whole);
    });
  });
}
