// tool_choice enforced through the library's completion() for every tool-call format the
// chat layer parses: Hermes (Qwen 2.5's template, and SmolLM3's), Llama 3.x and Mistral. On
// a random tiny model, only the grammar can make a call: 'required' and a named tool give
// calls whose arguments validate against the tool's schema, streamed deltas add up to them,
// and 'none' gives none. A template with no call syntax (none; Gemma 3's and Phi-4 mini's)
// gets no grammar and its reply is content, as llama.cpp's (its parser finds no call format).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { type LlamaCompletionOptions, type LlamaContext, loadModel, type Tool } from '../src/api/index.js';
import type { FormattedChatResult } from '../src/chat/format.js';
import { detectToolCallFormat } from '../src/chat/tool-calls.js';
import { LLAMA31, MISTRAL_NEMO, QWEN25 } from './chat-fixtures.js';
import { ADD_TOOL, AddArgs, clientModel, WEATHER_TOOL, WeatherArgs } from './helpers/clients.js';

const swaTemplate = (name: string) =>
  readFileSync(new URL(`../../test/refs/chat-swa/${name}.jinja`, import.meta.url), 'utf8');

const CASES: { name: string; template: string | undefined; format: string | undefined }[] = [
  { name: 'Qwen 2.5 (Hermes)', template: QWEN25, format: 'hermes' },
  { name: 'SmolLM3 (Hermes)', template: swaTemplate('smollm3'), format: 'hermes' },
  { name: 'Llama 3.1', template: LLAMA31, format: 'llama3' },
  { name: 'Mistral Nemo', template: MISTRAL_NEMO, format: 'mistral' },
  { name: 'no template (no call syntax)', template: undefined, format: undefined },
  { name: 'Gemma 3 (no call syntax)', template: swaTemplate('gemma3'), format: undefined },
  { name: 'Phi-4 mini (no call syntax)', template: swaTemplate('phi4-mini'), format: undefined },
];

const tools: Tool[] = [WEATHER_TOOL, ADD_TOOL];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

function validCall(call: { function: { name: string; arguments: string } }): void {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') WeatherArgs.parse(args);
  else if (call.function.name === 'add') AddArgs.parse(args);
  else assert.fail(`a call of an unknown tool: ${call.function.name}`);
}

for (const c of CASES) {
  describe(c.name, () => {
    let ctx: LlamaContext;
    before(async () => {
      assert.equal(detectToolCallFormat(c.template), c.format);
      ctx = await loadModel({
        model: clientModel(),
        n_ctx: 4096,
        ...(c.template ? { chat_template: c.template } : {}),
      });
    });
    after(async () => {
      await ctx?.release();
    });
    const run = (o: Partial<LlamaCompletionOptions>, onToken?: Parameters<LlamaContext['completion']>[1]) =>
      ctx.completion({ messages, tools, jinja: true, temperature: 0, n_predict: 160, ...o }, onToken);

    for (const [what, choice] of [
      ['required', 'required'],
      ['named', { type: 'function', function: { name: 'get_weather' } }],
    ] as const) {
      if (c.format === undefined) {
        test(`tool_choice ${what}: no grammar, no call; the reply is content, the prompt as the template renders it`, async () => {
          const formatted = ctx.getFormattedChat(messages, '', {
            jinja: true,
            // a named tool_choice keeps that tool only
            tools: typeof choice === 'object' ? [WEATHER_TOOL] : tools,
            tool_choice: 'required',
          }) as FormattedChatResult;
          assert.equal(formatted.chat_format ?? 0, 0);
          assert.equal(formatted.grammar ?? '', '');
          // no instruction of our own added (llama.cpp adds none either)
          assert.doesNotMatch(formatted.prompt, /Respond in JSON format/);
          // (cache_prompt false: both prompts evaluated whole, so the two replies compare exactly)
          const r = await run({ tool_choice: choice, n_predict: 24, cache_prompt: false });
          assert.equal(r.chat_format, 0);
          assert.deepEqual(r.tool_calls, []);
          assert.equal(r.content, r.text);
          // the same reply as with no constraint at all: the tools added no grammar
          const free = await ctx.completion({
            prompt: formatted.prompt,
            temperature: 0,
            n_predict: 24,
            cache_prompt: false,
          });
          assert.equal(r.text, free.text);
        });
        continue;
      }
      test(`tool_choice ${what}: one valid call; the streamed deltas add up to it`, async () => {
        const args: string[] = [];
        let name: string | undefined;
        const r = await run({ tool_choice: choice }, (t) => {
          for (const d of t.delta?.tool_calls ?? []) {
            assert.equal(d.index, 0);
            name ??= d.function?.name;
            if (d.function?.arguments) args.push(d.function.arguments);
          }
        });
        assert.equal(r.tool_calls?.length, 1, `no call parsed from ${JSON.stringify(r.text)}`);
        const call = r.tool_calls![0]!;
        validCall(call);
        if (typeof choice === 'object') assert.equal(call.function.name, 'get_weather');
        assert.equal(name, call.function.name);
        assert.deepEqual(JSON.parse(args.join('')), JSON.parse(call.function.arguments));
      });
    }

    if (c.format !== undefined) {
      test('parallel_tool_calls with required: several calls, each complete one valid', async () => {
        const r = await run({ tool_choice: 'required', parallel_tool_calls: true, n_predict: 400 });
        // the grammar allows another call after each; the tiny model keeps calling until
        // n_predict cuts the last one short
        const calls = r.tool_calls ?? [];
        const complete = r.stopped_limit ? calls.slice(0, -1) : calls;
        assert.ok(complete.length >= 2, `${calls.length} call(s): ${r.text}`);
        for (const call of complete) validCall(call);
      });
    }

    test('tool_choice none: no call', async () => {
      const r = await run({ tool_choice: 'none', n_predict: 24 });
      assert.equal(r.tool_calls?.length ?? 0, 0);
    });
  });
}
