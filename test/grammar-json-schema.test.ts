// JSON Schema to GBNF: what each keyword accepts and rejects, integer ranges checked
// exhaustively, errors naming the JSON pointer, and constrained random generation from
// bounded schemas (20 seeds each, over a synthetic vocabulary and a real one) whose
// completed outputs parse and validate against the schema.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import {
  decimalRange,
  GrammarMatcher,
  GrammarSampler,
  type GrammarVocab,
  integerRange,
  jsonSchemaToGrammar,
  parseGrammar,
  SchemaError,
} from '../src/sampling/grammar/index.js';
import { loadVocab, type Vocab } from '../src/vocab/index.js';
import { completes, generate } from './grammar-generate.js';
import { seededRandom } from './helpers/random.js';
import { missingShared, sharedPath } from './helpers/shared.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = { [k: string]: Json };

function quiet<T>(fn: () => T): T {
  setLogCallback(() => {});
  try {
    return fn();
  } finally {
    setLogCallback(null);
  }
}

function accepts(schema: unknown, text: string): boolean {
  const m = new GrammarMatcher(parseGrammar(quiet(() => jsonSchemaToGrammar(schema))));
  return m.acceptString(text) && m.isComplete();
}

// ---- a small validator for the keywords the tests use ----

const FORMATS: Record<string, RegExp> = {
  date: /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/,
  time: /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/,
  'date-time':
    /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
};

