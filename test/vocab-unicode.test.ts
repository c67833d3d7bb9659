// Unicode facts the tokenizers use must be those of llama.cpp's tables (Unicode 15.1),
// not the runtime's ICU: codepoints assigned later are unassigned for llama.cpp. WordPiece
// shows it most plainly: a word holding such a combining mark is [UNK] in llama.cpp
// (the mark is kept and nothing matches), where stripping it as an accent gave pieces.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import { loadVocab } from '../src/vocab/index.js';
import { cptFlags, cptNfdFirst, cptToLower, FLAG_ACCENT_MARK, FLAG_LETTER } from '../src/vocab/unicode.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

interface Refs {
  vocab: string;
  strings: string[];
  ids: number[][];
}

function readRefs(name: string): Refs {
  return JSON.parse(readFileSync(`${REPO_ROOT}test/data/vocab/${name}`, 'utf8')) as Refs;
}

describe('Unicode tables as llama.cpp has them', () => {
  test('codepoints assigned after Unicode 15.1 have no category, case or NFD mapping', () => {
    // U+0897 ARABIC PEPET (Mn, 16.0), U+A7CB (Lu, 16.0, lowercase U+0264), U+113C5 (16.0, has an NFD)
    assert.equal(cptFlags(0x0897) & FLAG_ACCENT_MARK, 0);
    assert.equal(cptFlags(0xa7cb) & FLAG_LETTER, 0);
    assert.equal(cptToLower(0xa7cb), 0xa7cb);
    assert.equal(cptNfdFirst(0x113c5), 0x113c5);
    // 15.1 and older stay as they were
    assert.ok(cptFlags(0x0300) & FLAG_ACCENT_MARK);
    assert.ok(cptFlags(0x2ebf0) & FLAG_LETTER); // CJK Extension I (15.1)
    assert.equal(cptToLower(0x0041), 0x61);
    assert.equal(cptNfdFirst(0x00e9), 0x65);
  });

  test('the runtime knows no Unicode newer than the masked versions', () => {
    // ASSIGNED_AFTER_15_1 in src/vocab/unicode.ts lists 16.0 and 17.0; a newer ICU needs its additions there
    const [major] = (process.versions.unicode ?? '0').split('.').map(Number);
    assert.ok(major! <= 17, `runtime Unicode ${process.versions.unicode}: extend ASSIGNED_AFTER_15_1`);
  });

  const rel = 'vocab/ggml-vocab-bert-bge.gguf';
  test('WordPiece: words with marks llama.cpp does not know are [UNK]', {
    skip: sharedPath(rel) ? false : missingShared(rel),
  }, () => {
    const refs = readRefs('wpm-marks.json');
    setLogCallback(() => {});
    const v = loadVocab(sharedPath(rel)!);
    setLogCallback(null);
    refs.strings.forEach((s, i) => {
      assert.deepEqual(v.encode(s, { addSpecial: false }), refs.ids[i], `string ${i}: ${JSON.stringify(s)}`);
    });
  });
});
