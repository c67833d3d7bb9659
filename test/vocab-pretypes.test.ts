// Every pre-tokenizer name llama.cpp knows and the Unigram vocabulary type, against
// llama.cpp's own output (node-llama-cpp 3.21.1, test/data/vocab/make-refs.mjs):
// - each pre-tokenizer name added for issue 23 on the Qwen2 vocabulary with only
//   `tokenizer.ggml.pre` changed (and the SPM-style ones also on an SPM-style BPE
//   vocabulary derived from the LLaMA one), over the suites' strings and edge strings
//   of our own: ids identical;
// - a generated Unigram vocabulary with a precompiled charsmap, in three flag settings;
// - the scanners that stand in for std::regex patterns cut text exactly as the regex
//   engine does, on random text;
// - an unknown name's error lists the known ones and says how to force the default.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { openGGUF, parseGGUF } from '../src/gguf/index.js';
import { GGUFWriter } from '../src/gguf/writer.js';
import { setLogCallback } from '../src/log.js';
import { Vocab, VocabError } from '../src/vocab/index.js';
import { PreTokenizer } from '../src/vocab/pretokenize.js';
import { PRE_TOKENIZER_NAMES, preTypeSpec } from '../src/vocab/pretypes.js';
import { scannerFor } from '../src/vocab/scanners.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';
import { spmStyleBpe, ugmVocab, withString } from './helpers/vocab-variants.js';

interface PreRefs {
  suite: string;
  edge: string[];
  cases: { pre: string; vocab: string; suite: (string | null)[]; edge: (string | null)[] }[];
}

interface UgmRefs {
  strings: string[];
  cases: {
    vocab: string;
    options: { addSpacePrefix?: boolean; removeExtraWhitespaces?: boolean };
    ids: string[];
    parseSpecial: string[];
  }[];
}

function readRefs<T>(name: string): T {
  return JSON.parse(readFileSync(`${REPO_ROOT}test/data/vocab/${name}`, 'utf8')) as T;
}

function quiet<T>(fn: () => T): T {
  setLogCallback(() => {});
  try {
    return fn();
  } finally {
    setLogCallback(null);
  }
}

const toIds = (s: string): number[] => (s === '' ? [] : s.split(' ').map(Number));

function suiteStrings(name: string): string[] {
  const parts = readFileSync(sharedPath(`vocab/ggml-vocab-${name}.gguf.inp`)!, 'utf8').split('\n__ggml_vocab_test__\n');
  parts.pop();
  return parts;
}

/**
 * Compare every string; report the first few mismatches with their text. A null
 * reference marks an input llama.cpp aborts on (make-refs.mjs: abortsInLlamaCpp): there
 * llama-ts must only not fail.
 */
function compare(v: Vocab, strings: string[], expected: (string | null)[], what: string, parseSpecial = false): number {
  const bad: string[] = [];
  strings.forEach((s, i) => {
    const got = v.encode(s, { addSpecial: false, parseSpecial });
    if (expected[i] === null) return;
    const want = toIds(expected[i]!);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      bad.push(`${what} #${i} ${JSON.stringify(s).slice(0, 80)}\n  want ${want.join(' ')}\n  got  ${got.join(' ')}`);
    }
  });
  assert.equal(bad.length, 0, `${bad.length} of ${strings.length} differ:\n${bad.slice(0, 5).join('\n')}`);
  return strings.length;
}

const qwen2 = 'vocab/ggml-vocab-qwen2.gguf';
const llamaSpm = 'vocab/ggml-vocab-llama-spm.gguf';
const haveShared = sharedPath(qwen2) && sharedPath(llamaSpm) && sharedPath(`${qwen2}.inp`);

