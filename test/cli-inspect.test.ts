import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { sampleWriter } from './helpers/gguf-samples.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;

function run(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const stories = sharedPath('models/stories260K.gguf');

test('inspect stories260K: llama, n_embd 64, 5 layers, 8 heads, 4 KV heads, vocab 512', {
  skip: stories ? false : missingShared('models/stories260K.gguf'),
}, () => {
  const text = run('inspect', stories!);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^architecture: {2}llama$/m);
  assert.match(text.stdout, /^ {2}embedding_length +64$/m);
  assert.match(text.stdout, /^ {2}block_count +5$/m);
  assert.match(text.stdout, /^ {2}attention\.head_count +8$/m);
  assert.match(text.stdout, /^ {2}attention\.head_count_kv +4$/m);
  assert.match(text.stdout, /^ {2}attention\.layer_norm_rms_epsilon +0\.00001$/m);
  assert.match(text.stdout, /model llama, pre \(default\), vocab 512/);
  assert.match(text.stdout, /^ {2}blk\.4\.ffn_norm\.weight +F32 +64 +256 +\d+$/m);
  assert.match(text.stdout, /^totals: 48 tensors, 292\.\d+K parameters/m);

  const json = run('inspect', stories!, '--json');
  assert.equal(json.code, 0, json.stderr);
  const r = JSON.parse(json.stdout);
  assert.equal(r.architecture, 'llama');
  assert.equal(r.hparams.embedding_length, 64);
  assert.equal(r.hparams.block_count, 5);
  assert.equal(r.hparams['attention.head_count'], 8);
  assert.equal(r.hparams['attention.head_count_kv'], 4);
  assert.equal(r.tokenizer.vocabSize, 512);
  assert.equal(r.tensors.length, 48);
  assert.deepEqual(r.tensors[0], {
    name: 'token_embd.weight',
    type: 'F32',
    shape: [64, 512],
    bytes: 131072,
    offset: 0,
  });
  assert.equal(
    r.totals.bytes,
    r.tensors.reduce((a: number, t: { bytes: number }) => a + t.bytes, 0),
  );
});

test('inspect: our own file, errors and usage', (t) => {
  const dir = mkdtempSync(`${tmpdir()}/llama-ts-inspect-`);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  sampleWriter().write(`${dir}/s.gguf`);
  const ok = run('inspect', `${dir}/s.gguf`, '--json', '--all-metadata');
  assert.equal(ok.code, 0, ok.stderr);
  const r = JSON.parse(ok.stdout);
  assert.equal(r.metadata['test.u64'], '18446744073709551615');
  assert.equal(r.metadata['test.f32'], 0.1);
  assert.deepEqual(r.totals.byType, { F32: 1, Q8_0: 1, F16: 1 });

  writeFileSync(`${dir}/bad.gguf`, 'GGML not really');
  const bad = run('inspect', `${dir}/bad.gguf`);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /bad\.gguf: at byte 0: not a GGUF file: magic is 'GGML', expected 'GGUF'/);
  assert.equal(run('inspect', `${dir}/missing.gguf`).code, 1);
  assert.equal(run('inspect').code, 2);
  assert.equal(run('inspect', '--bogus', 'x').code, 2);
  assert.equal(run('nope').code, 2);
  assert.equal(run('inspect', '--help').code, 0);
});
