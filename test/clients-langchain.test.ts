// LangChain (@langchain/openai 1.5.8 with @langchain/core 1.4.0), unchanged, against the
// real server on loopback: invoke and stream; withStructuredOutput with Zod `.int()` by
// JSON schema and by function calling (a named tool_choice); bound tools with
// tool_choice any (required) and a named tool, streamed chunks that concatenate to the
// final call; reasoning_content streamed and not; usage with cache_read; n: 2; the
// over-long-prompt error; the Responses API (text, stream, tools, JSON schema);
// embeddings; a wrong key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type AIMessageChunk, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import type { LlamaServer } from '../src/server/index.js';
import {
  AddArgs,
  API_KEY,
  GREEDY,
  Person,
  REPEATABLE,
  startServer,
  THINKING_HERMES,
  thinking,
  WeatherArgs,
} from './helpers/clients.js';

let server: LlamaServer;
before(async () => {
  server = await startServer({ chatTemplate: THINKING_HERMES });
});
after(async () => {
  await server?.close();
});

function llm(o: Record<string, unknown> = {}): ChatOpenAI {
  return new ChatOpenAI({
    model: 'm',
    apiKey: API_KEY,
    configuration: { baseURL: `${server.url}/v1` },
    temperature: 0,
    maxTokens: 200,
    maxRetries: 0,
    ...o,
  });
}

const weather = tool(async () => 'sunny', {
  name: 'get_weather',
  description: 'The weather in a city for some days',
  schema: WeatherArgs,
});
const add = tool(async ({ a, b }) => String(a + b), { name: 'add', description: 'Adds two numbers', schema: AddArgs });

