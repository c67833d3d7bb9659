// The official `openai` clients, both majors (6.49.0 and 7), unchanged, against the real
// server on loopback: chat and streaming; structured output with Zod `.int()` (parsed and
// validated); tool_choice required and named, streamed and not, arguments valid against
// the tool's schema; streamed tool-call deltas that add up to the final call; reasoning
// apart from content (a template that opens <think>, a thinking budget that closes it);
// cached_tokens on a repeated prompt; the over-long-prompt error type; CORS preflight;
// n: 2; the Responses API (text, stream, tools, JSON schema); embeddings; a wrong key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI6 from 'openai';
import { zodResponseFormat as zodResponseFormat6, zodTextFormat as zodTextFormat6 } from 'openai/helpers/zod';
import OpenAI7 from 'openai-v7';
import { zodResponseFormat as zodResponseFormat7, zodTextFormat as zodTextFormat7 } from 'openai-v7/helpers/zod';
import type { LlamaServer } from '../src/server/index.js';
import {
  ADD_TOOL,
  API_KEY,
  GREEDY,
  Person,
  REPEATABLE,
  RICH_SCHEMA,
  Rich,
  startServer,
  THINKING_HERMES,
  thinking,
  WEATHER_TOOL,
  WeatherArgs,
} from './helpers/clients.js';

// biome-ignore lint/suspicious/noExplicitAny: both majors' clients, driven through the same calls
type Client = any;

const MAJORS = [
  { name: 'openai 6.49.0', OpenAI: OpenAI6 as unknown as typeof OpenAI6, zrf: zodResponseFormat6, ztf: zodTextFormat6 },
  {
    name: 'openai 7',
    OpenAI: OpenAI7 as unknown as typeof OpenAI6,
    zrf: zodResponseFormat7 as unknown as typeof zodResponseFormat6,
    ztf: zodTextFormat7 as unknown as typeof zodTextFormat6,
  },
];

let hermes: LlamaServer;
let plain: LlamaServer;

before(async () => {
  // Hermes tool calls and an optional reasoning block; and the model's own (no) template:
  // no call syntax, so tools add no grammar and replies are content (llama.cpp's reading)
  hermes = await startServer({ chatTemplate: THINKING_HERMES });
  plain = await startServer({ embeddings: false, cors: undefined });
});
after(async () => {
  await hermes?.close();
  await plain?.close();
});

const ask = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

