// Chat templates of the sliding-window model families render as llama.cpp renders them:
// Gemma 2, Gemma 3, Gemma 4 (thinking, tools), Phi-3.5, Phi-4-mini (tools) and SmolLM3
// (/think, /no_think, /system_override, enable_thinking), against @fugood/llama.node
// 1.7.15's getFormattedChat(messages, template, { jinja: true }) (test/refs/chat-swa/,
// made by make-refs.mjs there; the templates' sources are in its README). The model whose
// BOS/EOS the templates see is the generated tiny-gemma3 (<s>, </s>), as for the reference.
// A template that fails falls back to the built-in format detected from its text: llama.cpp's
// (Gemma 4's is our own: llama.cpp has none).

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { applyBuiltin, detectBuiltin, getFormattedChat, loadChatTemplates, type Tool } from '../src/chat/index.js';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { REPO_ROOT } from './helpers/shared.js';

const DIR = join(REPO_ROOT, 'test/refs/chat-swa');

interface Case {
  name: string;
  template: string;
  messages: { role: string; content: string }[];
  params: { tools?: Tool[]; enable_thinking?: boolean; add_generation_prompt?: boolean };
}

interface Render {
  name: string;
  template: string;
  type?: string;
  prompt?: string;
  error?: string;
}

const cases = JSON.parse(readFileSync(join(DIR, 'cases.json'), 'utf8')) as Case[];
const refs = JSON.parse(readFileSync(join(DIR, 'renders.json'), 'utf8')) as { now: number; renders: Render[] };
const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-chat-swa-'));
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
    } finally {
      setLogCallback(null);
    }
  });
}

test('built-in fallbacks: each family is detected from its template and renders its format', () => {
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ];
  const want: [string, string, string][] = [
    ['gemma2.jinja', 'gemma', '<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n'],
    ['gemma3.jinja', 'gemma', '<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n'],
    ['gemma4.jinja', 'gemma4', '<|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n'],
    ['phi3.jinja', 'phi3', '<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n'],
    // llama.cpp takes Phi-4-mini's template for Phi-3's format
    ['phi4-mini.jinja', 'phi3', '<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n'],
    [
      'smollm3.jinja',
      'chatml',
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    ],
  ];
  for (const [file, format, prompt] of want) {
    const text = readFileSync(join(DIR, file), 'utf8');
    assert.equal(detectBuiltin(text), format, file);
    assert.equal(applyBuiltin(format as Parameters<typeof applyBuiltin>[0], messages, true), prompt, file);
  }
});
