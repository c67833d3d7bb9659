// The grammar sampler over vocabularies: exact allowed sets on a small synthetic
// vocabulary (pieces that cut characters, empty and NUL pieces, EOG, token elements),
// then constrained random generation over real vocabularies: 20 seeds per grammar, each
// step checked (the chosen token keeps the text a valid prefix; EOG only when complete;
// the whole-vocabulary filter agrees with the token-by-token check), completed outputs
// match the grammar, and JSON ones parse.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import {
  allowedTokens,
  GrammarError,
  GrammarMatcher,
  GrammarSampler,
  type GrammarVocab,
  JSON_ARRAY_GBNF,
  JSON_GBNF,
  parseGrammar,
  TokenIndex,
} from '../src/sampling/grammar/index.js';
import { loadVocab, type Vocab } from '../src/vocab/index.js';
import { completes, generate } from './grammar-generate.js';
import { missingShared, sharedPath } from './helpers/shared.js';

/** A vocabulary from a list of pieces (text, or raw byte values). */
class TinyVocab implements GrammarVocab {
  private readonly pieces: string[];
  constructor(
    pieces: (string | number[])[],
    private readonly eog: number[],
  ) {
    this.pieces = pieces.map((p) =>
      typeof p === 'string' ? Buffer.from(p, 'utf8').toString('latin1') : String.fromCharCode(...p),
    );
  }
  get nTokens(): number {
    return this.pieces.length;
  }
  pieceBytes(id: number): string {
    return this.pieces[id]!;
  }
  isEog(id: number): boolean {
    return this.eog.includes(id);
  }
}

const TINY = new TinyVocab(
  [
    '</s>', // 0 EOG
    '', // 1 empty piece
    'a', // 2
    'b', // 3
    'c', // 4
    'ab', // 5
    'abc', // 6
    'é', // 7
    [0xc3], // 8  first byte of é
    [0xa9], // 9  second byte of é
    '😀', // 10
    [0xf0, 0x9f], // 11 first half of 😀
    [0x98, 0x80], // 12 second half of 😀
    [0x00], // 13 NUL
    [0xff], // 14 never UTF-8
    'aé', // 15
    [0x61, 0xc3], // 16 "a" + first byte of é
    [0xc3, 0xa8], // 17 è
    ' ', // 18
  ],
  [0],
);

function allowedSet(s: GrammarSampler, vocab: GrammarVocab): number[] {
  const n = vocab.nTokens;
  const ids = Int32Array.from({ length: n }, (_, i) => i);
  const logits = new Float32Array(n);
  s.apply({ ids, logits, n });
  const full = [...ids].filter((_, i) => logits[i] !== -Infinity);
  // the short-list path (token by token) must agree with the whole-vocabulary pass
  for (const t of ids) {
    const one = { ids: Int32Array.of(t), logits: new Float32Array(1), n: 1 };
    s.apply(one);
    assert.equal(one.logits[0] !== -Infinity, full.includes(t), `token ${t}: short list vs whole vocabulary`);
  }
  return full;
}