describe('pre-tokenizer types against llama.cpp', { skip: haveShared ? false : missingShared(qwen2) }, () => {
  const refs = readRefs<PreRefs>('pre-types.json');
  const base = haveShared ? openGGUF(sharedPath(qwen2)!) : null;
  const spm = haveShared ? openGGUF(sharedPath(llamaSpm)!) : null;
  const suite = haveShared ? suiteStrings(refs.suite) : [];

  for (const c of refs.cases) {
    const aborts = [...c.suite, ...c.edge].filter((x) => x === null).length;
    const note = aborts > 0 ? ` (${aborts} on which llama.cpp aborts: only run)` : '';
    test(`${c.pre} on ${c.vocab}: ${c.suite.length + c.edge.length} strings${note}`, () => {
      let v: Vocab;
      if (c.vocab === 'qwen2') v = quiet(() => Vocab.fromGGUF(withString(base!, 'tokenizer.ggml.pre', c.pre)));
      else {
        const gemma4 = c.vocab.includes('model gemma4');
        v = quiet(() => Vocab.fromGGUF(parseGGUF(spmStyleBpe(spm!, c.pre, gemma4).toBytes())));
      }
      assert.equal(v.pre, c.pre);
      compare(v, suite, c.suite, 'suite');
      compare(v, refs.edge, c.edge, 'edge');
    });
  }

  test('every name llama.cpp added for issue 23 has references', () => {
    const covered = new Set(refs.cases.map((c) => c.pre));
    for (const name of [
      'afmoe',
      'bailingmoe',
      'bailingmoe2',
      'cohere2moe',
      'deepseek-v3',
      'exaone-moe',
      'gemma4',
      'granite-embed-multi-311m',
      'granite-embed-multi-97m',
      'hunyuan-dense',
      'jais-2',
      'jina-v5-nano',
      'joyai-llm',
      'kanana2',
      'kimi-k2',
      'laguna',
      'llada-moe',
      'minicpm5',
      'qwen35',
      'sarvam-moe',
      'superbpe',
      'talkie',
      'tiny_aya',
      'whitespace',
      'youtu',
    ]) {
      assert.ok(PRE_TOKENIZER_NAMES.includes(name), `${name} is known`);
      assert.ok(covered.has(name), `${name} has references`);
    }
  });
});

describe('Unigram (UGM) against llama.cpp', () => {
  const refs = readRefs<UgmRefs>('ugm.json');
  for (const c of refs.cases) {
    test(`generated unigram vocabulary, ${c.vocab}: ${refs.strings.length} strings, plain and with special tokens`, () => {
      const v = quiet(() => Vocab.fromGGUF(parseGGUF(ugmVocab(c.options).toBytes())));
      assert.equal(v.type, 'ugm');
      compare(v, refs.strings, c.ids, 'plain');
      compare(v, refs.strings, c.parseSpecial, 'parseSpecial', true);
    });
  }

  test('UGM adds EOS, not BOS, and decodes "▁" to spaces', () => {
    const v = quiet(() => Vocab.fromGGUF(parseGGUF(ugmVocab().toBytes())));
    const ids = v.encode('Hello world');
    assert.equal(ids.at(-1), v.eos);
    assert.notEqual(ids[0], v.bos);
    assert.equal(v.decode(ids, { removeSpecial: true }), 'Hello world');
  });

  test('a damaged charsmap is a VocabError naming the key', () => {
    const w = ugmVocab();
    const bad = new Uint8Array([200, 0, 0, 0, 1, 2, 3]);
    w.setArray('tokenizer.ggml.precompiled_charsmap', 1 /* INT8 */, new Int8Array(bad.buffer));
    assert.throws(
      () => quiet(() => Vocab.fromGGUF(parseGGUF(w.toBytes()))),
      (e: unknown) => e instanceof VocabError && /precompiled_charsmap/.test((e as Error).message),
    );
  });
});

describe('decoding the new vocabulary kinds as llama.cpp does', {
  skip: haveShared ? false : missingShared(llamaSpm),
}, () => {
  const refs = readRefs<{ cases: { vocab: string; tokens: string[]; text: string[] }[] }>('detok.json');
  for (const c of refs.cases) {
    test(c.vocab, () => {
      const [kind, name] = c.vocab.split(' ');
      const w =
        kind === 'ugm'
          ? ugmVocab(name === 'default' ? {} : { addSpacePrefix: false, removeExtraWhitespaces: false })
          : spmStyleBpe(openGGUF(sharedPath(llamaSpm)!), name!);
      const v = quiet(() => Vocab.fromGGUF(parseGGUF(w.toBytes())));
      c.tokens.forEach((t, i) => {
        assert.equal(v.decode(toIds(t)), c.text[i], `#${i} ${t}`);
      });
    });
  }
});

