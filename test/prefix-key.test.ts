// The prefix key (src/generation/prefix-key.ts): a hash of a prompt's first tokens that a
// conversation keeps across turns, and that changes when the prompt no longer begins
// with what it covers.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { isPrefixKey, PREFIX_KEY_TOKENS, prefixKey } from '../src/generation/index.js';

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

test('the key is <L>-<first 16 hex digits of SHA-256 over the first L ids as little-endian u32>', () => {
  const prompt = [1, 2, 65535, 4294967295 >>> 0, 7];
  const bytes = Buffer.alloc(20);
  for (const [i, t] of prompt.entries()) bytes.writeUInt32LE(t, i * 4);
  const h = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  assert.equal(prefixKey(prompt), `5-${h}`);
  assert.equal(prefixKey([]), '');
});

test('at most N tokens: prompts that agree on their first N tokens share a key', () => {
  assert.equal(PREFIX_KEY_TOKENS, 256);
  const a = prefixKey([...range(256), 1, 2, 3]);
  const b = prefixKey([...range(256), 9]);
  assert.equal(a, b);
  assert.match(a, /^256-[0-9a-f]{16}$/);
  assert.notEqual(prefixKey([...range(255), 0, 1]), a);
});

test("a conversation keeps its first turn's key while its prompt still begins with what the key covers", () => {
  const turn1 = range(40, 100);
  const k1 = prefixKey(turn1);
  assert.match(k1, /^40-/);
  // the next turn: the first prompt, the reply, a new message
  const turn2 = [...turn1, ...range(30, 500), ...range(12, 900)];
  assert.notEqual(prefixKey(turn2), k1, 'computed afresh it covers more tokens');
  assert.equal(prefixKey(turn2, k1), k1);
  const turn3 = [...turn2, ...range(400, 1000)];
  assert.equal(prefixKey(turn3, prefixKey(turn2, k1)), k1);
  // a rewritten history (a token inside the covered prefix changed): a new key
  const edited = [...turn2];
  edited[3] = 7;
  assert.equal(prefixKey(edited, k1), prefixKey(edited));
  // another conversation sending this key: its own key
  assert.equal(prefixKey(range(50), k1), prefixKey(range(50)));
  // a key covering more tokens than the prompt has
  assert.equal(prefixKey(turn1.slice(0, 10), k1), prefixKey(turn1.slice(0, 10)));
});

test('malformed or forged keys are not trusted: a new key is made', () => {
  const p = range(300);
  const good = prefixKey(p);
  for (const bad of [
    '',
    'x',
    '256-XYZ',
    `${good} `,
    '0-0000000000000000',
    '300-0123456789abcdef',
    `257-${good.slice(4)}`,
  ]) {
    assert.equal(prefixKey(p, bad), good, JSON.stringify(bad));
  }
  assert.equal(isPrefixKey(good), true);
  assert.equal(isPrefixKey('257-0123456789abcdef'), false, 'covers more than N tokens');
  assert.equal(isPrefixKey('12-0123456789ABCDEF'), false, 'upper case');
  assert.equal(isPrefixKey('012-0123456789abcdef'), false, 'leading zero');
});
