// The AI SDK, both majors (ai 6.0.326 with @ai-sdk/openai-compatible 2.0.92 and
// @ai-sdk/openai 3.0.141; ai 7 with @ai-sdk/openai-compatible 3 and @ai-sdk/openai 4),
// unchanged, against the real server on loopback: text and streams; generateObject,
// streamObject and Output.object with Zod `.int()`; tool calls with toolChoice required
// and a named tool, streamed and not, their input valid against the tool's schema;
// reasoning (the compatible provider reads reasoning_content); @ai-sdk/openai's default
// model (the Responses API) for text, streams, tools and JSON schema; cached input
// tokens; the over-long-prompt error; embeddings; a wrong key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as openai3 from '@ai-sdk/openai';
import * as compat2 from '@ai-sdk/openai-compatible';
import * as compat3 from '@ai-sdk/openai-compatible-v3';
import * as openai4 from '@ai-sdk/openai-v4';
import * as ai6 from 'ai';
import * as ai7 from 'ai-v7';
import type { LlamaServer } from '../src/server/index.js';
import {
  AddArgs,
  API_KEY,
  Person,
  REPEATABLE,
  startServer,
  THINKING_HERMES,
  thinking,
  WeatherArgs,
} from './helpers/clients.js';

// biome-ignore lint/suspicious/noExplicitAny: two majors of the SDK, driven through the same calls
type Any = any;

const MAJORS: { name: string; ai: Any; compat: Any; openai: Any }[] = [
  { name: 'ai 6 + @ai-sdk/openai-compatible 2 + @ai-sdk/openai 3', ai: ai6, compat: compat2, openai: openai3 },
  { name: 'ai 7 + @ai-sdk/openai-compatible 3 + @ai-sdk/openai 4', ai: ai7, compat: compat3, openai: openai4 },
];

let server: LlamaServer;
before(async () => {
  server = await startServer({ chatTemplate: THINKING_HERMES });
});
after(async () => {
  await server?.close();
});

