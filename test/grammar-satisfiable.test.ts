// Grammars and schemas that nothing can satisfy are errors when the sampler is made (a
// 400 for the server), not a 500 "no token is left to sample" later: checked against the
// vocabulary's tokens (characters no token spells, no token able to come first) and, for
// JSON schemas, allOf parts that cannot all hold.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSamplingChain } from '../src/generation/index.js';
import { GrammarMatcher, jsonSchemaToGrammar, parseGrammar, SchemaError } from '../src/sampling/grammar/index.js';
import { SamplingError, type SamplingVocab } from '../src/sampling/index.js';
import { loadVocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

/** Pieces: single ASCII letters, 'ab' (the only token holding 'z' is 'az'), an end token. */
function vocab(): SamplingVocab {
  const pieces = ['</s>', 'a', 'b', 'c', 'ab', 'az', '"', '1', '{', '}', ' '];
  return {
    nTokens: pieces.length,
    pieceBytes: (id) => pieces[id]!,
    isEog: (id) => id === 0,
    encode: (t) => (pieces.includes(String(t)) ? [pieces.indexOf(String(t))] : []),
  };
}

function fails(grammar: string, v: SamplingVocab, why: RegExp): void {
  assert.throws(
    () => createSamplingChain({ grammar }, v),
    (e: unknown) => e instanceof SamplingError && e.option === 'grammar' && why.test(e.message),
    grammar,
  );
}

describe('grammars against the vocabulary', () => {
  test('a character no token spells: refused, naming it', () => {
    const v = vocab();
    fails('root ::= "\\x00"', v, /no token contains \[\\x00\]/);
    fails('root ::= "a" "\\x00"', v, /rule 'root' cannot be completed: no token contains \[\\x00\]/);
    fails('root ::= x\nx ::= "q" | "r" x', v, /no token contains \[q\], \[r\]/);
    fails('root ::= [^\\x00-\\U0010FFFF]', v, /an empty character class/);
  });

  test('no token can come first: refused', () => {
    fails('root ::= "z"', vocab(), /no token of this model's vocabulary can begin/);
  });

  test('grammars some token sequence satisfies are accepted', () => {
    const v = vocab();
    for (const g of ['root ::= "a" | "\\x00"', 'root ::= ""', 'root ::= "az"', 'root ::= "a" "z"', 'root ::= [a-c]+']) {
      assert.ok(createSamplingChain({ grammar: g }, v).grammar, g);
    }
  });

  const qwen = 'vocab/ggml-vocab-qwen2.gguf';
  test('on a real vocabulary: root ::= "\\x00" is refused (llama.cpp never lets a piece with NUL match)', {
    skip: sharedPath(qwen) ? false : missingShared(qwen),
  }, () => {
    const v = loadVocab(sharedPath(qwen)!);
    fails('root ::= "\\x00"', v, /no token contains \[\\x00\]/);
    assert.ok(createSamplingChain({ grammar: 'root ::= "é" | "\\u4e2d"' }, v).grammar);
  });
});

describe('JSON schemas that match nothing', () => {
  const accepts = (schema: unknown, text: string) => {
    const m = new GrammarMatcher(parseGrammar(jsonSchemaToGrammar(schema)));
    return m.acceptString(text) && m.isComplete();
  };

  test('allOf of a string and an integer is a SchemaError (it compiled to `{}`)', () => {
    assert.throws(
      () => jsonSchemaToGrammar({ allOf: [{ type: 'string' }, { type: 'integer' }] }),
      (e: unknown) => e instanceof SchemaError && e.pointer === '#/allOf' && /matches nothing/.test(e.message),
    );
    assert.throws(
      () =>
        createSamplingChain({ json_schema: { allOf: [{ type: 'string' }, { type: ['integer', 'null'] }] } }, vocab()),
      (e: unknown) => e instanceof SamplingError && e.option === 'json_schema' && /every type/.test(e.message),
    );
  });

  test('allOf of enums with no value in common is a SchemaError', () => {
    assert.throws(() => jsonSchemaToGrammar({ allOf: [{ enum: [1, 2] }, { enum: [3] }] }), /no value in common/);
    assert.ok(accepts({ allOf: [{ enum: [1, 2] }, { enum: [2, 3] }] }, '2'));
  });

  test('allOf of plain keywords is merged; an integer is a number', () => {
    const s = { allOf: [{ type: 'string' }, { maxLength: 3 }] };
    assert.ok(accepts(s, '"abc"'));
    assert.ok(!accepts(s, '"abcd"'));
    assert.ok(!accepts(s, '{}'));
    const n = { allOf: [{ type: 'number' }, { type: 'integer', minimum: 5 }] };
    assert.ok(accepts(n, '7'));
    assert.ok(!accepts(n, '4'));
    assert.ok(!accepts(n, '7.5'));
    assert.throws(() => jsonSchemaToGrammar({ allOf: [{ maxLength: 3 }, { maxLength: 4 }] }), /'maxLength' differs/);
  });

  test('allOf of objects still merges their properties', () => {
    const s = {
      allOf: [{ properties: { a: { type: 'integer' } }, required: ['a'] }, { properties: { b: { const: 1 } } }],
    };
    assert.ok(accepts(s, '{"a": 1, "b": 1}'));
  });
});
