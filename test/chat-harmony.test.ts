// gpt-oss's harmony replies: the analysis channel as reasoning_content, final (and preamble
// commentary) as content, messages to functions.NAME as tool calls (recipient in the role
// or the channel header, with or without a constraint), built-in tool messages dropped,
// anything else left as content; and a harmony template's formatted chat carries the
// parsing format and `reasoning_effort`. End to end on a generated gpt-oss (a grammar makes
// it write a harmony reply): the library's completion and the server's chat completion
// (whole and streamed) return reasoning_content and content.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, loadModel } from '../src/api/index.js';
import {
  CHAT_FORMATS,
  ChatTemplate,
  detectToolCallFormat,
  getFormattedChat,
  isHarmonyTemplate,
  parseChatOutput,
  parseHarmony,
} from '../src/chat/index.js';
import { ensureModel } from '../src/generator/index.js';
import { LlamaServer } from '../src/server/index.js';

let n = 0;
const makeId = () => `call_${n++}`;

test('analysis is reasoning, final is content', () => {
  const r = parseHarmony(
    '<|channel|>analysis<|message|>The user greets me.<|end|><|start|>assistant<|channel|>final<|message|>Hello! How can I help?',
  );
  assert.equal(r.reasoning_content, 'The user greets me.');
  assert.equal(r.content, 'Hello! How can I help?');
  assert.deepEqual(r.tool_calls, []);
});

test('tool calls with the recipient in the channel header or in the role header', () => {
  const a = parseHarmony(
    '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "Paris"}',
    { makeId },
  );
  assert.equal(a.reasoning_content, 'Need the weather.');
  assert.equal(a.content, '');
  assert.deepEqual(a.tool_calls, [
    { type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' }, id: 'call_0' },
  ]);
  const b = parseHarmony(
    '<|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{"q": [1, 2]}<|call|>',
    {
      makeId,
    },
  );
  assert.deepEqual(b.tool_calls, [
    { type: 'function', function: { name: 'lookup', arguments: '{"q":[1,2]}' }, id: 'call_1' },
  ]);
  assert.equal(b.reasoning_content, undefined);
});

test('a commentary preamble is content; built-in tools are dropped; a stray commentary marker is ignored', () => {
  const r = parseHarmony(
    '<|channel|>commentary<|message|>Let me check. <|end|><|start|>assistant<|channel|>commentary to=browser.search<|message|>{"query":"x"}<|end|><|start|>assistant<|channel|>commentary<|channel|>analysis<|message|>ok<|end|><|start|>assistant<|channel|>final<|message|>Done.',
  );
  assert.equal(r.content, 'Let me check. Done.');
  assert.equal(r.reasoning_content, 'ok');
  assert.deepEqual(r.tool_calls, []);
});

test('text that is not harmony stays content', () => {
  assert.deepEqual(parseHarmony('just words'), { content: 'just words', tool_calls: [] });
});

const TEMPLATE =
  "{{ '<|start|>system<|message|>Reasoning: ' + (reasoning_effort | default('medium')) + '<|end|>' }}" +
  "{% for m in messages %}{{ '<|start|>' + m.role + '<|message|>' + m.content + '<|end|>' }}{% endfor %}" +
  '{% if add_generation_prompt %}<|start|>assistant{% endif %}{# <|channel|> #}';

test('a harmony template: detected, parsed with reasoning, reasoning_effort passed to it', () => {
  assert.ok(isHarmonyTemplate(TEMPLATE));
  assert.equal(detectToolCallFormat(TEMPLATE), 'harmony');
  const templates = { default: new ChatTemplate(TEMPLATE) };
  const msgs = [{ role: 'user', content: 'Hi' }];
  const fmt = getFormattedChat(templates, msgs, undefined, { reasoning_effort: 'high' });
  assert.equal(fmt.type, 'jinja');
  assert.equal(CHAT_FORMATS[fmt.chat_format!], 'harmony');
  assert.match(
    fmt.prompt,
    /^<\|start\|>system<\|message\|>Reasoning: high<\|end\|><\|start\|>user<\|message\|>Hi<\|end\|><\|start\|>assistant$/,
  );
  assert.match(getFormattedChat(templates, msgs).prompt, /Reasoning: medium/);
  const parsed = parseChatOutput(
    '<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Yes',
    fmt.chat_format,
  );
  assert.equal(parsed.content, 'Yes');
  assert.equal(parsed.reasoning_content, 'hm');
});

describe('harmony end to end on a generated gpt-oss', () => {
  // the system turn grows with reasoning_effort 'high', so the prompt shows it arrived
  const E2E = TEMPLATE.replace(
    "'<|end|>' }}",
    "'<|end|>' }}{% if reasoning_effort == 'high' %}{{ '<|start|>system<|message|>Think it through, step by step.<|end|>' }}{% endif %}",
  );
  const REPLY = '<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Yes';
  const grammar = `root ::= ${JSON.stringify(REPLY)}`;
  const messages = [{ role: 'user', content: 'Hi' }];
  let model: string;
  let ctx: LlamaContext;
  let server: LlamaServer;
  before(async () => {
    model = ensureModel('tiny-gpt-oss', 'MXFP4_MOE');
    ctx = await loadModel({ model, chat_template: E2E, n_ctx: 512, n_threads: 1 });
    server = await LlamaServer.start({ model, chatTemplate: E2E, port: 0, parallel: 1, nCtx: 512 });
  });
  after(async () => {
    await ctx?.release();
    await server?.close();
  });

  test('completion(): reasoning_content and content; reasoning_effort reaches the template', async () => {
    const run = (effort: 'low' | 'high') =>
      ctx.completion({ messages, reasoning_effort: effort, grammar, n_predict: 200, temperature: 0 });
    const low = await run('low');
    assert.equal(low.text, REPLY);
    assert.equal(low.reasoning_content, 'hm');
    assert.equal(low.content, 'Yes');
    const high = await run('high');
    assert.ok(high.tokens_evaluated > low.tokens_evaluated, `${high.tokens_evaluated} > ${low.tokens_evaluated}`);
    await assert.rejects(
      ctx.completion({ messages, reasoning_effort: 'extreme' as 'high', n_predict: 1 }),
      /reasoning_effort/,
    );
  });

  test('server: message.reasoning_content and content, whole and streamed; a bad effort is a 400', async () => {
    const post = (body: object) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages, grammar, max_tokens: 200, temperature: 0, ...body }),
      });
    const whole = await post({ reasoning_effort: 'low' });
    assert.equal(whole.status, 200);
    const msg = ((await whole.json()) as { choices: { message: Record<string, unknown> }[] }).choices[0].message;
    assert.equal(msg.reasoning_content, 'hm');
    assert.equal(msg.content, 'Yes');

    const streamed = await post({ stream: true });
    assert.equal(streamed.status, 200);
    const deltas = (await streamed.text())
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map(
        (l) => (JSON.parse(l.slice(6)) as { choices: { delta: Record<string, unknown> }[] }).choices[0]?.delta ?? {},
      );
    const text = (k: string) => deltas.map((d) => (typeof d[k] === 'string' ? d[k] : '')).join('');
    assert.equal(text('reasoning_content'), 'hm');
    assert.equal(text('content'), 'Yes');

    const bad = await post({ reasoning_effort: 'extreme' });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /reasoning_effort/);
  });
});
