// The pushdown matcher at the character level: exact acceptance for repetition bounds,
// classes, negation, `.`, escapes and multibyte text; prefixes versus complete matches;
// bytes cut inside a character; and a randomized comparison with JavaScript regular
// expressions for grammars that are regular.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GrammarMatcher, parseGrammar } from '../src/sampling/grammar/index.js';
import { seededRandom } from './helpers/random.js';

function matcher(gbnf: string): GrammarMatcher {
  return new GrammarMatcher(parseGrammar(gbnf));
}

function full(gbnf: string, text: string): boolean {
  const m = matcher(gbnf);
  return m.acceptString(text) && m.isComplete();
}

function prefix(gbnf: string, text: string): boolean {
  return matcher(gbnf).acceptString(text);
}

describe('acceptance', () => {
  test('{m,n}, {m}, {m,}, ?, *, + bounds', () => {
    const counts = (g: string) => [0, 1, 2, 3, 4, 5, 6].filter((k) => full(g, 'a'.repeat(k)));
    assert.deepEqual(counts('root ::= "a"{2,4}'), [2, 3, 4]);
    assert.deepEqual(counts('root ::= "a"{3}'), [3]);
    assert.deepEqual(counts('root ::= "a"{2,}'), [2, 3, 4, 5, 6]);
    assert.deepEqual(counts('root ::= "a"{0,2}'), [0, 1, 2]);
    assert.deepEqual(counts('root ::= "a"?'), [0, 1]);
    assert.deepEqual(counts('root ::= "a"*'), [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(counts('root ::= "a"+'), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(counts('root ::= ("a" "a"){1,2}'), [2, 4]);
    assert.deepEqual(counts('root ::= "aa"{0,2}'), [0, 2, 4]);
  });

  test('classes, ranges, negation, any char', () => {
    assert.ok(full('root ::= [a-cx-z0]+', 'abcxyz0'));
    assert.ok(!full('root ::= [a-cx-z0]+', 'abd'));
    assert.ok(full('root ::= [^abc]+', 'xyz\n😀é'));
    assert.ok(!full('root ::= [^abc]+', 'xa'));
    assert.ok(full('root ::= .+', 'any\nthing 😀'));
    assert.ok(!full('root ::= .', ''));
    assert.ok(full('root ::= [^\\x00-\\x7f]', 'é'));
    assert.ok(!full('root ::= [^\\x00-\\x7f]', 'e'));
  });

  test('multibyte characters and escapes', () => {
    const g = 'root ::= "é" [α-ω]+ "😀" [\\U0001F600-\\U0001F64F]';
    assert.ok(full(g, 'éαβγ😀🙏'));
    assert.ok(!full(g, 'éαβγ😀🙐'));
    assert.ok(!full(g, 'eαβγ😀🙏'));
  });

  test('prefixes are accepted, completion is separate', () => {
    const g = 'root ::= "{" [0-9]+ "}"';
    assert.ok(prefix(g, '{12'));
    assert.ok(!full(g, '{12'));
    assert.ok(full(g, '{12}'));
    assert.ok(!prefix(g, '{x'));
    const m = matcher(g);
    assert.ok(m.acceptString('{1}'));
    assert.ok(m.isFinished());
    assert.ok(!m.acceptCodepoint(0x7d));
  });

  test('a rejected input leaves the state unchanged', () => {
    const m = matcher('root ::= "abc" | "abd"');
    assert.ok(m.acceptString('ab'));
    assert.ok(!m.acceptString('cx'));
    assert.ok(m.acceptCodepoint(0x64));
    assert.ok(m.isComplete());
  });

  test('ambiguous and nullable structure', () => {
    const g = 'root ::= a b\na ::= "x"*\nb ::= "x" "y"? | ""';
    for (const s of ['', 'x', 'xx', 'xy', 'xxxy']) assert.ok(full(g, s), s);
    assert.ok(!full(g, 'y'));
    assert.ok(!full(g, 'xyx'));
  });

  test('deep nesting (recursive rule, 200 levels)', () => {
    const g = 'root ::= "[" (root ("," root)*)? "]"';
    const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
    assert.ok(full(g, deep));
    assert.ok(!full(g, `${deep}]`));
    assert.ok(full(g, '[[],[[]],[]]'));
  });

  test('clone and reset', () => {
    const m = matcher('root ::= "ab" "c"?');
    m.acceptString('a');
    const c = m.clone();
    assert.ok(c.acceptString('b') && c.isComplete());
    assert.ok(!m.isComplete());
    assert.ok(m.acceptString('bc') && m.isComplete());
    m.reset();
    assert.ok(m.acceptString('abc'));
  });
});

describe('bytes cut inside a character', () => {
  test('a character split across byte chunks', () => {
    const m = matcher('root ::= "a" [à-ÿ] "😀"');
    const bytes = Buffer.from('aé😀', 'utf8');
    assert.ok(m.acceptBytes(bytes.subarray(0, 2))); // "a" + first byte of é
    assert.ok(!m.isComplete());
    assert.ok(m.acceptBytes(bytes.subarray(2, 5))); // rest of é + two bytes of 😀
    assert.ok(m.acceptBytes(bytes.subarray(5)));
    assert.ok(m.isComplete());
  });

  test('a partial character that cannot become an allowed one is rejected', () => {
    const m = matcher('root ::= [a-z]+ | "é"');
    assert.ok(!m.acceptBytes(Buffer.from([0xe2]))); // a 3-byte character: none allowed
    assert.ok(m.acceptBytes(Buffer.from([0xc3]))); // é's first byte
    assert.ok(!m.acceptBytes(Buffer.from([0xa8]))); // è, not é
    assert.ok(m.acceptBytes(Buffer.from([0xa9])));
    assert.ok(m.isComplete());
  });

  test('invalid UTF-8 is never accepted', () => {
    for (const bad of [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xff], [0xe0, 0x80]]) {
      assert.ok(!matcher('root ::= .*').acceptBytes(Buffer.from(bad)), bad.join(','));
    }
  });
});

describe('against regular expressions', () => {
  const cases: [string, RegExp][] = [
    ['root ::= ([a-c] | "ab"){1,3} [^a]? "c"*', /^(?:[a-c]|ab){1,3}[^a]?c*$/su],
    ['root ::= ("a" | "b" "c"?)+ "d"{0,2}', /^(?:a|bc?)+d{0,2}$/su],
    ['root ::= [ab]* "c" [^c]{2}', /^[ab]*c[^c]{2}$/su],
    ['root ::= (("ab")? "c" | .){2,3}', /^(?:(?:ab)?c|.){2,3}$/su],
  ];
  for (const [gbnf, re] of cases) {
    test(gbnf, () => {
      const g = parseGrammar(gbnf);
      const random = seededRandom(7);
      const alphabet = 'abcdé';
      let agreeTrue = 0;
      for (let k = 0; k < 3000; k++) {
        let s = '';
        const len = Math.floor(random() * 8);
        for (let i = 0; i < len; i++) s += alphabet[Math.floor(random() * alphabet.length)];
        const m = new GrammarMatcher(g);
        const got = m.acceptString(s) && m.isComplete();
        assert.equal(got, re.test(s), JSON.stringify(s));
        if (got) agreeTrue++;
      }
      assert.ok(agreeTrue > 20, `only ${agreeTrue} matching strings drawn`);
    });
  }
});