function typeOf(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function validate(root: Schema, schema: Json, v: Json, path = '$'): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: false schema`];
  const s = schema as Schema;
  const errs: string[] = [];
  const fail = (m: string) => errs.push(`${path}: ${m}`);
  if (typeof s.$ref === 'string') {
    let target: Json = root;
    for (const k of s.$ref.slice(2).split('/')) target = (target as Schema)[k]!;
    return validate(root, target, v, path);
  }
  const anyOf = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (anyOf && !anyOf.some((a) => validate(root, a, v, path).length === 0)) fail('no alternative matches');
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v)) fail('not the const');
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) fail('not in enum');
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const t = typeOf(v);
    if (!types.some((x) => x === t || (x === 'number' && t === 'integer'))) fail(`type ${t}, want ${types.join('|')}`);
  }
  if (typeof v === 'string') {
    const len = [...v].length;
    if (typeof s.maxLength === 'number' && len > s.maxLength) fail(`longer than ${s.maxLength}`);
    if (typeof s.minLength === 'number' && len < s.minLength) fail(`shorter than ${s.minLength}`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v)) fail(`does not match ${s.pattern}`);
    if (typeof s.format === 'string' && FORMATS[s.format] && !FORMATS[s.format]!.test(v)) fail(`not a ${s.format}`);
  }
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) fail(`below ${s.minimum}`);
    if (typeof s.maximum === 'number' && v > s.maximum) fail(`above ${s.maximum}`);
  }
  if (Array.isArray(v)) {
    if (typeof s.maxItems === 'number' && v.length > s.maxItems) fail(`more than ${s.maxItems} items`);
    if (typeof s.minItems === 'number' && v.length < s.minItems) fail(`fewer than ${s.minItems} items`);
    if (Array.isArray(s.prefixItems)) {
      if (v.length !== s.prefixItems.length) fail('tuple length');
      for (const [i, it] of s.prefixItems.entries()) errs.push(...validate(root, it, v[i]!, `${path}[${i}]`));
    } else if (s.items !== undefined) {
      for (const [i, x] of v.entries()) errs.push(...validate(root, s.items, x, `${path}[${i}]`));
    }
  }
  if (typeOf(v) === 'object' && (s.properties || 'additionalProperties' in s)) {
    const obj = v as Schema;
    const props = (s.properties ?? {}) as Schema;
    for (const r of (s.required ?? []) as string[]) if (!(r in obj)) fail(`missing ${r}`);
    for (const [k, x] of Object.entries(obj)) {
      if (k in props) errs.push(...validate(root, props[k]!, x, `${path}.${k}`));
      else if (s.additionalProperties === undefined || s.additionalProperties === false) fail(`unexpected ${k}`);
      else errs.push(...validate(root, s.additionalProperties, x, `${path}.${k}`));
    }
  }
  return errs;
}

// ---- keyword behaviour ----

describe('keywords', () => {
  test('primitive types', () => {
    assert.ok(accepts({ type: 'string' }, '"a\\"b\\u00e9"'));
    assert.ok(!accepts({ type: 'string' }, '"a\nb"'));
    assert.ok(accepts({ type: 'number' }, '-12.5e+3'));
    assert.ok(accepts({ type: 'integer' }, '-0'));
    assert.ok(!accepts({ type: 'integer' }, '1.5'));
    assert.ok(accepts({ type: 'boolean' }, 'false'));
    assert.ok(accepts({ type: 'null' }, 'null'));
    assert.ok(accepts({ type: ['string', 'null'] }, 'null'));
    assert.ok(accepts({}, '{"any": [1, {"x": null}]}'));
    assert.ok(accepts({ description: 'anything' }, '"text"'));
  });

  test('const and enum', () => {
    assert.ok(accepts({ const: { a: [1, 'x'] } }, '{"a":[1,"x"]}'));
    assert.ok(!accepts({ const: { a: [1, 'x'] } }, '{"a": [1, "x"]}'));
    const e = { enum: ['red', 'green', 42, null, 'quote"d'] };
    for (const ok of ['"red"', '42', 'null', '"quote\\"d"']) assert.ok(accepts(e, ok), ok);
    assert.ok(!accepts(e, '"blue"'));
  });

  test('properties: order, required, optional, additionalProperties', () => {
    const s = {
      type: 'object',
      properties: { a: { type: 'integer' }, b: { type: 'string' }, c: { type: 'boolean' } },
      required: ['b'],
    };
    assert.ok(accepts(s, '{"b": "x"}'));
    assert.ok(accepts(s, '{"b": "x", "a": 1, "c": true}')); // required first, then optional in order
    assert.ok(accepts(s, '{"b": "x", "c": true}'));
    assert.ok(!accepts(s, '{"a": 1}'));
    assert.ok(!accepts(s, '{"b": "x", "c": true, "a": 1}'));
    assert.ok(!accepts(s, '{"b": "x", "d": 1}'));
    const open = { ...s, additionalProperties: true };
    assert.ok(accepts(open, '{"b": "x", "d": [1], "e": {}}'));
    assert.ok(!accepts(open, '{"b": "x", "c": 5}')); // "c" is declared: its schema applies
    const typed = { type: 'object', additionalProperties: { type: 'integer' } };
    assert.ok(accepts(typed, '{"x": 1, "y": 2}'));
    assert.ok(!accepts(typed, '{"x": "1"}'));
    assert.ok(
      accepts({ type: 'object', properties: { ab: { type: 'null' } }, additionalProperties: true }, '{"a": 1}'),
    );
  });

  test('arrays: items, minItems, maxItems, tuples', () => {
    const s = { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 };
    assert.ok(!accepts(s, '[]'));
    assert.ok(accepts(s, '[1]'));
    assert.ok(accepts(s, '[1, 2, 3]'));
    assert.ok(!accepts(s, '[1, 2, 3, 4]'));
    assert.ok(accepts({ type: 'array', items: { type: 'string' }, maxItems: 2 }, '[]'));
    const t = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] };
    assert.ok(accepts(t, '["a", 1]'));
    assert.ok(!accepts(t, '["a"]'));
  });

  test('strings: minLength, maxLength, formats, pattern', () => {
    const s = { type: 'string', minLength: 2, maxLength: 3 };
    assert.deepEqual(
      ['""', '"a"', '"ab"', '"abc"', '"abcd"', '"\\n\\t"'].map((x) => accepts(s, x)),
      [false, false, true, true, false, true],
    );
    assert.ok(accepts({ type: 'string', format: 'date' }, '"2024-02-29"'));
    assert.ok(!accepts({ type: 'string', format: 'date' }, '"2024-13-01"'));
    assert.ok(accepts({ type: 'string', format: 'time' }, '"23:59:60Z"'.replace('60', '59')));
    assert.ok(accepts({ type: 'string', format: 'date-time' }, '"2024-01-31T12:00:00.123+02:00"'));
    assert.ok(accepts({ type: 'string', format: 'uuid' }, '"123e4567-e89b-12d3-a456-426614174000"'));
    const p = { type: 'string', pattern: '^(?:[A-Z]{2}|\\d)-[a-c]+\\.?"$' };
    assert.ok(accepts(p, '"AB-abc.\\""'));
    assert.ok(accepts(p, '"7-a\\""'));
    assert.ok(!accepts(p, '"A-a\\""'));
  });

  test('patterns agree with JavaScript regular expressions (JSON-escaped strings)', () => {
    const patterns = [
      '^[a-c"\\\\]{1,3}$',
      '^(ab|c)*\\.?[^a]$',
      '^\\d+-\\w?$',
      '^(?:x|y"z)+é?$',
      '^.{2}$',
      '^[^a-c]*?b$',
      '^(a|)(b{2,}|\\u0063)$',
    ];
    const alphabet = ['a', 'b', 'c', '"', '\\', '.', '-', '1', '_', 'x', 'y', 'z', 'é', ' '];
    const random = seededRandom(11);
    for (const pattern of patterns) {
      const g = parseGrammar(quiet(() => jsonSchemaToGrammar({ type: 'string', pattern })));
      const re = new RegExp(pattern, 'u');
      let hits = 0;
      for (let k = 0; k < 1500; k++) {
        let str = '';
        const len = Math.floor(random() * 5);
        for (let i = 0; i < len; i++) str += alphabet[Math.floor(random() * alphabet.length)];
        if (k < 20 && k % 2 === 0) str = ['ab', 'c', 'x', '1-', 'bb'][(k / 2) % 5]!; // some likely matches
        const m = new GrammarMatcher(g);
        const got = m.acceptString(JSON.stringify(str)) && m.isComplete();
        assert.equal(got, re.test(str), `${pattern} on ${JSON.stringify(str)}`);
        if (got) hits++;
      }
      assert.ok(hits > 0, `${pattern}: nothing matched`);
    }
  });

  test('anyOf, oneOf, $ref to $defs and definitions, recursion', () => {
    const s = {
      anyOf: [{ $ref: '#/$defs/pt' }, { $ref: '#/definitions/name' }],
      $defs: { pt: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } },
      definitions: { name: { type: 'string', maxLength: 2 } },
    };
    assert.ok(accepts(s, '{"x": 1}'));
    assert.ok(accepts(s, '"ab"'));
    assert.ok(!accepts(s, '"abc"'));
    const tree = {
      $ref: '#/$defs/node',
      $defs: {
        node: {
          type: 'object',
          properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/node' } } },
          required: ['v'],
        },
      },
    };
    assert.ok(accepts(tree, '{"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]}'));
    assert.ok(accepts({ oneOf: [{ type: 'null' }, { type: 'boolean' }] }, 'true'));
  });

  test('allOf merges object properties', () => {
    const s = {
      allOf: [
        { type: 'object', properties: { a: { type: 'integer' } } },
        { $ref: '#/$defs/b' },
        { anyOf: [{ properties: { c: { type: 'null' } } }] },
      ],
      $defs: { b: { properties: { b: { type: 'string' } } } },
    };
    assert.ok(accepts(s, '{"a": 1, "b": "x"}'));
    assert.ok(accepts(s, '{"a": 1, "b": "x", "c": null}'));
    assert.ok(!accepts(s, '{"a": 1}'));
  });

  test('whitespace follows llama.cpp: up to two newlines and 20 blanks', () => {
    const s = { type: 'array', items: { type: 'integer' } };
    assert.ok(accepts(s, '[\n\n    1,\n  2 ]'));
    assert.ok(!accepts(s, '[\n\n\n1]'));
    assert.ok(!accepts(s, `[\n${' '.repeat(21)}1]`));
  });
});

describe('integer ranges', () => {
  const bounds: [number | undefined, number | undefined][] = [
    [0, 0],
    [0, 9],
    [1, 10],
    [-5, 5],
    [-120, -7],
    [7, 1234],
    [99, 101],
    [-1000, 0],
    [15, undefined],
    [-15, undefined],
    [undefined, 305],
    [undefined, -42],
    [100, 100],
    [190, 901],
  ];
  for (const [min, max] of bounds) {
    test(`[${min ?? '-inf'}, ${max ?? 'inf'}] exactly`, () => {
      const g = parseGrammar(`root ::= ${integerRange([min, max])}`);
      for (let v = -1500; v <= 1500; v++) {
        const m = new GrammarMatcher(g);
        const got = m.acceptString(String(v)) && m.isComplete();
        const want = (min === undefined || v >= min) && (max === undefined || v <= max);
        assert.equal(got, want, `${v}`);
      }
      for (const bad of ['-0', '007', '+1', '']) {
        const m = new GrammarMatcher(g);
        assert.ok(!(m.acceptString(bad) && m.isComplete()), bad);
      }
    });
  }

  test('schema keywords: minimum, maximum, exclusive forms', () => {
    assert.ok(accepts({ type: 'integer', minimum: 3, exclusiveMaximum: 10 }, '9'));
    assert.ok(!accepts({ type: 'integer', minimum: 3, exclusiveMaximum: 10 }, '10'));
    assert.ok(!accepts({ type: 'integer', exclusiveMinimum: 3 }, '3'));
    assert.ok(accepts({ type: 'integer', exclusiveMinimum: 3 }, '12345678901'));
    assert.ok(accepts({ type: 'integer', minimum: 2.5 }, '3'));
    assert.ok(!accepts({ type: 'integer', minimum: 2.5 }, '2'));
  });
});

describe('64-bit integer bounds (Zod .int(), int64)', () => {
  const full = (g: string, text: string) => {
    const m = new GrammarMatcher(parseGrammar(g));
    return m.acceptString(text) && m.isComplete();
  };
  test("Zod's .int(): ±9007199254740991", () => {
    const s = { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 };
    for (const ok of ['0', '7', '-9007199254740991', '9007199254740991', '9007199254740990', '1234567890123456']) {
      assert.ok(accepts(s, ok), ok);
    }
    for (const bad of ['9007199254740992', '-9007199254740992', '10000000000000000', '-0', '01']) {
      assert.ok(!accepts(s, bad), bad);
    }
  });
  test('int64 bounds as BigInt, digit by digit', () => {
    const max = (1n << 63n) - 1n;
    const g = `root ::= ${integerRange([-max - 1n, max])}`;
    for (const ok of [String(max), String(-max - 1n), '0', '4611686018427387904', '-999999999999999999']) {
      assert.ok(full(g, ok), ok);
    }
    for (const bad of [String(max + 1n), String(-max - 2n), '10000000000000000000']) assert.ok(!full(g, bad), bad);
    const g2 = `root ::= ${integerRange([10n ** 17n, undefined])}`;
    assert.ok(full(g2, String(10n ** 17n)));
    assert.ok(full(g2, String(10n ** 17n + 5n)));
    assert.ok(!full(g2, String(10n ** 17n - 1n)));
  });
  test('a bound beyond 64 bits names the keyword', () => {
    assert.throws(
      () => jsonSchemaToGrammar({ type: 'integer', maximum: 1e20 }),
      /^SchemaError: #\/maximum: integer bound/,
    );
  });
});

describe('number ranges: exactly the decimals between the bounds', () => {
  const values: string[] = [];
  for (let i = -30; i <= 30; i++) {
    values.push(String(i));
    for (const f of ['0', '05', '1', '25', '5', '75', '99', '999', '001', '0001', '00']) {
      values.push(`${i < 0 || Object.is(i, -0) ? '-' : ''}${Math.abs(i)}.${f}`);
      if (i === 0) values.push(`-0.${f}`);
    }
  }
  values.push('-0', '0.10', '1.5000');
  const cases: [number | undefined, boolean, number | undefined, boolean][] = [
    [0, false, 1, false],
    [0.5, false, 2.25, false],
    [-1.5, false, -0.5, false],
    [0, true, undefined, false],
    [undefined, false, 0, true],
    [-2.5, true, 3.75, false],
    [0.001, false, 0.01, false],
    [10, false, 10, false],
    [0.1, true, 0.2, true],
    [-25.05, false, 12.999, true],
    [-0.25, false, 0, false],
    [1, false, undefined, false],
    [undefined, false, -3.1, false],
  ];
  for (const [lo, le, hi, he] of cases) {
    test(`${lo === undefined ? '(-inf' : `${le ? '(' : '['}${lo}`}, ${hi === undefined ? 'inf)' : `${hi}${he ? ')' : ']'}`}`, () => {
      const g = parseGrammar(
        `root ::= ${decimalRange(lo === undefined ? undefined : { value: lo, exclusive: le }, hi === undefined ? undefined : { value: hi, exclusive: he })}`,
      );
      for (const v of values) {
        const x = Number(v);
        const want = (lo === undefined || (le ? x > lo : x >= lo)) && (hi === undefined || (he ? x < hi : x <= hi));
        const m = new GrammarMatcher(g);
        const got = m.acceptString(v) && m.isComplete();
        // "-0" forms of zero may be left out (a narrower grammar), never let in wrongly
        if (got !== want && !(want && /^-0(\.0+)?$/.test(v))) assert.fail(`${v}: got ${got}, want ${want}`);
      }
    });
  }
  test('schema keywords on numbers: minimum, exclusiveMaximum (Zod .min(0).max(1), .positive())', () => {
    assert.ok(accepts({ type: 'number', minimum: 0, maximum: 1 }, '0.75'));
    assert.ok(!accepts({ type: 'number', minimum: 0, maximum: 1 }, '1.5'));
    assert.ok(!accepts({ type: 'number', exclusiveMinimum: 0 }, '0'));
    assert.ok(accepts({ type: 'number', exclusiveMinimum: 0 }, '0.001'));
    assert.ok(!accepts({ type: 'number', exclusiveMinimum: 0 }, '-3'));
    assert.throws(() => jsonSchemaToGrammar({ type: 'number', minimum: 2, maximum: 1 }), /no number lies/);
  });
});

describe('keywords a grammar cannot enforce are errors naming them', () => {
  const cases: [Json, RegExp][] = [
    [
      { type: 'array', items: { type: 'integer' }, uniqueItems: true },
      /^#\/uniqueItems: 'uniqueItems' is not supported/,
    ],
    [{ type: 'number', multipleOf: 0.5 }, /^#\/multipleOf: /],
    [{ properties: { a: { not: { type: 'null' } } } }, /^#\/properties\/a\/not: /],
    [{ anyOf: [{ type: 'string' }], oneOf: [{ type: 'integer' }] }, /^#\/anyOf: /],
    [{ type: 'object', propertyNames: { pattern: '^a' } }, /^#\/propertyNames: /],
    [{ type: 'string', maxLength: 5000 }, /^#: an upper bound of 5000 is above the grammar's repetition limit/],
    [{ if: { type: 'string' } }, /^#\/if: /],
  ];
  for (const [schema, re] of cases) {
    test(JSON.stringify(schema), () => {
      assert.throws(
        () => jsonSchemaToGrammar(schema),
        (e: unknown) => e instanceof SchemaError && re.test(e.message),
      );
    });
  }
  test('values that constrain nothing, annotations and other formats are accepted', () => {
    assert.ok(accepts({ type: 'array', items: { type: 'integer' }, uniqueItems: false }, '[1, 1]'));
    assert.ok(accepts({ type: 'integer', multipleOf: 1 }, '3'));
    assert.ok(
      accepts(
        { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'number' } },
        '{"a": 1}',
      ),
    );
    assert.ok(accepts({ type: 'string', format: 'email', title: 't', description: 'd', default: 'x' }, '"a@b"'));
  });
});

describe('errors name the JSON pointer', () => {
  const cases: [string, Json, RegExp][] = [
    ['unknown type', { properties: { a: { type: 'strng' } } }, /^#\/properties\/a\/type: unknown type 'strng'/],
    ['bad type value', { items: { type: 3 } }, /^#\/items\/type: type must be a string/],
    [
      'unresolvable $ref',
      { properties: { p: { $ref: '#/$defs/missing' } } },
      /^#\/properties\/p\/\$ref: cannot resolve/,
    ],
    ['remote $ref', { $ref: 'https://example.com/s.json' }, /^#\/\$ref: only local references/],
    [
      'bad minItems',
      { type: 'array', items: {}, minItems: 'x' },
      /^#\/minItems: minItems must be a non-negative integer/,
    ],
    ['min > max', { type: 'array', items: {}, minItems: 3, maxItems: 1 }, /^#\/minItems: minItems exceeds maxItems/],
    ['empty enum', { enum: [] }, /^#\/enum: enum must be a non-empty array/],
    ['empty anyOf', { anyOf: [] }, /^#\/anyOf: anyOf must be a non-empty array/],
    ['required not a list', { properties: {}, required: 'a' }, /^#\/required: required must be a list/],
    ['false schema', { properties: { a: false } }, /^#\/properties\/a: the schema `false` matches nothing/],
    ['not an object', { items: 5 }, /^#\/items: a schema must be an object or a boolean/],
    ['unanchored pattern', { type: 'string', pattern: '[a-z]+' }, /^#\/pattern: a pattern must start with/],
    ['lookahead in pattern', { type: 'string', pattern: '^(?=a)a$' }, /^#\/pattern: lookaround .* not supported/],
    ['pointer escaping', { properties: { 'a/b': { type: 'x' } } }, /^#\/properties\/a~1b\/type: unknown type/],
    ['integer bounds cross', { type: 'integer', minimum: 5, maximum: 4 }, /^#: no integer lies between the bounds/],
    ['self reference', { $ref: '#' }, /^#: the schema gives an unusable grammar: .*left recursion/],
    ['not JSON', '{"type": ', /^#: not valid JSON/],
  ];
  for (const [what, schema, re] of cases) {
    test(what, () => {
      assert.throws(
        () => quiet(() => jsonSchemaToGrammar(schema)),
        (e: unknown) => {
          assert.ok(e instanceof SchemaError, `not a SchemaError: ${e}`);
          assert.match(e.message, re);
          return true;
        },
      );
    });
  }
});

// ---- constrained generation ----

/** Single characters (printable ASCII, a few others) plus some multi-character pieces and EOG. */
function charVocab(): GrammarVocab {
  const pieces = ['<eos>'];
  for (let c = 0x20; c < 0x7f; c++) pieces.push(String.fromCharCode(c));
  pieces.push('\n', 'é', '日', '😀', '"a', '":', '", "', 'true', 'null', '00', '-1', '{"', '"}', '[]', '  ');
  const bytes = pieces.map((p) => Buffer.from(p, 'utf8').toString('latin1'));
  return {
    nTokens: bytes.length,
    pieceBytes: (id) => (id === 0 ? '' : bytes[id]!),
    isEog: (id) => id === 0,
  };
}

const SCHEMAS: [string, Schema][] = [
  [
    'person: enums, maxLength, integer bounds, optional fields',
    {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 12 },
        age: { type: 'integer', minimum: 0, maximum: 130 },
        role: { enum: ['admin', 'user', 'guest'] },
        active: { type: 'boolean' },
        email: { type: ['string', 'null'], maxLength: 20 },
      },
      required: ['name', 'role'],
    },
  ],
  [
    'arrays: maxItems, nested objects, tuples',
    {
      type: 'object',
      properties: {
        points: {
          type: 'array',
          minItems: 1,
          maxItems: 3,
          items: {
            type: 'object',
            properties: { x: { type: 'integer', minimum: -9, maximum: 9 }, y: { type: 'number' } },
            required: ['x', 'y'],
          },
        },
        pair: { type: 'array', prefixItems: [{ type: 'string', maxLength: 3 }, { type: 'null' }] },
        flags: { type: 'array', items: { enum: [1, 2, 'three'] }, maxItems: 4 },
      },
      required: ['points', 'pair'],
    },
  ],
  [
    'anyOf, $ref, const, formats',
    {
      type: 'object',
      properties: {
        shape: { anyOf: [{ $ref: '#/$defs/circle' }, { $ref: '#/$defs/square' }] },
        version: { const: 2 },
        created: { type: 'string', format: 'date-time' },
        id: { type: 'string', format: 'uuid' },
        code: { type: 'string', pattern: '^[A-Z]{2,3}-\\d{2}$' },
      },
      required: ['shape', 'version', 'created', 'code'],
      $defs: {
        circle: {
          type: 'object',
          properties: { kind: { const: 'circle' }, r: { type: 'integer', minimum: 1, maximum: 99 } },
          required: ['kind', 'r'],
        },
        square: {
          type: 'object',
          properties: { kind: { const: 'square' }, side: { type: 'string', maxLength: 4 } },
          required: ['kind'],
        },
      },
    },
  ],
  [
    'additionalProperties schema, bounded by maxLength',
    {
      type: 'object',
      properties: { n: { type: 'integer', maximum: 5, minimum: 0 } },
      additionalProperties: { type: 'string', maxLength: 3 },
      required: ['n'],
    },
  ],
];

function runSchema(schema: Schema, vocab: GrammarVocab, seeds: number, maxSteps: number): [number, number] {
  const g = parseGrammar(quiet(() => jsonSchemaToGrammar(schema)));
  const sampler = new GrammarSampler(g, vocab);
  let completed = 0;
  let steps = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const r = generate(g, sampler, vocab, seed, { maxSteps, closeAfter: 80, closers: '"}]0' });
    steps += r.steps;
    if (!r.completed) continue;
    completed++;
    assert.ok(completes(g, r.bytes));
    const value = JSON.parse(r.text) as Json;
    const errs = validate(schema, schema, value);
    assert.deepEqual(errs, [], `seed ${seed}: ${r.text}`);
  }
  return [completed, steps];
}

describe('constrained generation validates against the schema', () => {
  const tiny = charVocab();
  for (const [what, schema] of SCHEMAS) {
    test(`${what}: synthetic vocabulary, 20 seeds`, (t) => {
      const [completed, steps] = runSchema(schema, tiny, 20, 400);
      t.diagnostic(`${completed}/20 completed, ${steps} steps`);
      assert.equal(completed, 20);
    });
  }

  test('GrammarSampler.fromJsonSchema', () => {
    const s = GrammarSampler.fromJsonSchema({ enum: ['yes', 'no'] }, tiny);
    const g = parseGrammar(jsonSchemaToGrammar({ enum: ['yes', 'no'] }));
    const r = generate(g, s, tiny, 1, { maxSteps: 20 });
    assert.ok(r.completed && ['yes', 'no'].includes(JSON.parse(r.text)));
    assert.throws(() => GrammarSampler.fromJsonSchema({ type: 'nope' }, tiny), SchemaError);
  });

  let spm: Vocab | undefined;
  const rel = 'vocab/ggml-vocab-llama-spm.gguf';
  for (const [what, schema] of SCHEMAS) {
    test(`${what}: llama-spm, 20 seeds`, { skip: sharedPath(rel) ? false : missingShared(rel) }, (t) => {
      spm ??= quiet(() => loadVocab(sharedPath(rel)!));
      const [completed, steps] = runSchema(schema, spm, 20, 300);
      t.diagnostic(`${completed}/20 completed, ${steps} steps`);
      assert.equal(completed, 20);
    });
  }
});