for (const { name, ai, compat, openai } of MAJORS) {
  describe(name, () => {
    let chat: Any;
    let local: Any;
    let responses: Any;
    let provider: Any;
    before(() => {
      local = compat.createOpenAICompatible({
        name: 'local',
        baseURL: `${server.url}/v1`,
        apiKey: API_KEY,
        // as a llama-server user configures it: json_schema response formats
        supportsStructuredOutputs: true,
      });
      chat = local.chatModel('m');
      provider = openai.createOpenAI({ baseURL: `${server.url}/v1`, apiKey: API_KEY });
      responses = provider('m'); // the default: the Responses API
    });
    const extra = (o: Record<string, unknown>) => ({ providerOptions: { local: o } });
    const weather = () => ai.tool({ description: 'The weather in a city for some days', inputSchema: WeatherArgs });
    const add = () => ai.tool({ description: 'Adds two numbers', inputSchema: AddArgs });

    test('generateText and streamText', async () => {
      const req = {
        model: chat,
        prompt: 'Once upon a time',
        maxOutputTokens: 12,
        maxRetries: 0,
        ...extra(REPEATABLE),
        temperature: 0,
      };
      const r = await ai.generateText(req);
      assert.ok(r.text.length > 0);
      assert.ok(r.usage.inputTokens > 0);
      const s = ai.streamText(req);
      let text = '';
      for await (const t of s.textStream) text += t;
      assert.equal(text, r.text);
    });

    test('structured output with Zod .int(): generateObject, streamObject, Output.object', async () => {
      for (const model of [chat, responses]) {
        // the chat model without the slot's cached prompt (ignore_eos would forbid the end
        // the finished object's grammar needs), so the streamed and the whole reply
        // are evaluated alike (a cached prefix changes the batch split, hence the kernels'
        // rounding, as in llama.cpp); the Responses model's replies are only validated
        const fresh = model === chat ? extra({ cache_prompt: false }) : {};
        const o = await ai.generateObject({
          model,
          schema: Person,
          prompt: 'Describe a person.',
          temperature: 0,
          maxOutputTokens: 200,
          maxRetries: 0,
          ...fresh,
        });
        Person.parse(o.object);
        const s = ai.streamObject({
          model,
          schema: Person,
          prompt: 'Describe a person.',
          temperature: 0,
          maxOutputTokens: 200,
          maxRetries: 0,
          ...fresh,
        });
        let partials = 0;
        for await (const _ of s.partialObjectStream) partials++;
        assert.ok(partials > 1);
        const streamed = Person.parse(await s.object);
        if (model === chat) assert.deepEqual(streamed, o.object);
        const t = await ai.generateText({
          model,
          output: ai.Output.object({ schema: Person }),
          prompt: 'Describe a person.',
          temperature: 0,
          maxOutputTokens: 200,
          maxRetries: 0,
        });
        Person.parse(t.output ?? t.experimental_output);
      }
    });

    for (const [what, toolChoice] of [
      ['required', 'required'],
      ['a named tool', { type: 'tool', toolName: 'get_weather' }],
    ] as const) {
      test(`tools, toolChoice ${what}: a call whose input fits the schema, streamed and not`, async () => {
        for (const model of [chat, responses]) {
          const req = {
            model,
            tools: { get_weather: weather(), add: add() },
            toolChoice,
            prompt: 'What is the weather in Paris?',
            temperature: 0,
            maxOutputTokens: 120,
            maxRetries: 0,
          };
          const r = await ai.generateText(req);
          assert.equal(r.toolCalls.length, 1, JSON.stringify(r.content));
          const call = r.toolCalls[0];
          if (typeof toolChoice === 'object') assert.equal(call.toolName, 'get_weather');
          (call.toolName === 'get_weather' ? WeatherArgs : AddArgs).parse(call.input);
          const s = ai.streamText(req);
          let deltas = 0;
          const calls: Any[] = [];
          for await (const part of s.fullStream) {
            if (part.type === 'tool-input-delta') deltas++;
            if (part.type === 'tool-call') calls.push(part);
            if (part.type === 'error') throw part.error;
          }
          assert.equal(calls.length, 1);
          assert.ok(deltas > 1, `the input came in ${deltas} delta(s)`);
          assert.deepEqual(calls[0].input, call.input);
        }
      });
    }

    test('reasoning apart from text (reasoning_content), streamed and not', async () => {
      const req = {
        model: chat,
        prompt: 'Think, then answer.',
        maxOutputTokens: 24,
        temperature: 0,
        maxRetries: 0,
        ...extra({ ...REPEATABLE, ...thinking(6) }),
      };
      const r = await ai.generateText(req);
      assert.ok((r.reasoningText ?? '').length > 0, 'reasoning');
      assert.ok(r.text.length > 0, 'text');
      const s = ai.streamText(req);
      let reasoning = '';
      let text = '';
      for await (const part of s.fullStream) {
        if (part.type === 'reasoning-delta') reasoning += part.text ?? part.delta ?? '';
        if (part.type === 'text-delta') text += part.text ?? part.delta ?? '';
      }
      assert.equal(reasoning, r.reasoningText);
      assert.equal(text, r.text);
    });

    test('@ai-sdk/openai: the Responses API (default model) text and stream; the chat model too', async () => {
      const r = await ai.generateText({
        model: responses,
        prompt: 'Once upon a time',
        maxOutputTokens: 12,
        temperature: 0,
        maxRetries: 0,
      });
      assert.ok(r.text.length > 0);
      const s = ai.streamText({
        model: responses,
        prompt: 'Once upon a time',
        maxOutputTokens: 12,
        temperature: 0,
        maxRetries: 0,
      });
      let text = '';
      for await (const t of s.textStream) text += t;
      assert.equal(text, r.text);
      const c = await ai.generateText({
        model: provider.chat('m'),
        prompt: 'Once upon a time',
        maxOutputTokens: 12,
        temperature: 0,
        maxRetries: 0,
      });
      assert.ok(c.text.length > 0);
    });

    test('usage: cached input tokens on a repeated prompt', async () => {
      const req = {
        model: chat,
        prompt: `An AI SDK story about a cached prompt (${name}).`,
        maxOutputTokens: 4,
        temperature: 0,
        maxRetries: 0,
      };
      const a = await ai.generateText(req);
      const b = await ai.generateText(req);
      const cached = (r: Any) => r.usage.inputTokenDetails?.cacheReadTokens ?? r.usage.cachedInputTokens;
      assert.ok(
        cached(a) < a.usage.inputTokens - 10,
        'the first shares the template start with earlier requests at most',
      );
      assert.equal(cached(b), b.usage.inputTokens - 1);
    });

    test('a prompt longer than a slot: a 400 APICallError whose body says exceed_context_size_error', async () => {
      await assert.rejects(
        ai.generateText({ model: chat, prompt: 'word '.repeat(3000), maxOutputTokens: 1, maxRetries: 0 }),
        (e: Any) => {
          assert.equal(e.statusCode, 400, String(e));
          assert.equal(JSON.parse(e.responseBody).error.type, 'exceed_context_size_error');
          return true;
        },
      );
    });

    test('embeddings', async () => {
      const { embeddings } = await ai.embedMany({
        model: local.textEmbeddingModel('m'),
        values: ['a cat', 'a dog'],
        maxRetries: 0,
      });
      assert.equal(embeddings.length, 2);
      assert.ok(embeddings[0].length > 0);
    });

    test('a wrong key surfaces as a 401 APICallError', async () => {
      const bad = compat.createOpenAICompatible({ name: 'local', baseURL: `${server.url}/v1`, apiKey: 'sk-wrong' });
      await assert.rejects(ai.generateText({ model: bad.chatModel('m'), prompt: 'x', maxRetries: 0 }), (e: Any) => {
        assert.equal(e.statusCode, 401, String(e));
        assert.ok(ai.APICallError?.isInstance?.(e) ?? true);
        return true;
      });
    });
  });
}
