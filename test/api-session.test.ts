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
import { missingShared, sharedPath } from './helpers/shared.js';

const STORIES = sharedPath('models/stories260K.gguf');
const OTHER = sharedPath('fixtures/rand-llama-F32.gguf');
const skip = !STORIES
  ? missingShared('models/stories260K.gguf')
  : !OTHER
    ? missingShared('fixtures/rand-llama-F32.gguf')
    : false;
const PROMPT = 'Once upon a time';

function sessionError(re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof LlamaError, String(e));
    assert.equal(e.code, 'ERR_SESSION', e.message);
    if (re) assert.match(e.message, re);
    return true;
  };
}

describe('sessions', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-session-'));
  const file = join(dir, 'a.sess');
  let a: LlamaContext;
  let b: LlamaContext;
  before(async () => {
    a = await loadModel({ model: STORIES!, n_threads: 1, n_ctx: 128 });
    b = await loadModel({ model: STORIES!, n_threads: 1, n_ctx: 128 });
  });
  after(async () => {
    await a?.release();
    await b?.release();
    rmSync(dir, { recursive: true, force: true });
  });

  test('save, load into another context, continue: same text as an uninterrupted run, prompt not re-evaluated', async () => {
    const first = await a.completion({ prompt: PROMPT, n_predict: 16, temperature: 0 });
    await a.saveSession(file);
    const head = readFileSync(file);
    assert.equal(head.subarray(0, 8).toString('latin1'), 'LLTSSESS');
    assert.equal(head.readUInt32LE(8), SESSION_VERSION);

    const loaded = await b.loadSession(file);
    // the prompt (BOS + 4) and the generated tokens but the last (sampled, not yet evaluated)
    assert.equal(loaded.tokens_loaded, 5 + 15);
    assert.equal(loaded.prompt, `<s> ${PROMPT}${first.text}`.slice(0, loaded.prompt.length));

    const cont = await b.completion({ prompt: PROMPT + first.text, n_predict: 16, temperature: 0 });
    assert.ok(cont.tokens_cached >= loaded.tokens_loaded - 1, `tokens_cached ${cont.tokens_cached}`);
    assert.ok(cont.timings.prompt_n <= cont.tokens_evaluated - cont.tokens_cached);

    // an uninterrupted run of 32 tokens
    const whole = await a.completion({ prompt: PROMPT, n_predict: 32, temperature: 0 });
    assert.equal(first.text + cont.text, whole.text);
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
    const other = await loadModel({ model: OTHER!, n_threads: 1, n_ctx: 64 });
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
    const q8 = await loadModel({ model: STORIES!, n_threads: 1, n_ctx: 64, cache_type_k: 'f32', cache_type_v: 'f32' });
    const small = await loadModel({ model: STORIES!, n_threads: 1, n_ctx: 16 });
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