describe('synthetic vocabulary', () => {
  test('pieces that cut characters, EOG only when complete', () => {
    const s = new GrammarSampler('root ::= "a" "é"+ "😀"?', TINY);
    assert.deepEqual(allowedSet(s, TINY), [2, 15, 16]);
    s.accept(16); // "a" + half of é
    assert.deepEqual(allowedSet(s, TINY), [9]); // only the byte that completes é (not è's)
    s.accept(9);
    assert.deepEqual(allowedSet(s, TINY), [0, 7, 8, 10, 11]);
    s.accept(11);
    assert.deepEqual(allowedSet(s, TINY), [12]);
    assert.ok(!s.isComplete());
    s.accept(12);
    assert.ok(s.isComplete());
    assert.deepEqual(allowedSet(s, TINY), [0]);
    s.accept(0); // EOG when complete: accepted, nothing changes
    assert.ok(s.isComplete());
  });

  test('empty, NUL and invalid pieces are never allowed as text', () => {
    const s = new GrammarSampler('root ::= [^z]*', TINY);
    const allowed = allowedSet(s, TINY);
    for (const t of [1, 13, 14, 9, 12]) assert.ok(!allowed.includes(t), `token ${t}`);
    for (const t of [0, 2, 5, 6, 7, 8, 10, 11, 15, 16, 17, 18]) assert.ok(allowed.includes(t), `token ${t}`);
  });

  test('a disallowed token is an error; so is EOG before completion', () => {
    const s = new GrammarSampler('root ::= "ab"', TINY);
    assert.throws(
      () => s.accept(3),
      (e: unknown) => e instanceof GrammarError && /token 3 \("b"\)/.test(e.message),
    );
    assert.throws(() => s.accept(0), GrammarError);
    s.accept(2);
    s.accept(3);
    s.accept(0);
  });

  test('token elements: <[id]> and !<[id]>', () => {
    const s = new GrammarSampler('root ::= "a" <[5]> "c" !<[3]>', TINY);
    s.accept(2);
    assert.deepEqual(allowedSet(s, TINY), [5]);
    s.accept(5);
    s.accept(4);
    const any = allowedSet(s, TINY);
    assert.ok(!any.includes(3) && !any.includes(0) && !any.includes(1));
    assert.ok(any.includes(14) && any.includes(2)); // any non-empty token, even one that is not text
    s.accept(14);
    assert.ok(s.isComplete());
  });

  test('clone is independent; reset starts over', () => {
    const s = new GrammarSampler('root ::= "a" ("b" | "c")', TINY);
    s.accept(2);
    const c = s.clone();
    c.accept(3);
    assert.ok(c.isComplete() && !s.isComplete());
    s.accept(4);
    assert.ok(s.isComplete());
    s.reset();
    assert.deepEqual(allowedSet(s, TINY), [2, 5]);
  });

  test('random generation on the synthetic vocabulary, 20 seeds', () => {
    const g = parseGrammar('root ::= ("a" | "é" | "😀"){3,6} " " [a-c]{1,2}');
    let completed = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const s = new GrammarSampler(g, TINY);
      const r = generate(g, s, TINY, seed, { maxSteps: 40, crossCheckEvery: 1 });
      if (r.completed) {
        completed++;
        assert.ok(completes(g, r.bytes));
        assert.match(r.text, /^(?:a|é|😀){3,6} [a-c]{1,2}$/u);
      }
    }
    assert.equal(completed, 20);
  });
});

// ---- real vocabularies ----

const vocabs = new Map<string, Vocab>();
function vocabOf(name: string): Vocab {
  let v = vocabs.get(name);
  if (!v) {
    setLogCallback(() => {});
    try {
      v = loadVocab(sharedPath(`vocab/ggml-vocab-${name}.gguf`)!);
    } finally {
      setLogCallback(null);
    }
    vocabs.set(name, v);
  }
  return v;
}
function need(name: string): { skip: string | false } {
  const rel = `vocab/ggml-vocab-${name}.gguf`;
  return { skip: sharedPath(rel) ? false : missingShared(rel) };
}

interface Case {
  name: string;
  gbnf: string;
  maxSteps: number;
  closeAfter?: number;
  closers?: string;
  minCompleted: number;
  check?: (text: string) => void;
}

const CASES: Case[] = [
  {
    name: 'JSON object',
    gbnf: JSON_GBNF,
    maxSteps: 120,
    closeAfter: 30,
    closers: '"}]0',
    minCompleted: 16,
    check: (t) => assert.equal(typeof JSON.parse(t), 'object'),
  },
  {
    name: 'JSON array',
    gbnf: JSON_ARRAY_GBNF,
    maxSteps: 120,
    closeAfter: 30,
    closers: '"}]0',
    minCompleted: 16,
    check: (t) => assert.ok(Array.isArray(JSON.parse(t))),
  },
  {
    name: 'bounded words',
    gbnf: 'root ::= "Answer: " ("yes" | "no" | [a-z]{3,8}) ("-" [0-9]{1,3})? "."',
    maxSteps: 40,
    minCompleted: 20,
    check: (t) => assert.match(t, /^Answer: (?:yes|no|[a-z]{3,8})(?:-[0-9]{1,3})?\.$/),
  },
  {
    name: 'Japanese and emoji (characters cut across tokens)',
    gbnf: 'root ::= [ぁ-ゟ一-鿿]{2,10} [😀-🙏]? "。"',
    maxSteps: 60,
    minCompleted: 20,
    check: (t) => assert.match(t, /^[ぁ-ゟ一-鿿]{2,10}[😀-🙏]?。$/u),
  },
  {
    name: 'list with negated class',
    gbnf: 'root ::= ("- " [^\\n\\r]{1,20} "\\n"){1,3}',
    maxSteps: 80,
    minCompleted: 20,
    check: (t) => assert.match(t, /^(?:- [^\n\r]{1,20}\n){1,3}$/u),
  },
];

