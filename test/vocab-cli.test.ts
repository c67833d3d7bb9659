// `llama-ts tokenize` as a child process: llama-tokenize's output formats, --jsonl,
// and the exit codes (2 bad usage, 1 bad file).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const SPM = 'vocab/ggml-vocab-llama-spm.gguf';
const BPE = 'vocab/ggml-vocab-llama-bpe.gguf';

function run(args: string[], input?: string | Buffer) {
  const data = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const r = spawnSync(process.execPath, [BIN, 'tokenize', ...args], { input: data });
  return { code: r.status, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8'), raw: r.stdout };
}

describe('llama-ts tokenize', () => {
  test('--ids prints one JSON-like list', { skip: sharedPath(SPM) ? false : missingShared(SPM) }, () => {
    const r = run(['-m', sharedPath(SPM)!, '-p', 'Hello world', '--ids']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '[1, 15043, 3186]\n');
    const nobos = run(['-m', sharedPath(SPM)!, '-p', 'Hello world', '--ids', '--no-bos']);
    assert.equal(nobos.stdout, '[15043, 3186]\n');
  });

  test('default output: "%6d -> \'piece\'" lines, escapes processed', {
    skip: sharedPath(SPM) ? false : missingShared(SPM),
  }, () => {
    const r = run(['-m', sharedPath(SPM)!, '-p', 'Hello\\n<s>']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "     1 -> '<s>'\n 15043 -> ' Hello'\n    13 -> '\n'\n     1 -> '<s>'\n");
    const plain = run(['-m', sharedPath(SPM)!, '-p', '<s>', '--no-parse-special', '--no-bos', '--ids']);
    assert.notEqual(plain.stdout, '[1]\n');
  });

  test('--stdin reads raw bytes', { skip: sharedPath(SPM) ? false : missingShared(SPM) }, () => {
    const r = run(['-m', sharedPath(SPM)!, '--stdin', '--ids', '--no-bos'], Buffer.from([0x61, 0xff]));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '[263, 258]\n');
  });

  test('--jsonl: one array per line, model loaded once', { skip: sharedPath(BPE) ? false : missingShared(BPE) }, () => {
    const input = `${JSON.stringify('Hello world')}\n${JSON.stringify('')}\n${JSON.stringify('a<|eot_id|>\nb')}\n`;
    const r = run(['-m', sharedPath(BPE)!, '--jsonl', '--log-disable'], input);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], [128000, 9906, 1917]);
    assert.deepEqual(lines[1], [128000]);
    assert.deepEqual(lines[2], [128000, 64, 128009, 198, 65]);
    const bad = run(['-m', sharedPath(BPE)!, '--jsonl', '--log-disable'], 'not json\n');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /line 1 is not a JSON string/);
  });

  test('bad usage exits 2, bad file exits 1', () => {
    const noModel = run(['-p', 'x']);
    assert.equal(noModel.code, 2);
    assert.match(noModel.stderr, /model is required/);
    const twoSources = run(['-m', 'x.gguf', '-p', 'x', '--stdin']);
    assert.equal(twoSources.code, 2);
    const unknown = run(['-m', 'x.gguf', '-p', 'x', '--frobnicate']);
    assert.equal(unknown.code, 2);
    const missing = run(['-m', `${REPO_ROOT}no-such-file.gguf`, '-p', 'x']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no-such-file\.gguf/);
    const help = run(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: llama-ts tokenize/);
  });
});
