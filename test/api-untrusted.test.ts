// The library against hostile chat templates and grammars: completion() with messages
// used to abort the calling process on `range(1000000000)` (V8 "invalid size", from the
// engine worker) and to never settle on two nested range(100000) loops, its AbortSignal
// and release() doing nothing. Now the template renders on the untrusted-work worker:
// limits are LlamaErrors naming them, and a stop request ends the completion.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { type LlamaContext, LlamaError, loadModel } from '../src/index.js';
import { setLogCallback } from '../src/log.js';
import { chatModel } from './server-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-api-untrusted-'));
const MSGS = [{ role: 'user', content: 'Hi' }];
const NESTED = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}';

function withTemplate(name: string, template: string): string {
  const src = openGGUF(chatModel());
  try {
    const path = join(dir, `${name}.gguf`);
    GGUFWriter.fromFile(src, { withData: true }).setString('tokenizer.chat_template', template).write(path);
    return path;
  } finally {
    src.close();
  }
}

describe('completion() with hostile chat templates', () => {
  before(() => setLogCallback(() => {}));
  after(() => {
    setLogCallback(null);
    rmSync(dir, { recursive: true, force: true });
  });

  test('range(1000000000) in the GGUF: a LlamaError naming the limit; getFormattedChat too', async () => {
    const ctx = await loadModel({
      model: withTemplate('range', '{% for i in range(1000000000) %}x{% endfor %}'),
      n_ctx: 128,
    });
    try {
      await assert.rejects(
        ctx.completion({ messages: MSGS, n_predict: 2 }),
        (e: unknown) =>
          e instanceof LlamaError && e.code === 'ERR_OPTION' && /more than 100000 items \(maxItems\)/.test(e.message),
      );
      // the synchronous API renders on the caller's thread, within the same limits
      assert.throws(() => ctx.getFormattedChat(MSGS), /maxItems/);
      // the context still works
      const r = await ctx.completion({ prompt: 'Once', n_predict: 2, temperature: 0 });
      assert.equal(r.tokens_predicted, 2);
    } finally {
      await ctx.release();
    }
  });

  let ctx: LlamaContext;
  test('nested loops: the AbortSignal ends the completion (interrupted, nothing generated)', async () => {
    ctx = await loadModel({ model: withTemplate('nested', NESTED), n_ctx: 128 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const t0 = performance.now();
    const r = await ctx.completion({ messages: MSGS, n_predict: 2, signal: ac.signal });
    assert.equal(r.interrupted, true);
    assert.equal(r.text, '');
    assert.equal(r.tokens_evaluated, 0);
    assert.ok(performance.now() - t0 < 4000, 'settled soon after the abort');
    // getModelInfo probes the template on this thread: within a short budget, and no throw
    const t1 = performance.now();
    assert.equal(ctx.getModelInfo().chatTemplates.minja.default, true);
    assert.ok(performance.now() - t1 < 4000, 'the probes stopped at their budget');
  });

  test('nested loops: release() during the render ends it and frees the context', async () => {
    const p = ctx.completion({ messages: MSGS, n_predict: 2 });
    await new Promise((res) => setTimeout(res, 200));
    await ctx.release();
    const r = await p;
    assert.equal(r.interrupted, true);
  });

  test('a grammar no token can satisfy: ERR_OPTION before any token', async () => {
    const c = await loadModel({ model: chatModel(), n_ctx: 128 });
    try {
      await assert.rejects(
        c.completion({ prompt: 'Once', n_predict: 2, grammar: 'root ::= "\\x00"' }),
        (e: unknown) => e instanceof LlamaError && e.code === 'ERR_OPTION' && /no token contains/.test(e.message),
      );
      await assert.rejects(
        c.completion({
          prompt: 'Once',
          n_predict: 2,
          json_schema: { allOf: [{ type: 'string' }, { type: 'integer' }] },
        }),
        (e: unknown) => e instanceof LlamaError && e.code === 'ERR_OPTION' && /#\/allOf/.test(e.message),
      );
    } finally {
      await c.release();
    }
  });
});