describe('@langchain/openai 1.5.8', () => {
  test('invoke and stream', async () => {
    const m = llm({ maxTokens: 12, modelKwargs: REPEATABLE });
    const r = await m.invoke('Once upon a time');
    assert.ok(typeof r.content === 'string' && r.content.length > 0);
    let text = '';
    for await (const ch of await m.stream('Once upon a time')) text += ch.content;
    assert.equal(text, r.content);
  });

  for (const method of ['jsonSchema', 'functionCalling'] as const) {
    test(`withStructuredOutput (${method}) with Zod .int()`, async () => {
      const out = await llm().withStructuredOutput(Person, { method }).invoke('Describe a person.');
      Person.parse(out);
    });
  }

  for (const [what, choice] of [
    ['any (required)', 'any'],
    ['a named tool', 'get_weather'],
  ] as const) {
    test(`bound tools, tool_choice ${what}: valid arguments, streamed chunks concatenate to the call`, async () => {
      const m = llm({ maxTokens: 120 }).bindTools([weather, add], { tool_choice: choice });
      const r = await m.invoke('What is the weather in Paris?');
      assert.equal(r.tool_calls?.length, 1);
      const call = r.tool_calls![0]!;
      if (choice === 'get_weather') assert.equal(call.name, 'get_weather');
      (call.name === 'get_weather' ? WeatherArgs : AddArgs).parse(call.args);
      let acc: AIMessageChunk | undefined;
      let chunks = 0;
      for await (const ch of await m.stream('What is the weather in Paris?')) {
        if ((ch.tool_call_chunks ?? []).length > 0) chunks++;
        acc = acc ? acc.concat(ch) : ch;
      }
      assert.ok(chunks > 1, `the call came in ${chunks} chunk(s)`);
      assert.equal(acc!.tool_calls?.length, 1);
      assert.equal(acc!.tool_calls![0]!.name, call.name);
      assert.deepEqual(acc!.tool_calls![0]!.args, call.args);
    });
  }

  test('reasoning_content apart from content, streamed and not', async () => {
    const m = llm({ maxTokens: 24, modelKwargs: { ...REPEATABLE, ...thinking(6) } });
    const r = await m.invoke('Think, then answer.');
    const reasoning = String(r.additional_kwargs.reasoning_content ?? '');
    assert.ok(reasoning.length > 0);
    assert.ok(typeof r.content === 'string' && r.content.length > 0);
    assert.ok(!r.content.includes('</think>'));
    let acc: AIMessageChunk | undefined;
    for await (const ch of await m.stream('Think, then answer.')) acc = acc ? acc.concat(ch) : ch;
    assert.equal(acc!.additional_kwargs.reasoning_content, reasoning);
    assert.equal(acc!.content, r.content);
  });

  test('usage: cache_read counted on a repeated prompt', async () => {
    const m = llm({ maxTokens: 4, modelKwargs: GREEDY });
    const prompt = 'A LangChain story about a cached prompt.';
    await m.invoke(prompt);
    const r = await m.invoke(prompt);
    const u = r.usage_metadata!;
    assert.equal(u.output_tokens, 4);
    assert.equal(u.input_token_details?.cache_read, u.input_tokens - 1);
  });

  test('n: 2, two generations', async () => {
    const r = await llm({ n: 2, maxTokens: 6, temperature: 1, modelKwargs: { seed: 7, ignore_eos: true } }).generate([
      [new HumanMessage('Two stories.')],
    ]);
    assert.equal(r.generations[0]!.length, 2);
    for (const g of r.generations[0]!) assert.ok(g.text.length > 0);
  });

  test('a prompt longer than a slot: a 400 exceed_context_size_error', async () => {
    await assert.rejects(
      llm({ maxTokens: 1 }).invoke('word '.repeat(3000)),
      (e: { status?: number; type?: string }) => {
        assert.equal(e.status, 400);
        assert.equal(e.type, 'exceed_context_size_error');
        return true;
      },
    );
  });

  describe('the Responses API (useResponsesApi)', () => {
    test('invoke and stream', async () => {
      const m = llm({ useResponsesApi: true, maxTokens: 12, modelKwargs: REPEATABLE });
      const r = await m.invoke('Once upon a time');
      assert.ok(r.text.length > 0);
      let text = '';
      for await (const ch of await m.stream('Once upon a time')) text += ch.text;
      assert.equal(text, r.text);
    });

    // a named tool: @langchain/openai 1.5.8 leaves string tool_choices ('any', 'required',
    // 'auto', 'none') out of Responses requests (only object forms pass its formatter)
    test('bound tools, a named tool_choice: a call with valid arguments, streamed and not', async () => {
      const m = llm({ useResponsesApi: true, maxTokens: 120 }).bindTools([weather, add], {
        tool_choice: 'get_weather',
      });
      const r = await m.invoke('What is the weather in Paris?');
      assert.equal(r.tool_calls?.length, 1);
      assert.equal(r.tool_calls![0]!.name, 'get_weather');
      WeatherArgs.parse(r.tool_calls![0]!.args);
      let acc: AIMessageChunk | undefined;
      for await (const ch of await m.stream('What is the weather in Paris?')) acc = acc ? acc.concat(ch) : ch;
      assert.equal(acc!.tool_calls?.length, 1);
      assert.deepEqual(acc!.tool_calls![0]!.args, r.tool_calls![0]!.args);
    });

    test('withStructuredOutput (jsonSchema) with Zod .int()', async () => {
      const out = await llm({ useResponsesApi: true })
        .withStructuredOutput(Person, { method: 'jsonSchema' })
        .invoke('Describe a person.');
      Person.parse(out);
    });
  });

  test('embeddings', async () => {
    const e = new OpenAIEmbeddings({
      model: 'm',
      apiKey: API_KEY,
      configuration: { baseURL: `${server.url}/v1` },
      maxRetries: 0,
    });
    const v = await e.embedDocuments(['a cat', 'a dog']);
    assert.equal(v.length, 2);
    assert.ok(v[0]!.length > 0);
    assert.equal((await e.embedQuery('a cat')).length, v[0]!.length);
  });

  test('a wrong key: a 401 (MODEL_AUTHENTICATION)', async () => {
    await assert.rejects(llm({ apiKey: 'sk-wrong' }).invoke('x'), (e: { status?: number; lc_error_code?: string }) => {
      assert.equal(e.status, 401);
      assert.equal(e.lc_error_code, 'MODEL_AUTHENTICATION');
      return true;
    });
  });
});
