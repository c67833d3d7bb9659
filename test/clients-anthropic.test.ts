// Anthropic's SDK (@anthropic-ai/sdk 1.15.0), unchanged, against the real server's
// Messages API on loopback: text, the stream (its events and the SDK's accumulated final
// message), stop reasons and usage; tools (tool_choice any and a named tool) with
// tool_use blocks whose input fits the schema, streamed as input_json_delta; a
// conversation with tool_use and tool_result blocks; thinking blocks; count_tokens; a
// wrong key as the SDK's AuthenticationError.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import type { LlamaServer } from '../src/server/index.js';
import { ADD_TOOL, API_KEY, startServer, THINKING_HERMES, WEATHER_TOOL, WeatherArgs } from './helpers/clients.js';

let server: LlamaServer;
let client: Anthropic;
before(async () => {
  server = await startServer({ chatTemplate: THINKING_HERMES });
  client = new Anthropic({ baseURL: server.url, apiKey: API_KEY, maxRetries: 0 });
});
after(async () => {
  await server?.close();
});

// Sampling fields the SDK no longer types (temperature) and llama-server's pass-through
// (chat_template_kwargs) travel in the body as they are.
type Params = Anthropic.MessageCreateParamsNonStreaming & {
  temperature?: number;
  chat_template_kwargs?: Record<string, unknown>;
};
function params(p: Params): Anthropic.MessageCreateParamsNonStreaming {
  return p;
}

const tools = [WEATHER_TOOL, ADD_TOOL].map((t) => ({
  name: t.function.name,
  description: t.function.description,
  input_schema: t.function.parameters as Anthropic.Tool.InputSchema,
}));

describe('@anthropic-ai/sdk 1.15.0', () => {
  test('text: content, stop reason, usage; the same reply streamed', async () => {
    const req = params({
      model: 'm',
      max_tokens: 12,
      temperature: 0,
      system: 'You tell stories.',
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    const r = await client.messages.create(req);
    assert.equal(r.type, 'message');
    assert.equal(r.role, 'assistant');
    assert.equal(r.content[0]!.type, 'text');
    assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason!));
    assert.ok(r.usage.input_tokens > 0);
    assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 12);
    const events: string[] = [];
    let text = '';
    const stream = client.messages.stream(req);
    stream.on('text', (t) => {
      text += t;
    });
    for await (const ev of stream) events.push(ev.type);
    const final = await stream.finalMessage();
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.includes('content_block_start') && events.includes('content_block_delta'));
    assert.equal(text, (r.content[0] as Anthropic.TextBlock).text);
    assert.equal(final.stop_reason, r.stop_reason);
    assert.equal(final.usage.output_tokens, r.usage.output_tokens);
  });

  test('a stop sequence: stop_reason stop_sequence, the text up to it', async () => {
    const ask = params({
      model: 'm',
      max_tokens: 40,
      temperature: 0,
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    const full = ((await client.messages.create(ask)).content[0] as Anthropic.TextBlock).text;
    // a printable character from the middle of the greedy reply
    const at = [...full].findIndex((ch, i) => i >= 3 && /[a-z]/.test(ch));
    assert.ok(at > 0, full);
    const stop = [...full][at]!;
    const r = await client.messages.create({ ...ask, stop_sequences: [stop] });
    assert.equal(r.stop_reason, 'stop_sequence');
    assert.equal(r.stop_sequence, stop);
    assert.equal((r.content[0] as Anthropic.TextBlock).text, full.slice(0, full.indexOf(stop)));
  });

  // one call (with parallel tool use, the tiny model calls again and again until
  // max_tokens cuts the last call, and the stop reason is then max_tokens)
  for (const [what, choice] of [
    ['any', { type: 'any' as const, disable_parallel_tool_use: true }],
    ['a named tool', { type: 'tool' as const, name: 'get_weather', disable_parallel_tool_use: true }],
  ] as const) {
    test(`tools, tool_choice ${what}: tool_use with valid input, streamed as input_json_delta`, async () => {
      const req = params({
        model: 'm',
        max_tokens: 120,
        temperature: 0,
        tools,
        tool_choice: choice,
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      });
      const r = await client.messages.create(req);
      assert.equal(r.stop_reason, 'tool_use');
      const use = r.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      assert.ok(use);
      assert.ok(use.id);
      if (choice.type === 'tool') assert.equal(use.name, 'get_weather');
      if (use.name === 'get_weather') WeatherArgs.parse(use.input);
      let deltas = 0;
      const stream = client.messages.stream(req);
      for await (const ev of stream)
        if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') deltas++;
      const final = await stream.finalMessage();
      assert.ok(deltas > 1, `the input came in ${deltas} delta(s)`);
      const streamed = final.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      assert.equal(streamed.name, use.name);
      assert.deepEqual(streamed.input, use.input);
      assert.equal(final.stop_reason, 'tool_use');
      // the conversation goes on with the tool's result
      const next = await client.messages.create(
        params({
          model: 'm',
          max_tokens: 8,
          temperature: 0,
          tools,
          messages: [
            ...req.messages,
            { role: 'assistant', content: r.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 °C' }] },
          ],
        }),
      );
      assert.equal(next.type, 'message');
    });
  }

  test('thinking: a thinking block apart from the text', async () => {
    // a budget far below Anthropic's minimum (1024; the SDK does not check it) so that a
    // 24-token reply has both; chat_template_kwargs (passed on as llama-server does) opens the block
    const r = await client.messages.create(
      params({
        model: 'm',
        max_tokens: 24,
        temperature: 0,
        thinking: { type: 'enabled', budget_tokens: 6 },
        messages: [{ role: 'user', content: 'Think, then answer.' }],
        chat_template_kwargs: { think: true },
      }),
    );
    const thinkingBlock = r.content.find((b) => b.type === 'thinking') as Anthropic.ThinkingBlock | undefined;
    const text = r.content.find((b) => b.type === 'text') as Anthropic.TextBlock | undefined;
    assert.ok(thinkingBlock && thinkingBlock.thinking.length > 0, JSON.stringify(r.content));
    assert.ok(text && text.text.length > 0);
  });

  test('count_tokens', async () => {
    const r = await client.messages.countTokens({
      model: 'm',
      system: 'You tell stories.',
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    assert.ok(r.input_tokens > 5);
    const withTools = await client.messages.countTokens({
      model: 'm',
      tools,
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    assert.ok(withTools.input_tokens > r.input_tokens);
    // the same count the reply's usage gives
    const m = await client.messages.create({
      model: 'm',
      max_tokens: 1,
      system: 'You tell stories.',
      messages: [{ role: 'user', content: 'Once upon a time' }],
    });
    assert.equal(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0), r.input_tokens);
  });

  test("errors in Anthropic's shape: a wrong key, a bad request", async () => {
    const bad = new Anthropic({ baseURL: server.url, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(
      bad.messages.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof Anthropic.AuthenticationError,
    );
    await assert.rejects(
      // max_tokens left out on purpose
      client.messages.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] } as unknown as Params),
      (e: unknown) => {
        assert.ok(e instanceof Anthropic.BadRequestError);
        assert.equal((e.error as { type: string }).type, 'error');
        assert.equal((e.error as { error: { type: string } }).error.type, 'invalid_request_error');
        return true;
      },
    );
  });
});
