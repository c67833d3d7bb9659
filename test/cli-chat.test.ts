import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const stories = sharedPath('models/stories260K.gguf');

function chat(input: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'chat', ...args], { input, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('chat: streamed replies, history, /reset, /exit', {
  skip: stories ? false : missingShared('models/stories260K.gguf'),
}, () => {
  // Greedy: the same message after /reset gets the same reply as the first time; the
  // third reply comes after that history, and nothing after /exit is read.
  const r = chat('Hi\n/reset\nHi\nAnd then?\n/exit\nnever read\n', '-m', stories!, '-n', '12', '--temp', '0');
  assert.equal(r.code, 0, r.stderr);
  const [first, again, rest] = splitRepeated(r.stdout);
  assert.ok(first && first.length > 1, JSON.stringify(r.stdout));
  assert.equal(again, first);
  assert.ok(rest && rest.length > 1 && rest.endsWith('\n'), JSON.stringify(r.stdout));
});

/** Split `out` as A + A + rest, where A is a reply ending in a newline (replies may hold newlines). */
function splitRepeated(out: string): string[] {
  for (let len = 1; 2 * len < out.length; len++) {
    const a = out.slice(0, len);
    if (a.endsWith('\n') && out.slice(len, 2 * len) === a) return [a, a, out.slice(2 * len)];
  }
  return [];
}

test('chat: errors and usage', () => {
  assert.equal(chat('', '--bogus').code, 2);
  assert.equal(chat('', '-n', 'x', '-m', 'm.gguf').code, 2);
  const missing = chat('', '-m', '/nonexistent/model.gguf');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /model\.gguf/);
  assert.equal(chat('', '--help').code, 0);
});
