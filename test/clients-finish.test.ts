// The clients on a forced tool call cut by max_tokens (the real server on loopback): the
// `openai` clients (6.49.0 and 7) raise their LengthFinishReasonError from
// chat.completions.parse() and from a stream's final completion (not a JSON syntax error
// on the cut arguments), and create() reads finish_reason "length"; the AI SDK (ai 6 and 7
// with @ai-sdk/openai-compatible) reports finishReason "length" (not "tool-calls"), its
// call marked invalid; Anthropic's SDK reads stop_reason "max_tokens" (not "tool_use"),
// streamed and not. The cut point comes from the same request uncut.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as compat2 from '@ai-sdk/openai-compatible';
import * as compat3 from '@ai-sdk/openai-compatible-v3';
import Anthropic from '@anthropic-ai/sdk';
import * as ai6 from 'ai';
import * as ai7 from 'ai-v7';
import OpenAI6 from 'openai';
import { LengthFinishReasonError as Length6 } from 'openai/core/error';
import { zodFunction as zodFunction6 } from 'openai/helpers/zod';
import OpenAI7 from 'openai-v7';
import { LengthFinishReasonError as Length7 } from 'openai-v7/core/error';
import { zodFunction as zodFunction7 } from 'openai-v7/helpers/zod';
import type { LlamaServer } from '../src/server/index.js';
import { API_KEY, startServer, THINKING_HERMES, WEATHER_TOOL, WeatherArgs } from './helpers/clients.js';
import { FORCED_CALL, referenceCall } from './helpers/cut.js';

// biome-ignore lint/suspicious/noExplicitAny: two majors of each SDK, driven through the same calls
type Any = any;

let server: LlamaServer;
/** Tokens after which the reference call is inside its arguments. */
let n: number;
before(async () => {
  server = await startServer({ chatTemplate: THINKING_HERMES, embeddings: false });
  n = (await referenceCall(server.url)).points.inArgs;
});
after(async () => {
  await server?.close();
});

const { messages, temperature } = FORCED_CALL;
const question = messages[0]!.content;

for (const { name, OpenAI, Length, zodFunction } of [
  { name: 'openai 6.49.0', OpenAI: OpenAI6 as Any, Length: Length6 as Any, zodFunction: zodFunction6 as Any },
  { name: 'openai 7', OpenAI: OpenAI7 as Any, Length: Length7 as Any, zodFunction: zodFunction7 as Any },
]) {
  describe(name, () => {
    let c: Any;
    // zodFunction's tool is strict (its schema differs): a prompt of its own, cut points of their own
    const tools = [
      zodFunction({ name: 'get_weather', parameters: WeatherArgs, description: WEATHER_TOOL.function.description }),
    ];
    let cut: Awaited<ReturnType<typeof referenceCall>>;
    before(async () => {
      c = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: API_KEY, maxRetries: 0 });
      cut = await referenceCall(server.url, { tools });
    });
    const req = () => ({
      model: 'm',
      messages,
      tools,
      tool_choice: 'required',
      temperature,
      cache_prompt: false,
      max_tokens: cut.points.inArgs,
    });

    test('parse() and a stream raise LengthFinishReasonError; create() reads "length"', async () => {
      await assert.rejects(c.chat.completions.parse(req()), Length);
      await assert.rejects(c.chat.completions.stream(req()).finalChatCompletion(), Length);
      const r = await c.chat.completions.create(req());
      assert.equal(r.choices[0].finish_reason, 'length');
      const args = r.choices[0].message.tool_calls[0].function.arguments;
      assert.ok(cut.args.startsWith(args) && args !== cut.args, `${args} is not a prefix of ${cut.args}`);
    });
  });
}

for (const { name, ai, compat } of [
  { name: 'ai 6 + @ai-sdk/openai-compatible 2', ai: ai6 as Any, compat: compat2 as Any },
  { name: 'ai 7 + @ai-sdk/openai-compatible 3', ai: ai7 as Any, compat: compat3 as Any },
]) {
  describe(name, () => {
    test('generateText and streamText: finishReason "length", the cut call invalid', async () => {
      const local = compat.createOpenAICompatible({ name: 'local', baseURL: `${server.url}/v1`, apiKey: API_KEY });
      const req = {
        model: local.chatModel('m'),
        prompt: question,
        tools: { get_weather: ai.tool({ description: WEATHER_TOOL.function.description, inputSchema: WeatherArgs }) },
        toolChoice: 'required',
        maxOutputTokens: n,
        temperature,
        maxRetries: 0,
        providerOptions: { local: { cache_prompt: false } },
      };
      const r = await ai.generateText(req);
      assert.equal(r.finishReason, 'length');
      assert.equal(r.toolCalls.length, 1);
      assert.equal(r.toolCalls[0].invalid, true);
      const s = ai.streamText(req);
      assert.equal(await s.finishReason, 'length');
      assert.equal((await s.toolCalls)[0].invalid, true);
    });
  });
}

describe('@anthropic-ai/sdk 1.15.0', () => {
  test('stop_reason "max_tokens", streamed and not', async () => {
    const client = new Anthropic({ baseURL: server.url, apiKey: API_KEY, maxRetries: 0 });
    const req = {
      model: 'm',
      max_tokens: n,
      temperature,
      tools: [
        {
          name: 'get_weather',
          description: WEATHER_TOOL.function.description,
          input_schema: WEATHER_TOOL.function.parameters as Anthropic.Tool.InputSchema,
        },
      ],
      tool_choice: { type: 'any' as const, disable_parallel_tool_use: true },
      messages: [{ role: 'user' as const, content: question }],
    } as Anthropic.MessageCreateParamsNonStreaming;
    const r = await client.messages.create(req);
    assert.equal(r.stop_reason, 'max_tokens');
    assert.equal(r.content[0]!.type, 'tool_use');
    const final = await client.messages.stream(req).finalMessage();
    assert.equal(final.stop_reason, 'max_tokens');
  });
});
