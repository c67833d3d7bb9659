// Grammar and JSON-schema compilation stay near-linear in their input, and the matcher's
// work per token stays bounded, on the inputs that used to stall a server: a GBNF chain of
// 20,000 rules (quadratic: 23 s), a JSON schema of 5,000 optional properties (over 90 s
// and 1.5 GB, and refused above 1,000 properties), an enum of 100,000 values (the first
// token filter took minutes). Times are CPU times with bounds far above what the code
// needs (loaded CI machines); the matcher's work is counted exactly (stack entries).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compileGrammar,
  GrammarError,
  GrammarMatcher,
  GrammarSampler,
  type GrammarVocab,
  jsonSchemaToGrammar,
  parseGrammar,
  SchemaError,
  TokenIndex,
} from '../src/sampling/grammar/index.js';
import { loadVocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

function cpuMs<T>(fn: () => T): [T, number] {
  const u0 = process.cpuUsage();
  const r = fn();
  const u = process.cpuUsage(u0);
  return [r, (u.user + u.system) / 1000];
}

/** The least CPU time of `runs` calls (noise only adds time). */
function leastCpuMs(fn: () => unknown, runs = 3): number {
  let best = Infinity;
  for (let k = 0; k < runs; k++) best = Math.min(best, cpuMs(fn)[1]);
  return best;
}

const chain = (n: number): string => {
  let s = 'root ::= r0\n';
  for (let k = 0; k < n; k++) s += `r${k} ::= "x" r${k + 1} | "y"\n`;
  return `${s}r${n} ::= "z"\n`;
};
const optionalProps = (n: number) => ({
  type: 'object',
  properties: Object.fromEntries(Array.from({ length: n }, (_, k) => [`p${k}`, { type: 'string' }])),
});
const enumOf = (n: number) => ({ enum: Array.from({ length: n }, (_, k) => `value${k}`) });

describe('compilation is near-linear', () => {
  test('a chain of 20,000 GBNF rules (525 KB) parses in well under a second of CPU; 4x the rules, about 4x the time', () => {
    const text = chain(20_000);
    assert.ok(text.length > 500_000);
    const [g, ms] = cpuMs(() => parseGrammar(text));
    assert.equal(g.rules.length, 20_002);
    assert.ok(ms < 4000, `${ms.toFixed(0)} ms of CPU (it was 17 s)`);
    parseGrammar(chain(2000)); // warm up
    const small = leastCpuMs(() => parseGrammar(chain(10_000)));
    const large = leastCpuMs(() => parseGrammar(chain(40_000)));
    assert.ok(large < 8 * Math.max(small, 20), `10,000 rules: ${small.toFixed(0)} ms, 40,000: ${large.toFixed(0)} ms`);
  });

  test('a JSON schema of 5,000 optional properties compiles (a linear grammar) and keeps its meaning', () => {
    const [c, ms] = cpuMs(() => compileGrammar({ jsonSchema: optionalProps(5000) }));
    assert.ok(ms < 4000, `${ms.toFixed(0)} ms of CPU (it was over 90 s)`);
    assert.ok(c.ruleStart.length < 10 * 5000, `${c.ruleStart.length} rules: a linear number`);
    const m = () => new GrammarMatcher(c);
    const ok = (text: string) => {
      const x = m();
      return x.acceptString(text) && x.isComplete();
    };
    assert.ok(ok('{}'));
    assert.ok(ok('{"p3": "a", "p4999": "b"}'));
    assert.ok(!ok('{"p4": "a", "p3": "b"}'), 'properties keep their order');
    assert.ok(!ok('{"p3": "a", "p3": "b"}'), 'no property twice');
    const small = leastCpuMs(() => jsonSchemaToGrammar(optionalProps(1500)));
    const large = leastCpuMs(() => jsonSchemaToGrammar(optionalProps(6000)));
    assert.ok(large < 8 * Math.max(small, 20), `1,500: ${small.toFixed(0)} ms, 6,000: ${large.toFixed(0)} ms`);
  });

  test('an enum of 100,000 values compiles in under a few seconds of CPU', () => {
    const [c, ms] = cpuMs(() => compileGrammar({ jsonSchema: enumOf(100_000) }));
    assert.ok(ms < 5000, `${ms.toFixed(0)} ms of CPU`);
    const x = new GrammarMatcher(c);
    assert.ok(x.acceptString('"value99999"') && x.isComplete());
  });

  test('thousands of property names cleaning to one rule name are numbered in linear time, as llama.cpp names them', () => {
    // 'a' and a run of characters a rule name cannot hold: every one cleans to 'a-'
    const odd = (k: number) => [...String(k)].map((d) => ' !@#$%^&*('[Number(d)]).join('');
    const props = Object.fromEntries(Array.from({ length: 3000 }, (_, k) => [`a${odd(k)}`, { const: k }]));
    const [text, ms] = cpuMs(() => jsonSchemaToGrammar({ type: 'object', properties: props, required: ['a '] }));
    assert.ok(ms < 4000, `${ms.toFixed(0)} ms of CPU`);
    assert.match(text, /^a--kv ::= "\\"a \\"" space ":" space a-$/m);
    assert.match(text, /^a--kv0 ::= "\\"a!\\"" space ":" space a-0$/m);
    assert.match(text, /^a--kv2998 ::= /m);
  });

  test('nesting is bounded with clear errors, not a stack overflow', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let k = 0; k < 300; k++) deep = { type: 'array', items: deep };
    assert.throws(
      () => jsonSchemaToGrammar(deep),
      (e: unknown) => e instanceof SchemaError && /nested more than 256/.test(e.message),
    );
    const parens = `root ::= ${'('.repeat(5000)}"a"${')'.repeat(5000)}`;
    assert.throws(
      () => parseGrammar(parens),
      (e: unknown) => e instanceof GrammarError && /nested more than 1000/.test(e.message),
    );
    assert.ok(parseGrammar(`root ::= ${'('.repeat(900)}"a"${')'.repeat(900)}`));
  });
});

