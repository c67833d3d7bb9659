// GBNF parsing: llama.cpp-style example grammars parse (and match what they should),
// syntax details (comments, newlines inside groups, CRLF, escapes, tokens), and every
// kind of error carries the right line:column and reason.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  El,
  GrammarError,
  GrammarMatcher,
  JSON_ARRAY_GBNF,
  JSON_GBNF,
  JSON_VALUE_GBNF,
  parseGrammar,
} from '../src/sampling/grammar/index.js';

function matches(gbnf: string, text: string): boolean {
  const m = new GrammarMatcher(parseGrammar(gbnf));
  return m.acceptString(text) && m.isComplete();
}

const ARITHMETIC = String.raw`
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
`;

const LIST = String.raw`
root ::= item+
# one item per line; no line separators inside an item
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
`;

const CHESS = String.raw`
# moves in algebraic notation, numbered as in PGN
root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]   # piece, disambiguation, capture, square
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?
`;

const JAPANESE = String.raw`
root     ::= (jp-char | space)+
jp-char  ::= hiragana | katakana | punct | cjk
hiragana ::= [ぁ-ゟ]
katakana ::= [ァ-ヿ]
punct    ::= [、-〾]
cjk      ::= [一-鿿]
space    ::= [ \t\n]
`;

describe('example grammars', () => {
  test('arithmetic', () => {
    assert.ok(matches(ARITHMETIC, 'a+b*(c-2 )= 7\n'));
    assert.ok(matches(ARITHMETIC, 'x=1\ny=2\n'));
    assert.ok(!matches(ARITHMETIC, 'x=1'));
    assert.ok(!matches(ARITHMETIC, '=1\n'));
  });

  test('list', () => {
    assert.ok(matches(LIST, '- eggs\n- milk\n'));
    assert.ok(!matches(LIST, '- eggs\u2028\n'));
    assert.ok(!matches(LIST, '- \n'));
  });

  test('chess', () => {
    assert.ok(matches(CHESS, '1. e4 e5\n2. Nf3 Nc6\n3. O-O-O exd8=Q+\n'));
    assert.ok(!matches(CHESS, '1. e4 e5\n'));
    assert.ok(!matches(CHESS, '1. e9 e5\n2. a1 a2\n'));
  });

  test('japanese (non-ASCII ranges)', () => {
    assert.ok(matches(JAPANESE, 'こんにちは 世界、カタカナ'));
    assert.ok(!matches(JAPANESE, 'hello'));
  });

  test('JSON built-ins', () => {
    assert.ok(matches(JSON_GBNF, '{"a": [1, -2.5e3, "x\\n\\u00e9", true, null, {}], "b":{"c" :0}}'));
    assert.ok(matches(JSON_GBNF, '{\n  "k": "v"\n}'));
    assert.ok(!matches(JSON_GBNF, '{"a": 01}'));
    assert.ok(!matches(JSON_GBNF, '[1]'));
    assert.ok(!matches(JSON_GBNF, '{"a": "\u0001"}'));
    assert.ok(matches(JSON_ARRAY_GBNF, '[\n{"a": 1},\n"x"]'));
    assert.ok(matches(JSON_VALUE_GBNF, '"just a string" '));
    assert.ok(matches(JSON_VALUE_GBNF, '12345678901234567'.slice(0, 16)));
    assert.ok(!matches(JSON_VALUE_GBNF, '12345678901234567'));
  });
});

describe('syntax', () => {
  test('rule structure: alternatives, generated rules named as llama.cpp names them', () => {
    const g = parseGrammar('root ::= "a" ("b" | "c")* d\nd ::= [x-z]');
    assert.deepEqual(g.names, ['root', 'root_1', 'root_2', 'd']);
    assert.equal(g.root, 0);
    assert.deepEqual(
      g.rules[0]!.map((e) => e.type),
      [El.CHAR, El.RULE_REF, El.RULE_REF, El.END],
    );
    // root_2 ::= root_1 root_2 |   (the star)
    assert.deepEqual(
      g.rules[2]!.map((e) => [e.type, e.value]),
      [
        [El.RULE_REF, 1],
        [El.RULE_REF, 2],
        [El.ALT, 0],
        [El.END, 0],
      ],
    );
    assert.equal(g.toString().split('\n')[0], 'root ::= [a] root_2 d');
  });

  test('comments, blank lines, newlines inside groups and after |, CRLF', () => {
    const src = '# header\r\n\r\nroot ::= (   # group\r\n  "a"\r\n  | "b" ) |\r\n  "c"  # trailing\r\n';
    assert.ok(matches(src, 'a') && matches(src, 'b') && matches(src, 'c'));
    assert.ok(!matches(src, 'ab'));
  });

  test('a newline ends a rule outside parentheses', () => {
    // "b" on its own line is not a continuation: it starts a new rule, which is an error
    assert.throws(() => parseGrammar('root ::= "a"\n "b"'), /2:2: expecting a rule name/);
  });

  test('escapes in literals and classes', () => {
    const g = String.raw`root ::= "\x41\u00e9\U0001F600\n\t\r\\\"" [\[\]\-] [\x30-\x39]`;
    assert.ok(matches(g, 'Aé😀\n\t\r\\"]7'));
    assert.ok(matches(g, 'Aé😀\n\t\r\\"-0'));
    assert.ok(!matches(g, 'Aé😀\n\t\r\\"a0'));
  });

  test('class edge cases: leading -, trailing -, ^ not first', () => {
    assert.ok(matches('root ::= [-a]', '-'));
    assert.ok(matches('root ::= [a-]', '-'));
    assert.ok(matches('root ::= [a^]', '^'));
    assert.ok(!matches('root ::= [^-]', '-'));
  });

  test('token references by id; by text only with a vocabulary', () => {
    const g = parseGrammar('root ::= <[42]> !<[7]> "x"');
    assert.deepEqual(
      g.rules[0]!.map((e) => [e.type, e.value]),
      [
        [El.TOKEN, 42],
        [El.TOKEN_NOT, 7],
        [El.CHAR, 0x78],
        [El.END, 0],
      ],
    );
    assert.throws(() => parseGrammar('root ::= <|im_end|>'), /1:10: token <\|im_end\|> needs a vocabulary/);
    const vocab = { encode: (t: string) => (t === '<|im_end|>' ? [99] : [1, 2]) };
    const g2 = parseGrammar('root ::= "a" <|im_end|>', { vocab });
    assert.deepEqual(g2.rules[0]![1], { type: El.TOKEN, value: 99 });
    assert.throws(() => parseGrammar('root ::= <ab>', { vocab }), /1:10: <ab> is not a single token/);
  });

  test('another start rule', () => {
    const g = parseGrammar('a ::= "x" b\nb ::= "y"', { root: 'a' });
    const m = new GrammarMatcher(g);
    assert.ok(m.acceptString('xy') && m.isComplete());
  });

  test('a rule defined twice: the last definition wins (as llama.cpp)', () => {
    assert.ok(matches('root ::= "a"\nroot ::= "b"', 'b'));
  });
});

