// Replies stopped by max_tokens on every API of the server, while a forced tool call or a
// grammar was being written, streamed and not: OpenAI chat finish_reason "length" (never
// "tool_calls") with the call as far as written ("{" after its name, unterminated
// arguments; llama-server's reading), reasoning kept; completions "length"; Responses
// status "incomplete" (incomplete_details max_output_tokens) with the call item
// incomplete; Anthropic stop_reason "max_tokens" (a tool_use whose input does not parse is
// {}, as llama-server's); llama-server's /completion stop_type "limit". A reply that ends
// by itself still says "tool_calls" / "tool_use" / "completed". The cut points come from
// the same request uncut (greedy, every prompt evaluated afresh).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LlamaServer } from '../src/server/index.js';
import { API_KEY, startServer, THINKING_HERMES, thinking, WEATHER_TOOL } from './helpers/clients.js';
import { FORCED_CALL, referenceCall } from './helpers/cut.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read by shape
type Json = any;

const H = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };

let server: LlamaServer;

async function post(path: string, body: unknown, s = server): Promise<Json> {
  const r = await fetch(`${s.url}${path}`, { method: 'POST', headers: H, body: JSON.stringify(body) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return JSON.parse(text);
}

/** A streamed answer's events: each `data:` line parsed, with its `event:` name when it has one. */
async function events(path: string, body: Record<string, unknown>): Promise<{ event?: string; data: Json }[]> {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: H,
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(r.status, 200);
  const out: { event?: string; data: Json }[] = [];
  for (const block of (await r.text()).split('\n\n')) {
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (data === undefined || data === '[DONE]') continue;
    out.push({ ...(event ? { event } : {}), data: JSON.parse(data) });
  }
  return out;
}

const { messages: ask, ...forced } = FORCED_CALL;
const reference = (extra: Record<string, unknown> = {}) => referenceCall(server.url, extra);

/** `args` is what the whole arguments `whole` begin with, and does not parse. */
function unfinished(args: string, whole: string): void {
  assert.ok(whole.startsWith(args) && args.length < whole.length, `${args} is not a prefix of ${whole}`);
  assert.throws(() => JSON.parse(args), SyntaxError);
}

let ref: Awaited<ReturnType<typeof reference>>;
before(async () => {
  server = await startServer({ chatTemplate: THINKING_HERMES, embeddings: false });
  ref = await reference();
});
after(async () => {
  await server?.close();
});

describe('OpenAI chat completions', () => {
  const chat = (n: number, extra: Record<string, unknown> = {}) =>
    post('/v1/chat/completions', { messages: ask, ...forced, ...extra, max_tokens: n });

  test('a call cut by max_tokens: finish_reason "length", the call as far as written', async () => {
    const name = (await chat(ref.points.afterName)).choices[0];
    assert.equal(name.finish_reason, 'length');
    assert.equal(name.message.content, null);
    assert.equal(name.message.tool_calls.length, 1);
    assert.equal(name.message.tool_calls[0].function.name, 'get_weather');
    assert.equal(name.message.tool_calls[0].function.arguments, '{');
    const mid = (await chat(ref.points.inArgs)).choices[0];
    assert.equal(mid.finish_reason, 'length');
    unfinished(mid.message.tool_calls[0].function.arguments, ref.args);
    // arguments that parse, in a call that was not closed: still cut
    const closed = (await chat(ref.points.argsClosed)).choices[0];
    assert.equal(closed.finish_reason, 'length');
    assert.equal(closed.message.tool_calls[0].function.arguments, ref.args);
  });

  test('streamed: the deltas sent add up to the same call; the last chunk says "length"', async () => {
    const unstreamed = (await chat(ref.points.inArgs)).choices[0].message.tool_calls[0];
    const chunks = await events('/v1/chat/completions', { messages: ask, ...forced, max_tokens: ref.points.inArgs });
    let args = '';
    let name: string | undefined;
    const finishes: string[] = [];
    for (const { data } of chunks) {
      for (const ch of data.choices) {
        for (const t of ch.delta.tool_calls ?? []) {
          name ??= t.function?.name;
          args += t.function?.arguments ?? '';
        }
        if (ch.finish_reason) finishes.push(ch.finish_reason);
      }
    }
    assert.deepEqual(finishes, ['length']);
    assert.equal(name, 'get_weather');
    assert.equal(args, unstreamed.function.arguments);
    unfinished(args, ref.args);
  });

  test('streamed: the name and "{" come in one delta, as llama-server sends them', async () => {
    const chunks = await events('/v1/chat/completions', { messages: ask, ...forced, max_tokens: ref.points.afterName });
    const calls = chunks.flatMap(({ data }) => data.choices.flatMap((ch: Json) => ch.delta.tool_calls ?? []));
    assert.equal(calls[0].function.name, 'get_weather');
    assert.equal(calls[0].function.arguments, '{');
    assert.equal(calls.length, 1, JSON.stringify(calls));
  });

  test('cut before the name is complete: no call; the content is the raw text, unstreamed (llama-server falls back to it when nothing was read), nothing streamed', async () => {
    const c = (await chat(ref.points.beforeName)).choices[0];
    assert.equal(c.finish_reason, 'length');
    assert.equal(c.message.tool_calls, undefined);
    assert.match(c.message.content, /^<tool_call>\s*\{/);
    const chunks = await events('/v1/chat/completions', {
      messages: ask,
      ...forced,
      max_tokens: ref.points.beforeName,
    });
    const deltas = chunks.flatMap(({ data }) => data.choices.map((ch: Json) => ch.delta));
    assert.ok(
      deltas.every((d: Json) => !d.content && !d.tool_calls),
      JSON.stringify(deltas),
    );
  });

  test('reasoning before a cut call is kept', async () => {
    const think = await reference(thinking(6));
    assert.ok(think.reasoning);
    for (const stream of [false, true]) {
      const body = { messages: ask, ...forced, ...thinking(6), max_tokens: think.points.inArgs };
      let reasoning = '';
      let args = '';
      let finish: string | undefined;
      if (stream) {
        for (const { data } of await events('/v1/chat/completions', body)) {
          const ch = data.choices[0];
          if (!ch) continue;
          reasoning += ch.delta.reasoning_content ?? '';
          for (const t of ch.delta.tool_calls ?? []) args += t.function?.arguments ?? '';
          finish = ch.finish_reason ?? finish;
        }
      } else {
        const ch = (await post('/v1/chat/completions', body)).choices[0];
        reasoning = ch.message.reasoning_content;
        args = ch.message.tool_calls[0].function.arguments;
        finish = ch.finish_reason;
      }
      assert.equal(finish, 'length', `stream: ${stream}`);
      assert.equal(reasoning, think.reasoning);
      unfinished(args, think.args);
    }
  });

  test('a call cut by the context (no max_tokens): "length" too', async () => {
    // one slot whose context ends where the reference call is inside its arguments
    const nCtx = ref.promptTokens + ref.points.inArgs;
    const small = await startServer({ chatTemplate: THINKING_HERMES, embeddings: false, parallel: 1, nCtx });
    try {
      const r = (await post('/v1/chat/completions', { messages: ask, ...forced }, small)).choices[0];
      assert.equal(r.finish_reason, 'length');
      unfinished(r.message.tool_calls[0].function.arguments, ref.args);
    } finally {
      await small.close();
    }
  });

  test('a call that ends by itself is still "tool_calls"', async () => {
    const r = (await chat(300)).choices[0];
    assert.equal(r.finish_reason, 'tool_calls');
    assert.equal(r.message.tool_calls[0].function.arguments, ref.args);
  });

  test('a JSON schema cut: "length", and /v1/completions with a grammar too', async () => {
    const schema = {
      type: 'json_schema',
      json_schema: { name: 'person', schema: { type: 'object', properties: { name: { type: 'string' } } } },
    };
    const body = { messages: ask, response_format: schema, max_tokens: 6, temperature: 0 };
    const r = (await post('/v1/chat/completions', body)).choices[0];
    assert.equal(r.finish_reason, 'length');
    assert.throws(() => JSON.parse(r.message.content), SyntaxError);
    const s = await events('/v1/chat/completions', body);
    assert.equal(s.map((e) => e.data.choices[0]?.finish_reason).find(Boolean), 'length');
    const cbody = { prompt: 'Answer:', grammar: 'root ::= "yes, " [a-z ]+ "."', max_tokens: 4, temperature: 0 };
    assert.equal((await post('/v1/completions', cbody)).choices[0].finish_reason, 'length');
    const cs = await events('/v1/completions', cbody);
    assert.equal(cs.map((e) => e.data.choices[0]?.finish_reason).find(Boolean), 'length');
  });
});

describe('Responses API', () => {
  const body = (n: number) => ({
    input: ask,
    tools: [{ type: 'function', ...WEATHER_TOOL.function }],
    tool_choice: 'required',
    temperature: 0,
    cache_prompt: false,
    max_output_tokens: n,
  });

  test('a call cut by max_output_tokens: status "incomplete", the call item incomplete; streamed the same', async () => {
    const r = await post('/v1/responses', body(ref.points.inArgs));
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(r.output.length, 1);
    const call = r.output[0];
    assert.equal(call.type, 'function_call');
    assert.equal(call.status, 'incomplete');
    assert.equal(call.name, 'get_weather');
    unfinished(call.arguments, ref.args);
    const s = await events('/v1/responses', body(ref.points.inArgs));
    const last = s.at(-1)!;
    assert.equal(last.event, 'response.incomplete');
    assert.equal(last.data.response.status, 'incomplete');
    assert.deepEqual(last.data.response.incomplete_details, { reason: 'max_output_tokens' });
    const done = s.find((e) => e.event === 'response.output_item.done')!.data.item;
    assert.equal(done.status, 'incomplete');
    assert.equal(done.arguments, call.arguments);
    const deltas = s.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta);
    assert.equal(deltas.join(''), call.arguments);
  });

  test('a call that ends by itself: "completed"', async () => {
    const r = await post('/v1/responses', body(300));
    assert.equal(r.status, 'completed');
    assert.equal(r.incomplete_details, null);
    assert.equal(r.output[0].status, 'completed');
    assert.equal(r.output[0].arguments, ref.args);
  });
});

describe('Anthropic Messages API', () => {
  const body = (n: number) => ({
    model: 'm',
    max_tokens: n,
    temperature: 0,
    cache_prompt: false,
    // the same tool as the chat requests (the same prompt, so the same cut points)
    tools: [
      {
        name: 'get_weather',
        description: WEATHER_TOOL.function.description,
        input_schema: WEATHER_TOOL.function.parameters,
      },
    ],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    messages: ask,
  });

  test("cut before the name is complete: one text block with the raw text (llama-server's fallback)", async () => {
    const a = await post('/v1/messages', body(ref.points.beforeName));
    assert.equal(a.stop_reason, 'max_tokens');
    assert.deepEqual(
      a.content.map((b: Json) => b.type),
      ['text'],
    );
    assert.match(a.content[0].text, /^<tool_call>\s*\{/);
  });

  test('a tool_use cut by max_tokens: stop_reason "max_tokens"; streamed the same', async () => {
    const mid = await post('/v1/messages', body(ref.points.inArgs));
    assert.equal(mid.stop_reason, 'max_tokens');
    assert.equal(mid.content.length, 1);
    assert.equal(mid.content[0].type, 'tool_use');
    assert.equal(mid.content[0].name, 'get_weather');
    assert.deepEqual(mid.content[0].input, {}); // llama-server's: input that does not parse is {}
    const closed = await post('/v1/messages', body(ref.points.argsClosed));
    assert.equal(closed.stop_reason, 'max_tokens');
    assert.deepEqual(closed.content[0].input, JSON.parse(ref.args));
    const s = await events('/v1/messages', body(ref.points.inArgs));
    const stop = s.find((e) => e.event === 'message_delta')!.data.delta;
    assert.deepEqual(stop, { stop_reason: 'max_tokens', stop_sequence: null });
    const json = s
      .filter((e) => e.event === 'content_block_delta' && e.data.delta.type === 'input_json_delta')
      .map((e) => e.data.delta.partial_json)
      .join('');
    unfinished(json, ref.args);
  });

  test('a tool_use that ends by itself: "tool_use"', async () => {
    const r = await post('/v1/messages', body(300));
    assert.equal(r.stop_reason, 'tool_use');
    assert.deepEqual(r.content[0].input, JSON.parse(ref.args));
  });
});

describe("llama-server's /completion", () => {
  test('a JSON schema cut by n_predict: stop_type "limit", streamed and not', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 5 } },
      required: ['name'],
      additionalProperties: false,
    };
    const body = { prompt: 'A person:', json_schema: schema };
    const r = await post('/completion', { ...body, n_predict: 5, temperature: 0 });
    assert.equal(r.stop_type, 'limit');
    assert.equal(r.tokens_predicted, 5);
    const s = await events('/completion', { ...body, n_predict: 5, temperature: 0 });
    assert.equal(s.at(-1)!.data.stop_type, 'limit');
    const whole = await post('/completion', { ...body, n_predict: 400, temperature: 0 });
    assert.equal(whole.stop_type, 'eos');
  });
});
