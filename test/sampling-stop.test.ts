// StopStringMatcher: text fed in every possible split never shows any part of a stop
// string, shows everything before the earliest one, and everything when none occurs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Mt19937, SamplingError, StopStringMatcher } from '../src/sampling/index.js';

/** Expected result: the text before the earliest stop (first listed wins at a tie), and that stop. */
function expected(text: string, stops: string[]): { text: string; stop?: string } {
  let at = -1;
  let stop: string | undefined;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) {
      at = i;
      stop = s;
    }
  }
  return stop === undefined ? { text } : { text: text.slice(0, at), stop };
}

/** Feed pieces; check the streaming invariants; return what was emitted and the stop. */
function feed(pieces: string[], stops: string[]): { text: string; stop?: string } {
  const m = new StopStringMatcher(stops);
  let out = '';
  let seen = '';
  for (const piece of pieces) {
    seen += piece;
    const r = m.push(piece);
    out += r.text;
    if (r.stop !== undefined) return { text: out, stop: r.stop };
    // nothing lost, no stop string emitted (the final comparison shows no part of one was)
    assert.equal(out + m.pending, seen);
    for (const s of stops) assert.ok(!out.includes(s), `emitted ${JSON.stringify(out)} contains ${JSON.stringify(s)}`);
  }
  return { text: out + m.flush() };
}

const CASES: [string, string[]][] = [
  ['Hello </s> world', ['</s>']],
  ['a<</s>b', ['</s>']],
  ['<<//s></s', ['</s>']],
  ['UseUser:x', ['User:', '</s>']],
  ['no stop here <', ['</s>']],
  ['xab', ['b', 'ab']],
  ['abcd', ['bcd', 'abc']],
  ['aaab', ['aab']],
  ['hi 😀😀! ok', ['😀!']],
  ['line\n\nnext', ['\n\n', '\nn']],
  ['<|im_end|> trailing', ['<|im_end|>', '<|endoftext|>']],
  ['<|im_en', ['<|im_end|>']],
  ['', ['x']],
];

describe('StopStringMatcher', () => {
  test('every split into two pieces, and one character at a time', () => {
    for (const [text, stops] of CASES) {
      const want = expected(text, stops);
      for (let cut = 0; cut <= text.length; cut++) {
        assert.deepEqual(feed([text.slice(0, cut), text.slice(cut)], stops), want, `${text} @${cut}`);
      }
      assert.deepEqual(feed(Array.from(text), stops), want, text);
      assert.deepEqual(feed(text.split(''), stops), want, text);
      assert.deepEqual(feed([text], stops), want, text);
    }
  });

  test('random splits of random text', () => {
    const rng = new Mt19937(11);
    const alphabet = 'ab<>/s \n';
    const stops = ['</s>', 'ab\n', 'bb', '\n\n<'];
    for (let round = 0; round < 2000; round++) {
      let text = '';
      const len = rng.nextU32() % 30;
      for (let i = 0; i < len; i++) text += alphabet[rng.nextU32() % alphabet.length];
      const pieces: string[] = [];
      for (let i = 0; i < text.length; ) {
        const n = 1 + (rng.nextU32() % 5);
        pieces.push(text.slice(i, i + n));
        i += n;
      }
      assert.deepEqual(feed(pieces, stops), expected(text, stops), JSON.stringify(pieces));
    }
  });

  test('holds back a possible start, releases it when it cannot continue', () => {
    const m = new StopStringMatcher(['</s>']);
    assert.deepEqual(m.push('Hi <'), { text: 'Hi ' });
    assert.equal(m.pending, '<');
    assert.deepEqual(m.push('/'), { text: '' });
    assert.deepEqual(m.push('x'), { text: '</x' });
    assert.deepEqual(m.push(' </s'), { text: ' ' });
    assert.deepEqual(m.push('> more'), { text: '', stop: '</s>' });
    assert.equal(m.matched, '</s>');
    assert.deepEqual(m.push('ignored'), { text: '', stop: '</s>' });
    assert.equal(m.flush(), '');
    m.reset();
    assert.deepEqual(m.push('abc'), { text: 'abc' });
  });

  test('bad stop lists are SamplingErrors', () => {
    assert.throws(() => new StopStringMatcher(['']), SamplingError);
    assert.throws(() => new StopStringMatcher(['a', 5 as unknown as string]), /stop = /);
  });
});
