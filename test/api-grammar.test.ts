// Grammar-constrained completion through the API, on a generated llama: with a GBNF grammar no
// streamed token ever leaves the grammar (each piece checked by an independent matcher
// as it arrives, 20 seeds) and each output completes the grammar (then only
// end-of-generation is allowed, so it stops with stopped_eos); with bounded JSON schemas
// (enum, maxLength, maxItems, integer range) every completed output parses and validates.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, loadModel } from '../src/index.js';
import { GrammarMatcher, jsonSchemaToGrammar, parseGrammar } from '../src/sampling/grammar/index.js';
import { tinyLlama } from './helpers/models.js';

const MODEL = tinyLlama();
const PROMPT = 'Once upon a time';

const GRAMMAR = `
root     ::= ", there was a " animal " named " name "." (" " sentence)?
animal   ::= "cat" | "dog" | "little girl" | "big bird"
name     ::= [A-Z] [a-z]{2,6}
sentence ::= [A-Za-z] [a-z ,]{4,40} "."
`;

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 10 },
    mood: { enum: ['happy', 'sad', 'sleepy'] },
    friends: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 3 },
    age: { type: 'integer', minimum: 1, maximum: 12 },
  },
  required: ['name', 'mood', 'friends', 'age'],
  additionalProperties: false,
} as const;

/** The constraints of SCHEMA, checked on a parsed value. */
function validate(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'not an object';
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  if (keys.join() !== 'age,friends,mood,name') return `keys ${keys}`;
  if (typeof o.name !== 'string' || [...o.name].length > 10) return `name ${JSON.stringify(o.name)}`;
  if (!['happy', 'sad', 'sleepy'].includes(o.mood as string)) return `mood ${JSON.stringify(o.mood)}`;
  if (!Array.isArray(o.friends) || o.friends.length > 3) return `friends ${JSON.stringify(o.friends)}`;
  for (const f of o.friends) if (typeof f !== 'string' || [...f].length > 6) return `friend ${JSON.stringify(f)}`;
  if (!Number.isInteger(o.age) || (o.age as number) < 1 || (o.age as number) > 12) return `age ${o.age}`;
  return undefined;
}

describe('grammar-constrained completion', () => {
  let ctx: LlamaContext;
  before(async () => {
    ctx = await loadModel({ model: MODEL, n_threads: 1, n_ctx: 512 });
  });
  after(() => ctx?.release());

  test('GBNF: every streamed token stays in the grammar and the output completes it (20 seeds)', async () => {
    const grammar = parseGrammar(GRAMMAR);
    const outputs = new Set<string>();
    for (let seed = 1; seed <= 20; seed++) {
      const m = new GrammarMatcher(grammar);
      let step = 0;
      const r = await ctx.completion(
        { prompt: PROMPT, grammar: GRAMMAR, n_predict: 120, temperature: 1, seed },
        (t) => {
          step++;
          assert.ok(
            m.acceptString(t.token),
            `seed ${seed}, step ${step}: ${JSON.stringify(t.token)} leaves the grammar`,
          );
        },
      );
      assert.equal(r.stopped_eos, true, `seed ${seed}: ${JSON.stringify(r.text)} did not end`);
      assert.ok(m.isComplete(), `seed ${seed}: ${JSON.stringify(r.text)} is not a complete parse`);
      assert.match(
        r.text,
        /^, there was a (cat|dog|little girl|big bird) named [A-Z][a-z]{2,6}\.( [A-Za-z][a-z ,]{4,40}\.)?$/,
      );
      outputs.add(r.text);
    }
    assert.ok(outputs.size >= 10, `only ${outputs.size} distinct outputs over 20 seeds`);
  });

  test('bounded JSON schemas: completed outputs parse and validate (json_schema and response_format)', async () => {
    const grammar = parseGrammar(jsonSchemaToGrammar(SCHEMA));
    for (let seed = 1; seed <= 12; seed++) {
      const m = new GrammarMatcher(grammar);
      const format =
        seed % 2 === 0
          ? { json_schema: SCHEMA }
          : { response_format: { type: 'json_schema' as const, json_schema: { strict: true, schema: SCHEMA } } };
      const r = await ctx.completion({ prompt: PROMPT, ...format, n_predict: 900, temperature: 1, seed }, (t) => {
        assert.ok(m.acceptString(t.token), `seed ${seed}: ${JSON.stringify(t.token)} leaves the schema's grammar`);
      });
      assert.equal(r.stopped_eos, true, `seed ${seed}: did not complete in ${r.tokens_predicted} tokens`);
      let v: unknown;
      assert.doesNotThrow(() => {
        v = JSON.parse(r.text);
      }, `seed ${seed}: ${r.text}`);
      assert.equal(validate(v), undefined, `seed ${seed}: ${r.text}`);
    }
  });

  test('a lazy grammar (grammar_lazy, a word trigger): free text up to the trigger, the grammar from it', async () => {
    // the greedy reply token by token, and one token's text from its middle as the trigger
    // (a whole token: one whose text first appears where that token starts)
    const pieces: string[] = [];
    await ctx.completion({ prompt: PROMPT, n_predict: 16, temperature: 0, ignore_eos: true }, (t) => {
      pieces.push(t.token);
    });
    const text = pieces.join('');
    let word = '';
    let before = '';
    for (let k = 2, at = pieces[0]!.length + pieces[1]!.length; k < pieces.length; at += pieces[k]!.length, k++) {
      if (/^[a-z]+$/i.test(pieces[k]!) && text.indexOf(pieces[k]!) === at) {
        word = pieces[k]!;
        before = text.slice(0, at);
        break;
      }
    }
    assert.ok(word !== '', `no usable token in ${JSON.stringify(pieces)}`);
    const r = await ctx.completion({
      prompt: PROMPT,
      n_predict: 40,
      temperature: 0,
      grammar: `root ::= ${JSON.stringify(word)} " ok" [.]{3}`,
      grammar_lazy: true,
      grammar_triggers: [{ type: 1, value: word }],
    });
    assert.equal(r.text, `${before}${word} ok...`, 'unconstrained up to the trigger, then the grammar to its end');
    assert.equal(r.stopped_eos, true);
    await assert.rejects(
      ctx.completion({ prompt: PROMPT, n_predict: 2, grammar: 'root ::= "a"', grammar_lazy: true }),
      (e: Error & { code?: string }) =>
        e.code === 'ERR_OPTION' && /^grammar_triggers = \[\]: a lazy grammar needs/.test(e.message),
    );
  });

  test("response_format json_object: any JSON (llama.cpp's empty schema)", async () => {
    const r = await ctx.completion({
      prompt: PROMPT,
      response_format: { type: 'json_object' },
      n_predict: 400,
      temperature: 0.7,
      seed: 1,
      logit_bias: [['"', 3]],
    });
    if (r.stopped_eos) assert.doesNotThrow(() => JSON.parse(r.text), r.text);
    else assert.ok(new GrammarMatcher(parseGrammar(jsonSchemaToGrammar({}))).acceptString(r.text), r.text);
  });
});