describe('stand-in scanners cut text as their regexes do', () => {
  // random text over characters that matter to the patterns
  const alphabet = [
    ...'aZ09 \t\n\r\'"~!.,-_$+<>/\\#@[](){}',
    'é',
    'ß',
    'Ω',
    'ж',
    '世',
    'カ',
    'ｶ',
    '한',
    'ㄱ',
    '٣',
    '²',
    '½',
    '\u0301',
    '\u0903',
    '\u00a0',
    '\u3000',
    '\u2028',
    '…',
    '“',
    '—',
    '😀',
    '\u0378',
    '\u200b',
    'ǅ',
    '∑',
    '€',
    'µ',
    'Ａ',
    '！',
    '‘',
    '가',
    'ࠀ',
    '一',
    '\u0085',
  ];
  function rng(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const r = rng(42);
  const texts: Uint32Array[] = [];
  for (let i = 0; i < 400; i++) {
    const n = 1 + Math.floor(r() * 40);
    let s = '';
    for (let j = 0; j < n; j++) {
      const k = Math.floor(r() * alphabet.length);
      // runs, so that repeats and long groups occur
      s += alphabet[k]!.repeat(r() < 0.2 ? 1 + Math.floor(r() * 6) : 1);
    }
    texts.push(Uint32Array.from([...s].map((c) => c.codePointAt(0)!)));
  }
  const names = PRE_TOKENIZER_NAMES.filter((n) =>
    preTypeSpec(n)!.regexes.some((re) => scannerFor(re)?.native === false),
  );
  for (const name of names) {
    test(`${name}`, () => {
      const regexes = preTypeSpec(name)!.regexes;
      const fast = new PreTokenizer(regexes);
      const slow = new PreTokenizer(regexes, { regexOnly: true });
      for (const t of texts) assert.deepEqual(fast.split(t), slow.split(t), String.fromCodePoint(...t));
    });
  }
});

describe('loading rules of the new names', () => {
  function tiny(model: string, pre: string | null, merges: boolean): GGUFWriter {
    const w = new GGUFWriter();
    w.setString('tokenizer.ggml.model', model);
    if (pre !== null) w.setString('tokenizer.ggml.pre', pre);
    w.setStringArray('tokenizer.ggml.tokens', ['a', 'b', 'ab', '<s>', '</s>']);
    w.setArray('tokenizer.ggml.token_type', 5 /* INT32 */, new Int32Array([1, 1, 1, 3, 3]));
    w.setU32('tokenizer.ggml.bos_token_id', 3);
    w.setU32('tokenizer.ggml.eos_token_id', 4);
    if (merges) w.setStringArray('tokenizer.ggml.merges', ['a b']);
    return w;
  }

  test('kimi-k2 needs no merges; other BPE vocabularies do', () => {
    const v = quiet(() => Vocab.fromGGUF(parseGGUF(tiny('gpt2', 'kimi-k2', false).toBytes())));
    assert.deepEqual(v.encode('abab', { addSpecial: false }), [0, 1, 0, 1]);
    assert.throws(
      () => quiet(() => Vocab.fromGGUF(parseGGUF(tiny('gpt2', 'qwen35', false).toBytes()))),
      /without merges \(tokenizer\.ggml\.merges\)/,
    );
  });

  test("model 'gemma4' is SPM-style BPE under the gemma4 pre-tokenizer, BOS forced on", () => {
    const w = tiny('gemma4', null, true);
    w.setBool('tokenizer.ggml.add_bos_token', false);
    const v = quiet(() => Vocab.fromGGUF(parseGGUF(w.toBytes())));
    assert.equal(v.pre, 'gemma4');
    assert.equal(v.addBos, true);
    assert.deepEqual(v.encode('abab'), [3, 2, 2]);
  });
});

describe('unknown pre-tokenizer names', () => {
  test('the error lists the known names and how to force the default', () => {
    const w = new GGUFWriter();
    w.setString('tokenizer.ggml.model', 'gpt2');
    w.setString('tokenizer.ggml.pre', 'no-such-pre');
    w.setStringArray('tokenizer.ggml.tokens', ['a', 'b', 'ab']);
    w.setStringArray('tokenizer.ggml.merges', ['a b']);
    const f = parseGGUF(w.toBytes());
    assert.throws(
      () => quiet(() => Vocab.fromGGUF(f)),
      (e: unknown) => {
        const m = (e as Error).message;
        assert.ok(e instanceof VocabError);
        assert.match(m, /unknown pre-tokenizer type 'no-such-pre'/);
        assert.match(m, /qwen35/);
        assert.match(m, /forceDefaultPre/);
        assert.match(m, /--force-default-pre/);
        return true;
      },
    );
    const v = quiet(() => Vocab.fromGGUF(f, { forceDefaultPre: true }));
    assert.equal(v.pre, 'default');
    assert.deepEqual(v.encode('abab', { addSpecial: false }), [2, 2]);
  });
});
