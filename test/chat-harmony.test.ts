// gpt-oss's harmony replies: the analysis channel as reasoning_content, final (and preamble
// commentary) as content, messages to functions.NAME as tool calls (recipient in the role
// or the channel header, with or without a constraint), built-in tool messages dropped,
// anything else left as content; and a harmony template's formatted chat carries the
// parsing format and `reasoning_effort`.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CHAT_FORMATS,
  ChatTemplate,
  detectToolCallFormat,
  getFormattedChat,
  isHarmonyTemplate,
  parseChatOutput,
  parseHarmony,
} from '../src/chat/index.js';

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
