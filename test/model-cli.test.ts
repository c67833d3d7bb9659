// `llama-ts run`, `embed` and `bench` as child processes: output on the right stream,
// --json contents, greedy output equal to llama.cpp's on stories260K, exit codes
// (1 for a missing file, a non-GGUF file, an unsupported architecture or a prompt longer
// than the context; 2 for bad usage).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { missingShared, REPO_ROOT, SHARED_DIR, sharedPath } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const STORIES = 'models/stories260K.gguf';

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-cli-'));
const llama = join(dir, 'llama.gguf');
const bert = join(dir, 'bert.gguf');
const gpt2 = join(dir, 'gpt2.gguf');
before(() => {
  generateModel(presetSpec('tiny-llama', 'Q8_0'), llama);
  generateModel(presetSpec('tiny-bert', 'F16'), bert);
  // the same file claiming another architecture
  const f = openGGUF(llama);
  const w = new GGUFWriter();
  for (const [key, kv] of f.metadata) {
    if (key === 'general.architecture') w.set(key, GGUFValueType.STRING, 'gpt2');
    else w.set(key, kv.type, kv.value);
  }
  for (const t of f.tensors) w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t));
  f.close();
  w.write(gpt2);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('run: generated text on stdout, timings on stderr; --json holds the same text', () => {
  const text = cli(['run', '-m', llama, '-p', 'hello', '-n', '12', '--temp', '0']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stderr, /load [\d.]+ ms \| prompt \d+ tokens in [\d.]+ ms \([\d.]+ t\/s\) \| generation/);
  const json = cli(['run', '-m', llama, '-p', 'hello', '-n', '12', '--temp', '0', '--json', '--top-logits', '5']);
  assert.equal(json.code, 0, json.stderr);
  const r = JSON.parse(json.stdout);
  assert.equal(`${r.text}\n`, text.stdout);
  assert.ok(r.prompt_tokens.length > 0);
  assert.ok(r.generated_tokens.length <= 12);
  assert.equal(r.top_logits.length, 5);
  assert.ok(r.top_logits[0][1] >= r.top_logits[4][1]);
  if (r.generated_tokens.length > 0) assert.equal(r.generated_tokens[0], r.top_logits[0][0]);
  for (const k of ['load_ms', 'prompt_tokens_per_s', 'generation_tokens_per_s'])
    assert.equal(typeof r.timings[k], 'number');
});

test('run: a seed reproduces a sampled continuation', () => {
  const a = cli(['run', '-m', llama, '-p', 'hello', '-n', '8', '--temp', '1', '--seed', '7', '--json']);
  const b = cli(['run', '-m', llama, '-p', 'hello', '-n', '8', '--temp', '1', '--seed', '7', '--json']);
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(JSON.parse(a.stdout).generated_tokens, JSON.parse(b.stdout).generated_tokens);
});