for (const vocabName of ['llama-spm', 'llama-bpe']) {
  describe(`constrained generation over ${vocabName}`, () => {
    for (const c of CASES) {
      test(`${c.name}: 20 seeds`, need(vocabName), (t) => {
        const vocab = vocabOf(vocabName);
        const g = parseGrammar(c.gbnf);
        const sampler = new GrammarSampler(g, vocab);
        let completed = 0;
        let steps = 0;
        let minAllowed = Number.POSITIVE_INFINITY;
        for (let seed = 1; seed <= 20; seed++) {
          const r = generate(g, sampler, vocab, seed, {
            maxSteps: c.maxSteps,
            closeAfter: c.closeAfter,
            closers: c.closers,
            crossCheckEvery: seed <= 2 ? 7 : 0,
          });
          steps += r.steps;
          minAllowed = Math.min(minAllowed, ...r.allowedCounts);
          if (!r.completed) continue;
          completed++;
          assert.ok(completes(g, r.bytes), `seed ${seed}: completed output does not match`);
          c.check?.(r.text);
        }
        t.diagnostic(`${completed}/20 completed, ${steps} steps checked, fewest allowed at a step: ${minAllowed}`);
        assert.ok(completed >= c.minCompleted, `only ${completed}/20 completed`);
      });
    }
  });
}

describe('token references with a real vocabulary', () => {
  test('<|start_header_id|> resolves by text and is the only token allowed', need('llama-bpe'), () => {
    const vocab = vocabOf('llama-bpe');
    const s = new GrammarSampler('root ::= <|start_header_id|> "user" <|end_header_id|> "\n\n" [a-z]+', vocab);
    const start = vocab.textToToken('<|start_header_id|>');
    assert.deepEqual(allowedSet(s, vocab), [start]);
    s.accept(start);
    for (const id of vocab.encode('user', { addSpecial: false })) s.accept(id);
    assert.deepEqual(allowedSet(s, vocab), [vocab.textToToken('<|end_header_id|>')]);
  });
});

describe('filter speed', () => {
  // every state along a realistic JSON document, each filtered from scratch (no mask cache)
  const doc = JSON.stringify(
    {
      id: 1234,
      name: 'Zoë Ångström',
      tags: ['alpha', 'beta', 'γάμμα', '日本語'],
      nested: { ok: true, ratio: -0.125, list: [1, 2, { deep: null }], note: 'line\nbreak "quoted"' },
      emoji: '😀',
    },
    null,
    2,
  );
  for (const vocabName of ['llama-spm', 'llama-bpe', 'qwen2']) {
    test(`JSON grammar, whole vocabulary, ${vocabName}`, need(vocabName), (t) => {
      const vocab = vocabOf(vocabName);
      let t0 = performance.now();
      const index = TokenIndex.for(vocab);
      const build = performance.now() - t0;
      const m = new GrammarMatcher(parseGrammar(JSON_GBNF));
      const mask = new Uint8Array(vocab.nTokens);
      const times: number[] = [];
      for (const ch of doc) {
        t0 = performance.now();
        allowedTokens(m, index, mask);
        times.push(performance.now() - t0);
        assert.ok(m.acceptString(ch));
      }
      assert.ok(m.isComplete());
      const cold = times[0]!;
      times.sort((a, b) => a - b);
      const median = times[times.length >> 1]!;
      const p90 = times[Math.floor(times.length * 0.9)]!;
      t.diagnostic(
        `${vocab.nTokens} tokens, ${index.nodeCount} trie nodes (index built in ${build.toFixed(0)} ms): ` +
          `median ${median.toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, max ${times[times.length - 1]!.toFixed(2)} ms, first ${cold.toFixed(2)} ms over ${times.length} states`,
      );
      assert.ok(median < 50, `median ${median} ms`);
    });
  }
});