for (const { name, OpenAI, zrf, ztf } of MAJORS) {
  describe(name, () => {
    let c: Client;
    let g: Client;
    before(() => {
      c = new OpenAI({ baseURL: `${hermes.url}/v1`, apiKey: API_KEY, maxRetries: 0 });
      g = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: API_KEY, maxRetries: 0 });
    });

    test('chat, and the same reply streamed', async () => {
      const req = {
        model: 'm',
        messages: [{ role: 'user', content: 'Once upon a time' }],
        max_tokens: 16,
        ...REPEATABLE,
      };
      const r = await c.chat.completions.create(req);
      assert.equal(r.choices[0].message.role, 'assistant');
      assert.ok(r.choices[0].message.content.length > 0);
      let text = '';
      for await (const ch of await c.chat.completions.create({ ...req, stream: true })) {
        text += ch.choices[0]?.delta?.content ?? '';
      }
      assert.equal(text, r.choices[0].message.content);
    });

    test('structured output with Zod .int(): parsed and valid', async () => {
      for (const client of [c, g]) {
        const r = await client.chat.completions.parse({
          model: 'm',
          messages: [{ role: 'user', content: 'Describe a person.' }],
          response_format: zrf(Person, 'person'),
          max_tokens: 200,
          temperature: 0,
        });
        const parsed = r.choices[0].message.parsed;
        assert.ok(parsed, `no parsed output: ${r.choices[0].message.content}`);
        Person.parse(parsed);
        assert.ok(Number.isInteger(parsed.age));
      }
    });

    test('JSON schema keywords (formats, pattern, tuples, anyOf/oneOf/allOf, $ref, int64): every reply validates', async () => {
      const text = JSON.stringify(RICH_SCHEMA);
      for (const k of [
        '"$defs"',
        '"$ref"',
        '"prefixItems"',
        '"anyOf"',
        '"oneOf"',
        '"allOf"',
        '"pattern"',
        '"format"',
      ]) {
        assert.ok(text.includes(k), `the schema has ${k}`);
      }
      for (const seed of [1, 2, 3]) {
        const r = await g.chat.completions.create({
          model: 'm',
          messages: [{ role: 'user', content: 'An event.' }],
          response_format: { type: 'json_schema', json_schema: { name: 'rich', schema: RICH_SCHEMA } },
          max_tokens: 800,
          seed,
          temperature: 1,
        });
        assert.equal(r.choices[0].finish_reason, 'stop');
        Rich.parse(JSON.parse(r.choices[0].message.content));
      }
    });

    test('a keyword a grammar cannot enforce: a 400 naming it', async () => {
      await assert.rejects(
        c.chat.completions.create({
          model: 'm',
          messages: [{ role: 'user', content: 'x' }],
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'x', schema: { type: 'array', items: { type: 'integer' }, uniqueItems: true } },
          },
          max_tokens: 4,
        }),
        (e: InstanceType<typeof OpenAI.BadRequestError>) => {
          assert.ok(e instanceof OpenAI.BadRequestError);
          assert.match(e.message, /#\/uniqueItems: 'uniqueItems' is not supported/);
          return true;
        },
      );
    });

    test("grammar with tools: a 400 as llama-server's (the library lets the grammar win, as llama.node)", async () => {
      await assert.rejects(
        c.chat.completions.create({
          model: 'm',
          messages: ask,
          tools: [WEATHER_TOOL],
          max_tokens: 4,
          grammar: 'root ::= "x"', // a llama-server field
        }),
        (e: InstanceType<typeof OpenAI.BadRequestError>) => {
          assert.ok(e instanceof OpenAI.BadRequestError);
          assert.equal(e.param, 'grammar');
          return true;
        },
      );
      // with tool_choice none the grammar applies
      const r = await c.chat.completions.create({
        model: 'm',
        messages: ask,
        tools: [WEATHER_TOOL],
        tool_choice: 'none',
        max_tokens: 4,
        grammar: 'root ::= "yes" | "no"', // a llama-server field
      });
      assert.ok(['yes', 'no'].includes(r.choices[0].message.content));
    });

    for (const [what, choice] of [
      ['required', 'required'],
      ['named (object form)', { type: 'function', function: { name: 'get_weather' } }],
    ] as const) {
      test(`tool_choice ${what}: a call with valid arguments, streamed and not`, async () => {
        for (const client of [c]) {
          const req = {
            model: 'm',
            messages: ask,
            tools: [WEATHER_TOOL, ADD_TOOL],
            tool_choice: choice,
            max_tokens: 120,
            temperature: 0,
          };
          const r = await client.chat.completions.create(req);
          const m = r.choices[0].message;
          assert.equal(r.choices[0].finish_reason, 'tool_calls');
          assert.equal(m.tool_calls.length, 1);
          const call = m.tool_calls[0];
          assert.equal(call.type, 'function');
          assert.ok(call.id);
          if (typeof choice === 'object') assert.equal(call.function.name, 'get_weather');
          if (call.function.name === 'get_weather') WeatherArgs.parse(JSON.parse(call.function.arguments));
          // streamed: fragments of the arguments that add up to the final call
          const fragments: string[] = [];
          let id: string | undefined;
          let fname: string | undefined;
          let finish: string | undefined;
          for await (const ch of await client.chat.completions.create({ ...req, stream: true })) {
            const d = ch.choices[0]?.delta;
            for (const t of d?.tool_calls ?? []) {
              assert.equal(t.index, 0);
              id ??= t.id;
              fname ??= t.function?.name;
              if (t.function?.arguments) fragments.push(t.function.arguments);
            }
            finish = ch.choices[0]?.finish_reason ?? finish;
          }
          assert.equal(finish, 'tool_calls');
          assert.ok(fragments.length > 1, `the arguments came in ${fragments.length} piece(s)`);
          assert.equal(fname, call.function.name, 'same call as the non-streamed reply (greedy)');
          assert.ok(id);
          assert.deepEqual(JSON.parse(fragments.join('')), JSON.parse(call.function.arguments));
        }
      });

      test(`tool_choice ${what} with a template that has no call syntax: content, no call (llama-server's reply)`, async () => {
        const req = {
          model: 'm',
          messages: ask,
          tools: [WEATHER_TOOL, ADD_TOOL],
          tool_choice: choice,
          max_tokens: 24,
          temperature: 0,
        };
        const r = await g.chat.completions.create(req);
        const m = r.choices[0].message;
        assert.equal(r.choices[0].finish_reason, 'length');
        assert.equal((m.tool_calls ?? []).length, 0);
        assert.ok(m.content.length > 0);
        // the same reply without tools: they changed neither the prompt nor the sampling
        const bare = await g.chat.completions.create({ model: 'm', messages: ask, max_tokens: 24, temperature: 0 });
        assert.equal(m.content, bare.choices[0].message.content);
        let streamed = '';
        for await (const ch of await g.chat.completions.create({ ...req, stream: true })) {
          assert.equal(ch.choices[0]?.delta?.tool_calls, undefined);
          streamed += ch.choices[0]?.delta?.content ?? '';
        }
        assert.equal(streamed, m.content);
      });
    }

    test("streamed tool-call deltas reassemble (the client's own stream helper)", async () => {
      const stream = c.chat.completions.stream({
        model: 'm',
        messages: ask,
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
        max_tokens: 120,
      });
      const final = await stream.finalChatCompletion();
      const call = final.choices[0].message.tool_calls[0];
      assert.equal(call.function.name, 'get_weather');
      WeatherArgs.parse(JSON.parse(call.function.arguments));
    });

    test('reasoning apart from content, streamed and not', async () => {
      const req = {
        model: 'm',
        messages: [{ role: 'user', content: 'Think, then answer.' }],
        max_tokens: 24,
        ...REPEATABLE,
        ...thinking(6),
      };
      const r = await c.chat.completions.create(req);
      const m = r.choices[0].message as { content: string; reasoning_content?: string };
      assert.ok(m.reasoning_content && m.reasoning_content.length > 0, 'reasoning_content');
      assert.ok(m.content.length > 0, 'content');
      assert.ok(!m.content.includes('</think>'));
      let reasoning = '';
      let content = '';
      for await (const ch of await c.chat.completions.create({ ...req, stream: true })) {
        const d = ch.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
        reasoning += d?.reasoning_content ?? '';
        content += d?.content ?? '';
      }
      assert.equal(reasoning, m.reasoning_content);
      assert.equal(content, m.content);
      // reasoning_format none: the block stays in the content
      const none = await c.chat.completions.create({ ...req, reasoning_format: 'none' });
      assert.equal((none.choices[0].message as { reasoning_content?: string }).reasoning_content, undefined);
      assert.match(none.choices[0].message.content, /<\/think>/);
    });

    test('cached_tokens counted on a repeated prompt; logprobs', async () => {
      const req = {
        model: 'm',
        messages: [{ role: 'user', content: `A story about ${name} and a cached prompt.` }],
        max_tokens: 4,
        ...GREEDY,
        logprobs: true,
        top_logprobs: 2,
      };
      const a = await c.chat.completions.create(req);
      const b = await c.chat.completions.create(req);
      // the first shares the template's system turn with earlier requests at most
      assert.ok(a.usage.prompt_tokens_details.cached_tokens < a.usage.prompt_tokens - 10);
      assert.equal(b.usage.prompt_tokens_details.cached_tokens, b.usage.prompt_tokens - 1);
      assert.equal(b.choices[0].logprobs.content.length, 4);
      assert.equal(b.choices[0].logprobs.content[0].top_logprobs.length, 2);
    });

    test('a prompt longer than a slot: exceed_context_size_error', async () => {
      await assert.rejects(
        c.chat.completions.create({
          model: 'm',
          messages: [{ role: 'user', content: 'word '.repeat(3000) }],
          max_tokens: 1,
        }),
        (e: InstanceType<typeof OpenAI.BadRequestError>) => {
          assert.ok(e instanceof OpenAI.BadRequestError);
          assert.equal(e.type, 'exceed_context_size_error');
          return true;
        },
      );
    });

    test('n: 2 (one prompt evaluation, two choices)', async () => {
      const r = await c.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'Two stories.' }],
        max_tokens: 8,
        n: 2,
        seed: 7,
        temperature: 1,
        ignore_eos: true,
      });
      assert.deepEqual(
        r.choices.map((x: { index: number }) => x.index),
        [0, 1],
      );
      assert.equal(r.usage.completion_tokens, 16);
      for (const x of r.choices) assert.ok(x.message.content.length > 0);
      const seen = new Set<number>();
      for await (const ch of await c.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'Two stories.' }],
        max_tokens: 4,
        n: 2,
        stream: true,
      })) {
        for (const x of ch.choices) seen.add(x.index);
      }
      assert.deepEqual([...seen].sort(), [0, 1]);
    });

    test('Responses API: text, stream, tools, JSON schema', async () => {
      const r = await c.responses.create({
        model: 'm',
        input: 'Once upon a time',
        max_output_tokens: 12,
        ...REPEATABLE,
      });
      assert.equal(r.object, 'response');
      assert.ok(r.output_text.length > 0);
      const types: string[] = [];
      let text = '';
      for await (const ev of await c.responses.create({
        model: 'm',
        input: 'Once upon a time',
        max_output_tokens: 12,
        ...REPEATABLE,
        stream: true,
      })) {
        types.push(ev.type);
        if (ev.type === 'response.output_text.delta') text += ev.delta;
      }
      assert.equal(types[0], 'response.created');
      assert.ok(types.includes('response.output_item.added') && types.includes('response.output_item.done'));
      assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)!));
      assert.equal(text, r.output_text);
      // a function tool, required
      const t = await c.responses.create({
        model: 'm',
        input: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.function.parameters, strict: true }],
        tool_choice: 'required',
        max_output_tokens: 120,
      });
      const fc = t.output.find((o: { type: string }) => o.type === 'function_call');
      assert.ok(fc, JSON.stringify(t.output));
      assert.equal(fc.name, 'get_weather');
      WeatherArgs.parse(JSON.parse(fc.arguments));
      // and the call's output sent back, stateless
      const next = await c.responses.create({
        model: 'm',
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
          { type: 'function_call_output', call_id: fc.call_id, output: 'sunny' },
        ],
        max_output_tokens: 8,
        ...GREEDY,
      });
      assert.ok(next.output_text.length > 0);
      // structured output (text.format)
      const p = await c.responses.parse({
        model: 'm',
        input: 'Describe a person.',
        text: { format: ztf(Person, 'person') },
        max_output_tokens: 200,
        temperature: 0,
      });
      Person.parse(p.output_parsed);
      // nothing is stored: previous_response_id is refused, clearly
      await assert.rejects(
        c.responses.create({ model: 'm', input: 'x', previous_response_id: r.id }),
        (e: Error & { status?: number }) => e.status === 400 && /stores no responses/.test(e.message),
      );
    });

    test('embeddings', async () => {
      const e = await c.embeddings.create({ model: 'm', input: ['a cat', 'a dog'] });
      assert.equal(e.data.length, 2);
      assert.ok(e.data[0].embedding.length > 0);
      const b64 = await c.embeddings.create({ model: 'm', input: 'a cat', encoding_format: 'base64' });
      const bytes = Buffer.from(b64.data[0].embedding as unknown as string, 'base64');
      assert.equal(bytes.length / 4, e.data[0].embedding.length);
      assert.ok(Math.abs(bytes.readFloatLE(0) - e.data[0].embedding[0]) < 1e-6);
    });

    test('a wrong key is an AuthenticationError', async () => {
      const bad = new OpenAI({ baseURL: `${hermes.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
      await assert.rejects(
        bad.chat.completions.create({ model: 'm', messages: ask, max_tokens: 1 }),
        (e: unknown) => e instanceof OpenAI.AuthenticationError,
      );
    });
  });
}

test('CORS preflight and headers (as llama-server)', async () => {
  const pre = await fetch(`${hermes.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: {
      Origin: 'http://app.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type',
    },
  });
  assert.equal(pre.status, 200);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.equal(pre.headers.get('access-control-allow-credentials'), 'true');
  assert.match(pre.headers.get('access-control-allow-methods')!, /POST/);
  assert.equal(pre.headers.get('access-control-allow-headers'), '*');
  const r = await fetch(`${hermes.url}/v1/models`, { headers: { Origin: 'http://app.example' } });
  assert.equal(r.headers.get('access-control-allow-origin'), 'http://app.example');
});
