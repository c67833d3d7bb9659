// WordPiece (bert-bge) against llama.cpp across scripts: Devanagari, Bengali, Thai, Arabic
// with harakat, Hebrew with niqqud, Vietnamese, Latin, Greek and Cyrillic with combining
// accents in NFC and NFD, CJK, emoji, mixed strings, and 420 seeded random strings mixing
// scripts, marks, controls and normalization forms (test/refs/wpm, made by make-refs.mjs
// with node-llama-cpp 3.21.1). llama.cpp's rule, which these pin down: with strip_accents,
// each codepoint becomes the first codepoint of its NFD form and every mark (Mn, Mc and Me
// alike: Devanagari's spacing vowel signs too, unlike HF's BertNormalizer, which drops only
// Mn) is dropped; whitespace splits, punctuation, ASCII symbols and CJK ideographs stand
// alone; no word-length limit; a word with any piece not in the vocabulary is one [UNK].
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import { loadVocab, type Vocab } from '../src/vocab/index.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

interface ScriptCase {
  script: string;
  text: string;
  ids: number[];
  idsParseSpecial?: number[];
}

function readRef<T>(name: string): T {
  return JSON.parse(readFileSync(`${REPO_ROOT}test/refs/wpm/${name}`, 'utf8')) as T;
}

const rel = 'vocab/ggml-vocab-bert-bge.gguf';
const skip = sharedPath(rel) ? false : missingShared(rel);

function vocab(): Vocab {
  setLogCallback(() => {});
  try {
    return loadVocab(sharedPath(rel)!);
  } finally {
    setLogCallback(null);
  }
}

function check(v: Vocab, text: string, want: number[], parseSpecial: boolean, what: string): void {
  assert.deepEqual(v.encode(text, { addSpecial: false, parseSpecial }), want, `${what}: ${JSON.stringify(text)}`);
}

describe('WordPiece across scripts as llama.cpp tokenizes them', { skip }, () => {
  test('Devanagari: vowel signs (Mc) and virama are dropped; a word with a missing piece is one [UNK]', () => {
    const v = vocab();
    const unk = v.unk;
    // हिन्दी → ह न द (three pieces); पाठ → प ठ, and ठ has no token: the whole word is [UNK]
    const ids = v.encode('हिन्दी पाठ परीक्षण', { addSpecial: false });
    assert.deepEqual(
      ids.map((id) => (id === unk ? '[UNK]' : v.tokenText(id))),
      ['▁ह', 'न', 'द', '[UNK]', '▁प', 'र', 'क', 'ष', 'ण'],
    );
  });

  const { cases } = readRef<{ cases: ScriptCase[] }>('scripts.json');
  const scripts = [...new Set(cases.map((c) => c.script))];
  for (const script of scripts) {
    test(`${script}: ids as llama.cpp's`, () => {
      const v = vocab();
      for (const c of cases.filter((x) => x.script === script)) {
        check(v, c.text, c.ids, false, script);
        if (c.idsParseSpecial) check(v, c.text, c.idsParseSpecial, true, `${script}, special tokens parsed`);
      }
    });
  }

  test('420 seeded random strings mixing scripts, marks and normalization forms', () => {
    const v = vocab();
    const fuzz = readRef<{ strings: string[]; ids: number[][]; idsParseSpecial: (number[] | null)[] }>('fuzz.json');
    assert.equal(fuzz.strings.length, 420);
    fuzz.strings.forEach((s, i) => {
      check(v, s, fuzz.ids[i]!, false, `fuzz ${i}`);
      const special = fuzz.idsParseSpecial[i];
      if (special) check(v, s, special, true, `fuzz ${i}, special tokens parsed`);
    });
  });
});
