// Chat templates of the recurrent and hybrid model families render as llama.cpp renders
// them: Qwen3.5 (thinking on and off, reasoning kept after the last user turn and dropped
// before it, tools with its XML calls), LFM2 (tools), Granite 4 (tools) and Nemotron Nano 2
// (/no_think, tools), against @fugood/llama.node 1.7.15's getFormattedChat(messages,
// template, { jinja: true }) (test/refs/chat-recurrent/, made by make-refs.mjs there; the
// templates' sources are in its README). The model whose BOS/EOS the templates see is the
// generated tiny-gemma3 (<s>, </s>), as for the reference.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  type ChatMessage,
  ChatOutputParser,
  getFormattedChat,
  loadChatTemplates,
  splitReasoning,
  type Tool,
} from '../src/chat/index.js';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { REPO_ROOT } from './helpers/shared.js';

const DIR = join(REPO_ROOT, 'test/refs/chat-recurrent');

interface Case {
  name: string;
  template: string;
  messages: ChatMessage[];
  params: { tools?: Tool[]; enable_thinking?: boolean; add_generation_prompt?: boolean };
}

interface Render {
  name: string;
  template: string;
  type?: string;
  prompt?: string;
  thinking_forced_open?: boolean;
  error?: string;
}

const cases = JSON.parse(readFileSync(join(DIR, 'cases.json'), 'utf8')) as Case[];
const refs = JSON.parse(readFileSync(join(DIR, 'renders.json'), 'utf8')) as { now: number; renders: Render[] };
const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-chat-recurrent-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const model = join(tmp, 'tiny-gemma3.gguf');
generateModel(presetSpec('tiny-gemma3', 'F32'), model);
const file = openGGUF(model);
after(() => file.close());

for (const c of cases) {
  test(`chat template ${c.name}: as llama.cpp renders it`, () => {
    const ref = refs.renders.find((r) => r.name === c.name);
    assert.ok(ref && ref.prompt !== undefined, `no reference render for '${c.name}'`);
    const template = readFileSync(join(DIR, c.template), 'utf8');
    // as the reference: the model carries the template (so Jinja is used) and it is passed too
    const templates = loadChatTemplates(file, { override: template });
    setLogCallback(() => {});
    try {
      const r = getFormattedChat(templates, c.messages, template, { jinja: true, now: refs.now, ...c.params });
      assert.equal(r.type, 'jinja');
      assert.equal(r.prompt, ref.prompt);
      assert.equal(r.thinking_forced_open, ref.thinking_forced_open, 'thinking_forced_open');
    } finally {
      setLogCallback(null);
    }
  });
}

test('a <think> block is split off replies as llama.cpp does (reasoning_content)', () => {
  // the generation prompt opened it (Qwen3.5, thinking on): reasoning until the closing tag
  assert.deepEqual(splitReasoning('Small primes.\n</think>\n\n2, 3, 5.', true), {
    reasoning_content: 'Small primes.',
    content: '2, 3, 5.',
  });
  // never closed: all reasoning
  assert.deepEqual(splitReasoning('Still thinking', true), { reasoning_content: 'Still thinking', content: '' });
  // not opened by the prompt: only a reply that starts with the tag has one
  assert.deepEqual(splitReasoning('\n<think>\nHm.\n</think>\nYes.', false), {
    reasoning_content: 'Hm.',
    content: 'Yes.',
  });
  assert.deepEqual(splitReasoning('Yes. <think>no</think>', false), { content: 'Yes. <think>no</think>' });
  // an empty block gives no reasoning (thinking off: the prompt closed it already)
  assert.deepEqual(splitReasoning('<think>\n\n</think>\n\nYes.', false), { content: 'Yes.' });
});

test('a streamed reply splits as the whole one, each piece only extending the last', () => {
  const replies: [string, boolean][] = [
    ['Small primes.\n</think>\n\n2, 3, 5.', true],
    ['Still thinking </thi', true],
    ['  \n</think>\nOnly content.', true],
    ['\n<think>\nHm.\n</think>\nYes.', false],
    ['<thinking> is not a tag', false],
    ['Yes. <think>no</think>', false],
    ['<think>\n\n</think>\n\nYes.', false],
    ['<think>a </ b </th c</think>  d', false],
  ];
  for (const [reply, open] of replies) {
    for (const step of [1, 2, 3, 5]) {
      const s = new ChatOutputParser({ reasoning: true, thinkingForcedOpen: open });
      let prev = { reasoning: '', content: '' };
      for (let n = step; ; n = Math.min(n + step, reply.length)) {
        const r = s.update(reply.slice(0, n));
        const cur = { reasoning: r.reasoning_content ?? '', content: r.content };
        assert.ok(cur.reasoning.startsWith(prev.reasoning), `${JSON.stringify(reply)} at ${n}: reasoning`);
        assert.ok(cur.content.startsWith(prev.content), `${JSON.stringify(reply)} at ${n}: content`);
        prev = cur;
        if (n === reply.length) {
          const whole = splitReasoning(reply, open);
          // a tail that could still begin the closing tag waits for the reply's end
          const { tool_calls, ...last } = s.update(reply, true);
          assert.deepEqual(tool_calls, []);
          assert.deepEqual(last, whole, JSON.stringify(reply));
          assert.ok((last.reasoning_content ?? '').startsWith(cur.reasoning), `${JSON.stringify(reply)}: the end`);
          assert.ok(last.content.startsWith(cur.content), `${JSON.stringify(reply)}: the end`);
          break;
        }
      }
    }
  }
});
