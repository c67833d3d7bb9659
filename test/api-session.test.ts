// saveSession / loadSession: tokens and KV cache in a versioned file naming the model.
// Save → load into another context → continue gives what an uninterrupted context gives,
// without evaluating the saved prompt again; another model, another cache type, a
// truncated or foreign file are clear ERR_SESSION errors.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, LlamaError, loadModel, SESSION_VERSION } from '../src/index.js';
import { tinyLlama, tinyQwen2 } from './helpers/models.js';

const MODEL = tinyLlama();
const OTHER = tinyQwen2();
const PROMPT = 'Once upon a time';

function sessionError(re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof LlamaError, String(e));
    assert.equal(e.code, 'ERR_SESSION', e.message);
    if (re) assert.match(e.message, re);
    return true;
  };
}

describe('sessions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-session-'));
  const file = join(dir, 'a.sess');
  let a: LlamaContext;
  let b: LlamaContext;
  before(async () => {
    a = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 128 });
    b = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 128 });
  });
  after(async () => {
    await a?.release();
    await b?.release();
    rmSync(dir, { recursive: true, force: true });
  });

  test('save, load into another context, continue: same text as an uninterrupted run, prompt not re-evaluated', async () => {
    const first = await a.completion({ prompt: PROMPT, n_predict: 16, temperature: 0, return_tokens: true });
    await a.saveSession(file);
    const head = readFileSync(file);
    assert.equal(head.subarray(0, 8).toString('latin1'), 'LLTSSESS');
    assert.equal(head.readUInt32LE(8), SESSION_VERSION);

    const loaded = await b.loadSession(file);
    // the prompt (BOS + its tokens) and the generated tokens but the last (sampled, not yet evaluated)
    const n = (await a.tokenize(PROMPT)).tokens.length + 1;
    assert.equal(loaded.tokens_loaded, n + 15);
    assert.ok(loaded.prompt.startsWith(`<s> ${PROMPT}`), loaded.prompt);

    // continue from the saved tokens (as ids: a random model's text need not tokenize back to them)
    const history = [...first.prompt_tokens!, ...first.tokens!];
    const cont = await b.completion({ prompt: history, n_predict: 16, temperature: 0, return_tokens: true });
    assert.equal(cont.tokens_cached, loaded.tokens_loaded);
    assert.equal(cont.timings.prompt_n, 1);

    // an uninterrupted run of 32 tokens
    const whole = await a.completion({ prompt: PROMPT, n_predict: 32, temperature: 0, return_tokens: true });
    assert.deepEqual([...first.tokens!, ...cont.tokens!], whole.tokens);
  });

  test('a loaded session seeds a sampled continuation exactly as the saving context would', async () => {
    const s1 = await a.completion({ prompt: PROMPT, n_predict: 10, temperature: 0.9, seed: 42 });
    await a.saveSession(file);
    await b.loadSession(file);
    const next = { prompt: PROMPT + s1.text, n_predict: 12, temperature: 0.9, seed: 9 };
    const fromA = await a.completion(next);
    const fromB = await b.completion(next);
    assert.equal(fromB.text, fromA.text);
    assert.equal(fromB.tokens_cached, fromA.tokens_cached);
  });

  test('loading into another model fails clearly and leaves the context usable', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 4, temperature: 0 });
    await a.saveSession(file);
    const other = await loadModel({ model: OTHER, n_threads: 1, n_ctx: 64 });
    try {
      await assert.rejects(other.loadSession(file), sessionError(/saved with another model/));
      const r = await other.completion({ prompt: PROMPT, n_predict: 3, temperature: 0 });
      assert.equal(r.tokens_cached, 0);
      assert.equal(r.tokens_predicted, 3);
    } finally {
      await other.release();
    }
  });

  test('another cache type, a too-small context, truncated and foreign files are rejected', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 30, temperature: 0 });
    await a.saveSession(file);
    const q8 = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 64, cache_type_k: 'f32', cache_type_v: 'f32' });
    const small = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 16 });
    try {
      await assert.rejects(q8.loadSession(file), sessionError(/cache types/));
      await assert.rejects(small.loadSession(file), sessionError(/do not fit/));
    } finally {
      await q8.release();
      await small.release();
    }
    const cut = join(dir, 'cut.sess');
    writeFileSync(cut, readFileSync(file));
    truncateSync(cut, readFileSync(file).length - 100);
    await assert.rejects(b.loadSession(cut), sessionError(/truncated|size/));
    const foreign = join(dir, 'foreign.sess');
    writeFileSync(foreign, 'not a session at all, just some text');
    await assert.rejects(b.loadSession(foreign), sessionError(/bad magic/));
    await assert.rejects(b.loadSession(join(dir, 'missing.sess')), sessionError(/cannot open/));
    // b still works, from an empty cache
    const r = await b.completion({ prompt: PROMPT, n_predict: 2, temperature: 0 });
    assert.equal(r.tokens_cached, 0);
  });
});
