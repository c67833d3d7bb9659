// llama.cpp's tokenizer suites (../shared/vocab): every string must encode to exactly
// the ids llama.cpp produced (no BOS/EOS, special tokens not parsed) and decode back to
// exactly llama.cpp's detokenization.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import { loadVocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

export const SUITES = [
  'llama-spm',
  'llama-bpe',
  'qwen2',
  'gpt-2',
  'bert-bge',
  'phi-3',
  'starcoder',
  'deepseek-coder',
  'deepseek-llm',
  'falcon',
  'mpt',
  'refact',
];

export interface Suite {
  inputs: string[];
  expected: number[][];
  detok: string[];
}

export function readSuite(gguf: string): Suite {
  const inputs = readFileSync(`${gguf}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  inputs.pop(); // every string is followed by the separator
  const lines = readFileSync(`${gguf}.out`, 'utf8').split('\n');
  const expected = inputs.map((_, i) =>
    (lines[i] ?? '')
      .trim()
      .split(/\s+/)
      .filter((s) => s !== '')
      .map(Number),
  );
  const detok = JSON.parse(readFileSync(`${gguf}.detok.json`, 'utf8')) as string[];
  return { inputs, expected, detok };
}

describe('tokenizer suites', () => {
  for (const name of SUITES) {
    const rel = `vocab/ggml-vocab-${name}.gguf`;
    const path = sharedPath(rel);
    test(name, { skip: path ? false : missingShared(rel) }, () => {
      setLogCallback(() => {}); // llama.cpp's load-time warnings (control-looking tokens, ...)
      const vocab = loadVocab(path!);
      setLogCallback(null);
      const suite = readSuite(path!);
      assert.equal(suite.inputs.length, suite.expected.length);
      assert.equal(suite.inputs.length, suite.detok.length);
      const encFail: string[] = [];
      const decFail: string[] = [];
      suite.inputs.forEach((text, i) => {
        const ids = vocab.encode(text, { addSpecial: false, parseSpecial: false });
        if (JSON.stringify(ids) !== JSON.stringify(suite.expected[i])) {
          encFail.push(
            `#${i} ${JSON.stringify(text)}\n  got      ${ids.join(' ')}\n  expected ${suite.expected[i]!.join(' ')}`,
          );
        }
        const back = vocab.decode(suite.expected[i]!);
        if (back !== suite.detok[i])
          decFail.push(`#${i} got ${JSON.stringify(back)} expected ${JSON.stringify(suite.detok[i])}`);
      });
      assert.deepEqual(encFail, [], `${name}: ${encFail.length}/${suite.inputs.length} encodings differ`);
      assert.deepEqual(decFail, [], `${name}: ${decFail.length}/${suite.inputs.length} decodings differ`);
    });
  }
});
