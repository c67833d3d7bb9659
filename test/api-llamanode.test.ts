// llama.node's flow on a generated model (its own 0.3.3 test, on its model, is in
// shared-api.test.ts): basic completion whose streamed tokens concatenate to the text,
// save and load a session, tokenize / detokenize, getFormattedChat (0.3.3 typed messages
// with `text`), release. Then what later versions added: messages with a Jinja template,
// tools and parsed tool_calls, getModelInfo's chat-template fields.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type FormattedChatResult, loadModel } from '../src/index.js';
import { QWEN25 } from './chat-fixtures.js';
import { tinyLlama } from './helpers/models.js';

const MODEL = tinyLlama();
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-llamanode-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("llama.node's basic flow", () => {
  test('completion, session save/load, tokenize, getFormattedChat, release', async () => {
    let tokens = '';
    const model = await loadModel({ model: MODEL });
    const prompt = 'My name is Merve and my favorite';
    const result = await model.completion(
      { prompt, temperature: 0, max_length: 100, n_predict: 10, seed: 0 },
      (data) => {
        assert.equal(typeof data.token, 'string');
        tokens += data.token;
      },
    );
    assert.equal(tokens, result.text);
    assert.equal(result.tokens_predicted, 10);
    const n = (await model.tokenize(prompt)).tokens.length + 1; // BOS + the prompt
    assert.equal(result.tokens_evaluated, n);
    assert.equal(result.truncated, false);
    assert.equal(Object.keys(result.timings).length, 8);
    const sess = join(dir, 'tmp.sess');
    await model.saveSession(sess);
    const loaded = await model.loadSession(sess);
    assert.equal(loaded.tokens_loaded, n + 9);
    const { tokens: ids } = await model.tokenize('Once upon a time');
    assert.ok(ids instanceof Int32Array && ids.length > 0);
    assert.equal(await model.detokenize(Array.from(ids)), 'Once upon a time');
    assert.equal(
      model.getFormattedChat([
        { role: 'user', text: 'Hello' },
        { role: 'bot', text: 'Hi' },
      ]),
      '<|im_start|>user\nHello<|im_end|>\n<|im_start|>bot\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    await model.release();
  });
});

describe('chat templates and tools', () => {
  const TOOLS = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];

  test('a Jinja template (chat_template option): tools rendered, tool calls parsed from the reply', async () => {
    const model = await loadModel({ model: MODEL, chat_template: QWEN25, n_ctx: 512, n_threads: 1 });
    try {
      const info = model.getModelInfo();
      assert.equal(info.isChatTemplateSupported, true);
      assert.equal(info.chatTemplates.minja.default, true);
      assert.equal(info.chatTemplates.minja.defaultCaps.tools, true);
      assert.equal(info.chatTemplates.minja.defaultCaps.toolCalls, true);
      assert.equal(info.chatTemplates.minja.defaultCaps.systemRole, true);
      const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const formatted = model.getFormattedChat(messages, '', { jinja: true, tools: TOOLS }) as FormattedChatResult;
      assert.equal(formatted.type, 'jinja');
      assert.match(formatted.prompt, /<tools>\n\{"type": "function", "function": \{"name": "get_weather"/);
      // a random model knows nothing of tools: a grammar makes it call one
      const grammar = String.raw`root ::= "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" [A-Z] [a-z]{2,8} "\"}}\n</tool_call>"`;
      const r = await model.completion({ messages, tools: TOOLS, grammar, n_predict: 120, temperature: 1, seed: 1 });
      assert.equal(r.stopped_eos, true, r.text);
      assert.equal(r.chat_format, formatted.chat_format);
      assert.ok(r.chat_format > 0);
      assert.equal(r.tool_calls?.length, 1, r.text);
      const call = r.tool_calls![0]!;
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.match((JSON.parse(call.function.arguments) as { city: string }).city, /^[A-Z][a-z]{2,8}$/);
      assert.equal(r.content, '');
      // without tools: plain content
      const plain = await model.completion({ messages, n_predict: 5, temperature: 0 });
      assert.equal(plain.tool_calls, undefined);
      assert.equal(plain.content, plain.text);
    } finally {
      await model.release();
    }
  });
});