describe('errors: position and reason', () => {
  const cases: [string, string, RegExp][] = [
    ['unterminated literal', 'root ::= "abc', /^1:10: unterminated literal/],
    ['unterminated class', 'root ::= [a-z', /^1:10: unterminated character class/],
    ['empty class', 'root ::= []', /^1:10: empty character class/],
    ['undefined rule', 'root ::= "a" | foo\nbar ::= "x"', /^1:16: undefined rule 'foo'/],
    ['missing root', 'a ::= "x"', /^1:1: grammar does not contain a 'root' rule/],
    ['empty grammar', '  # nothing\n', /grammar does not contain a 'root' rule/],
    ['missing ::=', 'root = "a"', /^1:6: expecting '::=' after 'root', found '='/],
    ['rule without a name', '::= "a"', /^1:1: expecting a rule name/],
    ['stray character', 'root ::= "a" ]', /^1:14: expecting end of rule \(a newline\), found '\]'/],
    ['unclosed group', 'root ::= ("a"\n  "b"\n', /^3:1: expecting '\)' to close the group, found end of input/],
    ['repetition with nothing before', 'root ::= * "a"', /^1:10: expecting an item before '\*'/],
    ['repetition min > max', 'x ::= "a"\nroot ::= x{3,1}', /^2:11: repetition minimum 3 exceeds maximum 1/],
    ['repetition without int', 'root ::= "a"{x}', /^1:14: expecting an integer after '\{'/],
    ['repetition unclosed', 'root ::= "a"{2,3', /^1:17: expecting '\}' to close the repetition/],
    ['repetition bad separator', 'root ::= "a"{2;3}', /^1:15: expecting ',' or '\}'/],
    ['repetition too large', 'root ::= "a"{2001}', /^1:13: repetition minimum 2001 exceeds the limit/],
    ['nested repetition too large', 'root ::= ("a"{0,50}){0,50}', /^1:21: repetition too large/],
    ['bad hex escape', 'root ::= "\\x4g"', /^1:11: expecting 2 hex digits in escape/],
    ['short \\u escape', 'root ::= [\\u12]', /^1:11: expecting 4 hex digits in escape/],
    ['unknown escape', 'root ::= "\\q"', /^1:11: unknown escape '\\q'/],
    [
      'left recursion',
      'root ::= expr\nexpr ::= expr "+" num | num\nnum ::= [0-9]+',
      /^2:1: left recursion: rule 'expr'/,
    ],
    [
      'left recursion through a nullable rule',
      'root ::= a\na ::= b c a "x" | "y"\nb ::= "z"?\nc ::= b b',
      /left recursion: rule 'a'/,
    ],
    ['repeating something empty', 'root ::= ("")*', /left recursion/],
    ['token id unclosed', 'root ::= <[12>', /^1:14: expecting '\]' in token id/],
    ['column counts characters, not UTF-16 units', 'root ::= "😀" ]', /^1:14: expecting end of rule/],
  ];
  for (const [what, src, re] of cases) {
    test(what, () => {
      assert.throws(
        () => parseGrammar(src),
        (e: unknown) => {
          assert.ok(e instanceof GrammarError, `not a GrammarError: ${e}`);
          assert.match(e.message, re);
          return true;
        },
      );
    });
  }

  test('GrammarError carries line, column and reason', () => {
    try {
      parseGrammar('root ::= "a"\n\nx ::= y');
      assert.fail('no error');
    } catch (e) {
      assert.ok(e instanceof GrammarError);
      assert.deepEqual([e.line, e.column, e.reason], [3, 7, "undefined rule 'y'"]);
    }
  });
});
