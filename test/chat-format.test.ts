// getFormattedChat as llama.node's tests check it: on its template-less test model
// (tiny-random-llama.gguf) both calls give chatml with the caller's roles kept, type
// 'llama-chat', no media; on a model with a template, 'jinja' with tool formats; media parts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CHAT_FORMATS,
  ChatTemplate,
  getFormattedChat,
  isJinjaSupported,
  loadChatTemplates,
  MEDIA_MARKER,
  type Tool,
} from '../src/chat/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { QWEN25 } from './chat-fixtures.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const IPYTHON: Tool[] = [
  {
    type: 'function',
    function: {
      name: 'ipython',
      description: 'Runs code in an ipython interpreter and returns the result of the execution after 60 seconds.',
      parameters: {
        type: 'object',
        properties: { code: { type: 'string', description: 'The code to run in the ipython interpreter.' } },
        required: ['code'],
      },
    },
  },
];

const TINY = 'models/tiny-random-llama.gguf';

describe("llama.node's getFormattedChat test", () => {
  test('tiny-random-llama (no template): chatml, roles kept, llama-chat, with and without jinja', {
    skip: sharedPath(TINY) ? false : missingShared(TINY),
  }, () => {
    const templates = loadChatTemplates(openGGUF(sharedPath(TINY)!));
    assert.equal(isJinjaSupported(templates), false);
    const messages = [
      { role: 'user', content: 'Hello' },
      { role: 'bot', content: 'Hi' },
    ];
    const expected = {
      type: 'llama-chat',
      prompt: '<|im_start|>user\nHello<|im_end|>\n<|im_start|>bot\nHi<|im_end|>\n<|im_start|>assistant\n',
      has_media: false,
      media_paths: [],
    };
    assert.deepEqual(getFormattedChat(templates, messages), expected);
    assert.deepEqual(
      getFormattedChat(templates, messages, '', { jinja: true, tools: IPYTHON, tool_choice: 'auto' }),
      expected,
    );
    // 0.3.3 typed messages with `text`
    assert.deepEqual(
      getFormattedChat(templates, [
        { role: 'user', text: 'Hello' },
        { role: 'bot', text: 'Hi' },
      ]),
      expected,
    );
  });
});

describe('getFormattedChat with a template', () => {
  const templates = { default: new ChatTemplate(QWEN25, { eosToken: '<|im_end|>' }) };
  const messages = [{ role: 'user', content: 'What is 1+2?' }];

  test('jinja by default: the template renders; no tools is content-only', () => {
    const r = getFormattedChat(templates, messages);
    assert.equal(r.type, 'jinja');
    assert.equal(
      r.prompt,
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 1+2?<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(r.chat_format, 0);
    assert.deepEqual(r.media_paths, []);
    assert.equal(r.has_media, false);
  });

  test('with tools: the tool prompt, the Hermes format, its preserved tags', () => {
    const r = getFormattedChat(templates, messages, undefined, { tools: IPYTHON, tool_choice: 'auto' });
    assert.ok(r.prompt.includes('<tools>\n{"type": "function", "function": {"name": "ipython"'));
    assert.equal(CHAT_FORMATS[r.chat_format!], 'hermes');
    assert.deepEqual(r.preserved_tokens, ['<tool_call>', '</tool_call>']);
  });

  test('jinja: false uses the built-in format detected from the template', () => {
    const r = getFormattedChat(templates, messages, undefined, { jinja: false });
    assert.deepEqual(r, {
      type: 'llama-chat',
      prompt: '<|im_start|>user\nWhat is 1+2?<|im_end|>\n<|im_start|>assistant\n',
      has_media: false,
      media_paths: [],
    });
  });

  test('a template argument replaces the model template (a built-in name or Jinja text)', () => {
    assert.equal(
      getFormattedChat(templates, messages, 'llama3', { jinja: false }).prompt,
      '<|start_header_id|>user<|end_header_id|>\n\nWhat is 1+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    assert.equal(getFormattedChat(templates, messages, '{{ messages[0].content }}!').prompt, 'What is 1+2?!');
  });

  test('add_generation_prompt false; chat_template_kwargs reach the template', () => {
    const t = { default: new ChatTemplate('{{ flavor }}/{{ add_generation_prompt }}/{{ enable_thinking }}') };
    assert.equal(getFormattedChat(t, messages, undefined, { add_generation_prompt: false }).prompt, '/false/true');
    assert.equal(
      getFormattedChat(t, messages, undefined, { chat_template_kwargs: { flavor: 'x', enable_thinking: false } })
        .prompt,
      'x/true/false',
    );
  });

  test('media parts become markers and paths', () => {
    const r = getFormattedChat(templates, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Describe' },
          { type: 'image_url', image_url: { url: '/tmp/cat.png' } },
          { type: 'input_audio', input_audio: { format: 'wav', url: 'file:///tmp/a.wav' } },
        ],
      },
    ]);
    assert.equal(r.has_media, true);
    assert.deepEqual(r.media_paths, ['/tmp/cat.png', '/tmp/a.wav']);
    assert.ok(r.prompt.includes(`<|im_start|>user\nDescribe\n${MEDIA_MARKER}\n${MEDIA_MARKER}<|im_end|>`));
    assert.throws(
      () =>
        getFormattedChat(templates, [
          { role: 'user', content: [{ type: 'input_audio', input_audio: { format: 'ogg' } }] },
        ]),
      /unsupported audio format/,
    );
  });

  test('a broken model template still formats (built-in fallback, reported as llama-chat)', () => {
    setLogCallback(() => {});
    try {
      const broken = { default: new ChatTemplate("{% if x %}<|im_start|>{{ '") };
      const r = getFormattedChat(broken, messages);
      assert.equal(r.type, 'llama-chat');
      assert.equal(r.prompt, '<|im_start|>user\nWhat is 1+2?<|im_end|>\n<|im_start|>assistant\n');
    } finally {
      setLogCallback(null);
    }
  });
});

describe('loadChatTemplates', () => {
  const qwen = 'vocab/ggml-vocab-qwen2.gguf';
  test('a file with a template is Jinja-capable; an override replaces it', {
    skip: sharedPath(qwen) ? false : missingShared(qwen),
  }, () => {
    const file = openGGUF(sharedPath(qwen)!);
    const t = loadChatTemplates(file);
    assert.equal(isJinjaSupported(t), true);
    assert.equal(t.toolUse, undefined);
    assert.equal(t.default.eosToken, '<|im_end|>');
    const o = loadChatTemplates(file, { override: 'gemma' });
    assert.equal(isJinjaSupported(o), false);
    assert.equal(o.default.builtin, 'gemma');
  });
});
