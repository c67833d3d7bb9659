// loadModel({ vocab_only: true }) (llama.node's option): the vocabulary, metadata and chat
// templates without the weights. On the generated tiny llama it tokenizes, detokenizes and
// formats chats exactly as a full load does; whatever evaluates the model is a clear
// ERR_CONTEXT error. (On llama.cpp's vocabulary-only files in ../shared:
// shared-vocab-only.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, LlamaError, loadModel } from '../src/api/index.js';
import { QWEN25 } from './chat-fixtures.js';
import { tinyLlama } from './helpers/models.js';

describe('vocab_only on a model', () => {
  let full: LlamaContext;
  let vocab: LlamaContext;
  before(async () => {
    const model = tinyLlama();
    full = await loadModel({ model, chat_template: QWEN25 });
    let progress = 0;
    vocab = await loadModel({ model, chat_template: QWEN25, vocab_only: true }, (p) => {
      progress = p;
    });
    assert.equal(progress, 1);
  });
  after(async () => {
    await full?.release();
    await vocab?.release();
  });

  test('tokenize and detokenize as a full load', async () => {
    for (const text of ['Once upon a time', ' a <s> b</s>', 'é 🦙 \n\t x']) {
      for (const o of [{}, { add_special: true, parse_special: true }, { with_pieces: true }]) {
        assert.deepEqual(await vocab.tokenize(text, o), await full.tokenize(text, o));
      }
      const { tokens } = await full.tokenize(text);
      assert.equal(await vocab.detokenize(Array.from(tokens)), await full.detokenize(Array.from(tokens)));
    }
  });

  test('getFormattedChat (templates and tools) as a full load', () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Oslo?' },
    ];
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object' } } }];
    assert.deepEqual(vocab.getFormattedChat(messages), full.getFormattedChat(messages));
    assert.deepEqual(
      vocab.getFormattedChat(messages, undefined, { jinja: true, tools, tool_choice: 'required' }),
      full.getFormattedChat(messages, undefined, { jinja: true, tools, tool_choice: 'required' }),
    );
  });

  test('getModelInfo: the vocabulary and metadata; no weights', () => {
    const v = vocab.getModelInfo();
    const f = full.getModelInfo();
    assert.equal(v.nVocab, f.nVocab);
    assert.equal(v.vocabType, f.vocabType);
    assert.equal(v.nCtxTrain, f.nCtxTrain);
    assert.equal(v.nEmbd, f.nEmbd);
    assert.deepEqual(v.metadata, f.metadata);
    assert.equal(v.nParams, 0);
    assert.equal(v.size, 0);
    assert.ok(f.nParams > 0);
    assert.equal(vocab.nCtx, full.nCtx);
  });

  test('completion, embedding, sessions and parallel mode: ERR_CONTEXT naming vocab_only', async () => {
    const named = (e: unknown) => e instanceof LlamaError && e.code === 'ERR_CONTEXT' && /vocab_only/.test(e.message);
    await assert.rejects(vocab.completion({ prompt: 'x', n_predict: 1 }), named);
    await assert.rejects(vocab.embedding('x'), named);
    await assert.rejects(vocab.saveSession('/nonexistent/x.session'), named);
    await assert.rejects(vocab.loadSession('/nonexistent/x.session'), named);
    await assert.rejects(vocab.parallel.enable({ n_parallel: 2 }), named);
    // the full context is untouched by all that
    const r = await full.completion({ prompt: 'Once upon a time', n_predict: 2, temperature: 0 });
    assert.equal(r.tokens_predicted, 2);
  });

  test('a bad value is named', async () => {
    await assert.rejects(
      loadModel({ model: tinyLlama(), vocab_only: 'yes' as unknown as boolean }),
      (e: unknown) => e instanceof LlamaError && e.code === 'ERR_OPTION' && /^vocab_only = "yes"/.test(e.message),
    );
  });
});