test('run: greedy output equals llama.cpp on stories260K', {
  skip: sharedPath(STORIES) ? false : missingShared(STORIES),
}, () => {
  const ref = JSON.parse(readFileSync(`${SHARED_DIR}models/stories260K.ref.json`, 'utf8'));
  const c = ref.cases[0];
  const r = cli([
    'run',
    '-m',
    sharedPath(STORIES)!,
    '-p',
    c.prompt,
    '-n',
    '32',
    '--temp',
    '0',
    '--json',
    '--top-logits',
    '10',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.prompt_tokens, c.tokens);
  assert.deepEqual(out.generated_tokens, c.greedy.slice(0, 32));
  out.top_logits.forEach(([id, logit]: [number, number], i: number) => {
    assert.equal(id, c.top10[i][0]);
    assert.ok(Math.abs(logit - c.top10[i][1]) < 0.03);
  });
  assert.match(out.text, /^, there was a little girl/);
});

test('run: errors are one line on stderr with exit code 1; bad usage exits 2', () => {
  const missing = cli(['run', '-m', join(dir, 'absent.gguf'), '-p', 'x']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^llama-ts run: .*absent\.gguf.*cannot open.*\n$/);
  const notGguf = cli(['run', '-m', `${REPO_ROOT}package.json`, '-p', 'x']);
  assert.equal(notGguf.code, 1);
  assert.match(notGguf.stderr, /not a GGUF file/);
  assert.equal(notGguf.stderr.split('\n').length, 2);
  const arch = cli(['run', '-m', gpt2, '-p', 'x']);
  assert.equal(arch.code, 1);
  assert.match(
    arch.stderr,
    /architecture 'gpt2' is not supported; supported: llama, qwen2, qwen3, bert(, [a-z0-9_-]+)*\n$/,
  );
  const long = cli(['run', '-m', llama, '-p', 'one two three four five six seven eight', '-c', '4']);
  assert.equal(long.code, 1);
  assert.match(long.stderr, /the prompt is \d+ tokens; the context holds 4 \(raise n_ctx/);
  assert.equal(long.stdout, '');
  assert.equal(cli(['run', '-m', llama]).code, 2);
  assert.equal(cli(['run', '-p', 'x']).code, 2);
  assert.equal(cli(['run', '-m', llama, '-p', 'x', '-n', 'many']).code, 2);
  assert.equal(cli(['run', '-m', llama, '-p', 'x', '--nope']).code, 2);
  assert.equal(cli(['run', '-m', llama, '-p', 'x', '--device', 'nope']).code, 2);
});

test('embed: a normalised pooled embedding as JSON', () => {
  const r = cli(['embed', '-m', bert, '-p', 'hello world']);
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout) as number[];
  assert.equal(v.length, 64);
  assert.ok(Math.abs(v.reduce((s, x) => s + x * x, 0) - 1) < 1e-5);
  const perToken = JSON.parse(cli(['embed', '-m', bert, '-p', 'hello world', '--pooling', 'none']).stdout);
  assert.ok(Array.isArray(perToken[0]) && perToken[0].length === 64);
  assert.equal(cli(['embed', '-m', bert, '-p', 'x', '--pooling', 'max']).code, 2);
  assert.equal(cli(['embed', '-m', join(dir, 'absent.gguf'), '-p', 'x']).code, 1);
});

test('embed: matches llama.cpp on rand-bert-F16', {
  skip: sharedPath('fixtures/rand-bert-F16.gguf') ? false : missingShared('fixtures/rand-bert-F16.gguf'),
}, () => {
  const ref = JSON.parse(readFileSync(`${SHARED_DIR}fixtures/rand-bert-F16.ref.json`, 'utf8'));
  const r = cli(['embed', '-m', sharedPath('fixtures/rand-bert-F16.gguf')!, '-p', ref.cases[0].prompt]);
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout) as number[];
  const dot = v.reduce((s, x, i) => s + x * ref.cases[0].embedding[i], 0);
  assert.ok(dot > 0.9999);
});

test('bench: llama-bench style markdown and JSON', () => {
  const md = cli(['bench', '-m', llama, '-p', '8', '-n', '4', '-r', '1']);
  assert.equal(md.code, 0, md.stderr);
  assert.match(md.stdout, /^\| model +\| size +\| params +\| backend +\| threads +\| test +\| +t\/s \|/);
  assert.match(md.stdout, /\| +pp8 \| +[\d.]+ ± [\d.]+ \|/);
  assert.match(md.stdout, /\| +tg4 \| +[\d.]+ ± [\d.]+ \|/);
  const js = cli(['bench', '-m', llama, '-p', '0', '-n', '3', '-r', '2', '-o', 'json']);
  assert.equal(js.code, 0, js.stderr);
  const rows = JSON.parse(js.stdout);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].test, 'tg3');
  assert.equal(rows[0].samples_ts.length, 2);
  assert.ok(rows[0].avg_ts > 0);
  assert.equal(cli(['bench', '-m', llama, '-o', 'csv']).code, 2);
});