/** A vocabulary of single characters and a few longer pieces, like a small BPE one. */
function syntheticVocab(): GrammarVocab {
  const pieces = ['</s>'];
  for (let c = 0x20; c < 0x7f; c++) pieces.push(String.fromCharCode(c));
  pieces.push('"v', '"value', 'value', 'val', 'ue', '"p', '": "', '", "', '{"', '"}', '12', '345');
  return { nTokens: pieces.length, pieceBytes: (id) => pieces[id]!, isEog: (id) => id === 0 };
}

/** Stack entries the matcher interns for the first token filter of a grammar, and the filter's allowed count. */
function firstFilterWork(gbnf: string, vocab: GrammarVocab): { entries: number; allowed: number } {
  const s = new GrammarSampler(parseGrammar(gbnf), vocab, {}, undefined);
  const before = s.matcher.engine.entries;
  const n = vocab.nTokens;
  const c = { ids: Int32Array.from({ length: n }, (_, i) => i), logits: new Float32Array(n), n };
  s.apply(c);
  return { entries: s.matcher.engine.entries - before, allowed: c.logits.filter((x) => x === 0).length };
}

describe("the matcher's work per token is bounded", () => {
  test('an enum: the first filter interns work linear in the number of values (counted exactly)', () => {
    const vocab = syntheticVocab();
    const a = firstFilterWork(jsonSchemaToGrammar(enumOf(10_000)), vocab);
    const b = firstFilterWork(jsonSchemaToGrammar(enumOf(20_000)), vocab);
    assert.ok(a.allowed > 0 && a.allowed === b.allowed);
    assert.ok(b.entries <= 2.2 * a.entries, `10,000 values: ${a.entries} entries, 20,000: ${b.entries}`);
    assert.ok(a.entries < 40 * 10_000, `${a.entries} entries for 10,000 values`);
  });

  test('following an object of optional properties interns stacks linear in the properties written', () => {
    const g = parseGrammar(jsonSchemaToGrammar(optionalProps(2000)));
    const retained = (props: number) => {
      const m = new GrammarMatcher(g);
      let text = '{"p0": "a"';
      for (let k = 1; k <= props; k++) text += `,\n          "p${k * 7}": "b"`;
      assert.ok(m.acceptString(`${text}}`) && m.isComplete());
      return m.engine.retained;
    };
    const five = retained(5);
    const ten = retained(10);
    assert.ok(ten <= 2.3 * five, `5 properties: ${five} entries, 10: ${ten}`);
    // each character between two properties may be followed by any later key: O(properties) stacks
    assert.ok(ten < 20 * 10 * 2000, `${ten} entries for 10 properties of 2,000`);
  });

  test('a grammar needing more parse stacks than the bound fails with a GrammarError, not a stall', () => {
    const s = new GrammarSampler(parseGrammar(jsonSchemaToGrammar(enumOf(5000))), syntheticVocab());
    s.matcher.engine.maxStackEntries = 1000;
    const n = s.vocab.nTokens;
    const c = { ids: Int32Array.from({ length: n }, (_, i) => i), logits: new Float32Array(n), n };
    assert.throws(() => s.apply(c), /more than 1000 parse-stack entries/);
  });

  const qwen = 'vocab/ggml-vocab-qwen2.gguf';
  test('on a 151,646-token vocabulary, the first filters of the pathological grammars take well under seconds', {
    skip: sharedPath(qwen) ? false : missingShared(qwen),
  }, () => {
    const vocab = loadVocab(sharedPath(qwen)!);
    TokenIndex.for(vocab);
    const cases: [string, string][] = [
      ['chain of 20,000 rules', chain(20_000)],
      ['5,000 optional properties', jsonSchemaToGrammar(optionalProps(5000))],
      ['enum of 100,000 values', jsonSchemaToGrammar(enumOf(100_000))],
    ];
    for (const [name, gbnf] of cases) {
      const s = new GrammarSampler(parseGrammar(gbnf), vocab);
      const n = vocab.nTokens;
      const ids = Int32Array.from({ length: n }, (_, i) => i);
      let worst = 0;
      for (let step = 0; step < 6; step++) {
        const c = { ids, logits: new Float32Array(n), n };
        const [, ms] = cpuMs(() => s.apply(c));
        worst = Math.max(worst, ms);
        let pick = -1;
        for (let i = 0; i < n && pick < 0; i++) if (c.logits[i] === 0 && !vocab.isEog(i)) pick = i;
        if (pick < 0) break;
        s.accept(pick);
      }
      assert.ok(worst < 5000, `${name}: a token filter took ${worst.toFixed(0)} ms of CPU (the enum's took minutes)`);
    }
  });
});
