// saveSession / loadSession: tokens and KV cache in a versioned file naming the model.
// Save → load into another context → continue gives what an uninterrupted context gives,
// without evaluating the saved prompt again; another model, another cache type, a
// truncated or foreign file are clear ERR_SESSION errors.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, LlamaError, loadModel, SESSION_VERSION } from '../src/index.js';
import { tinyLlama, tinyQwen2 } from './helpers/models.js';

const MODEL = tinyLlama();
const OTHER = tinyQwen2();
const PROMPT = 'Once upon a time';

/** A session file's parts: header length, header, where the token/position/shift arrays start. */
function layout(buf: Buffer) {
  const jsonLen = buf.readUInt32LE(12);
  const header = JSON.parse(buf.subarray(16, 16 + jsonLen).toString('utf8'));
  let ints = 16 + jsonLen;
  ints += (4 - (ints % 4)) % 4;
  return { jsonLen, header, ints, n: header.nTokens as number };
}

/** The file with its SHA-256 trailer recomputed (a deliberate edit, not damage). */
function resealed(buf: Buffer): Buffer {
  const body = buf.subarray(0, buf.length - 32);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

/** A version-2 file with this header (JSON text) and nothing after it. */
function withHeader(json: string): Buffer {
  const j = Buffer.from(json, 'utf8');
  const head = Buffer.alloc(16);
  head.write('LLTSSESS', 0, 'latin1');
  head.writeUInt32LE(SESSION_VERSION, 8);
  head.writeUInt32LE(j.length, 12);
  return Buffer.concat([head, j, Buffer.alloc(64)]);
}

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

  test('a session as bytes (the browser has no files): equal to the file but for its time stamp, and it loads', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 6, temperature: 0 });
    await a.saveSession(file);
    const bytes = await a.saveSession();
    assert.ok(bytes instanceof Uint8Array);
    const disk = readFileSync(file);
    assert.equal(bytes.length, disk.length);
    // the header's "created" time (and the checksum after it) may differ; everything else is the same
    const { ints } = layout(disk);
    assert.deepEqual(Buffer.from(bytes.subarray(ints, -32)), disk.subarray(ints, -32));
    const loaded = await b.loadSession(bytes);
    assert.equal(loaded.tokens_loaded, layout(disk).n);
    const damaged = bytes.slice();
    damaged[ints] ^= 1;
    await assert.rejects(b.loadSession(damaged), sessionError(/bytes in memory.*checksum mismatch/));
  });

  test('a save asked for while a completion runs waits for it (operations keep their order)', async () => {
    const running = a.completion({ prompt: 'The dog', n_predict: 12, temperature: 0, return_tokens: true });
    await a.saveSession(file);
    const r = await running;
    const loaded = await b.loadSession(file);
    assert.equal(loaded.tokens_loaded, r.tokens_evaluated + 11);
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

  test('a changed bit anywhere (header, cache rows, checksum) is caught; the context stays usable', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
    await a.saveSession(file);
    const good = readFileSync(file);
    const { jsonLen, ints, n } = layout(good);
    const created = good.indexOf('"created":"', 16) + '"created":"'.length;
    assert.ok(created > 16 && created < 16 + jsonLen);
    const offsets = {
      'header (a digit of the date)': created + 3,
      'a position': ints + 4 * n + 8,
      'a K row': ints + 12 * n + 5,
      'the last V row': good.length - 33,
      'the checksum': good.length - 1,
    };
    for (const [where, at] of Object.entries(offsets)) {
      const bad = Buffer.from(good);
      bad[at]! ^= where.startsWith('header') ? 0x01 : 0x10;
      const f = join(dir, 'flipped.sess');
      writeFileSync(f, bad);
      await assert.rejects(b.loadSession(f), sessionError(/checksum mismatch|position/), where);
    }
    const r = await b.completion({ prompt: PROMPT, n_predict: 2, temperature: 0 });
    assert.equal(r.tokens_cached, 0);
    // an older (version 1) file: named, not loaded
    const v1 = Buffer.from(good);
    v1.writeUInt32LE(1, 8);
    writeFileSync(join(dir, 'v1.sess'), v1);
    await assert.rejects(
      b.loadSession(join(dir, 'v1.sess')),
      sessionError(/format version 1; .* reads version 2 .*older/),
    );
  });

  test('headers and token arrays that do not hold up are ERR_SESSION, never a TypeError', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 6, temperature: 0 });
    await a.saveSession(file);
    const good = readFileSync(file);
    const { header, ints, n } = layout(good);
    const f = join(dir, 'bad.sess');
    const headers: [string, RegExp][] = [
      ['null', /bad header: not an object \(null\)/],
      ['[]', /bad header: not an object/],
      ['{}', /bad header: no 'model'/],
      [JSON.stringify({ ...header, model: { ...header.model, name: undefined } }), /model\.name is undefined/],
      [JSON.stringify({ ...header, nTokens: -1 }), /nTokens is -1, expected a count/],
      [JSON.stringify({ ...header, nTokens: 1e300 }), /nTokens is 1e\+300/],
      [JSON.stringify({ ...header, typeK: null }), /typeK is null/],
    ];
    for (const [json, re] of headers) {
      writeFileSync(f, withHeader(json));
      await assert.rejects(b.loadSession(f), sessionError(re), json.slice(0, 40));
    }
    // well sealed but wrong inside: a position out of order, a token outside the
    // vocabulary, a shift forward
    const edits: [string, (buf: Buffer) => void, RegExp][] = [
      ['position', (buf) => buf.writeInt32LE(7, ints + 4 * n + 4 * 3), /token 3 is at position 7/],
      ['token', (buf) => buf.writeInt32LE(100_000, ints + 4 * 2), /token 2 is 100000, outside the vocabulary/],
      ['shift', (buf) => buf.writeInt32LE(5, ints + 8 * n + 4), /token 1 has a pending shift of 5/],
    ];
    for (const [what, edit, re] of edits) {
      const buf = Buffer.from(good);
      edit(buf);
      writeFileSync(f, resealed(buf));
      await assert.rejects(b.loadSession(f), sessionError(re), what);
    }
    // and the untouched file, resealed, still loads
    writeFileSync(f, resealed(Buffer.from(good)));
    assert.equal((await b.loadSession(f)).tokens_loaded, n);
  });

  test('saving replaces regular files only (through a link, its target); never a FIFO or a directory', async () => {
    await a.completion({ prompt: PROMPT, n_predict: 4, temperature: 0 });
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    await assert.rejects(a.saveSession(folder), sessionError(/is a directory/));
    assert.ok(statSync(folder).isDirectory());
    const fifo = join(dir, 'a-fifo');
    if (spawnSync('mkfifo', [fifo]).status === 0) {
      await assert.rejects(a.saveSession(fifo), sessionError(/is a FIFO; a session replaces regular files only/));
      assert.ok(lstatSync(fifo).isFIFO(), 'the FIFO is still there');
    }
    await assert.rejects(a.saveSession(join(dir, 'no-such-dir', 'x.sess')), sessionError(/cannot write beside it/));
    // a link to a session file: the file is replaced, the link stays
    const real = join(dir, 'real.sess');
    writeFileSync(real, 'old');
    const link = join(dir, 'link.sess');
    symlinkSync(real, link);
    await a.saveSession(link);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(readlinkSync(link), real);
    assert.ok((await b.loadSession(link)).tokens_loaded > 0);
    // nothing left behind
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.endsWith('.tmp')),
      [],
    );
  });
});
