// loadModel({ vocab_only: true }) on llama.cpp's vocabulary-only files in ../shared
// (skipped, with a note, when it is absent; vocab_only itself is tested on a generated
// model in api-vocab-only.test.ts): no tensors at all, architectures llama-ts cannot run,
// and llama.cpp's ids for its tokenizer suites' strings.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { loadModel } from '../src/api/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

// llama.cpp's tokenizer suites' files hold a vocabulary and no tensors; mpt, falcon and
// starcoder are architectures llama-ts does not run
describe("vocab_only on llama.cpp's vocabulary-only files", () => {
  for (const name of ['llama-spm', 'mpt', 'falcon', 'starcoder']) {
    const rel = `vocab/ggml-vocab-${name}.gguf`;
    const path = sharedPath(rel);
    test(name, { skip: path ? false : missingShared(rel) }, async () => {
      const ctx = await loadModel({ model: path!, vocab_only: true });
      try {
        const inputs = readFileSync(`${path}.inp`, 'utf8').split('\n__ggml_vocab_test__\n').slice(0, -1);
        const expected = readFileSync(`${path}.out`, 'utf8').split('\n');
        for (const [i, text] of inputs.entries()) {
          const want = expected[i]!.trim() === '' ? [] : expected[i]!.trim().split(/\s+/).map(Number);
          const { tokens } = await ctx.tokenize(text);
          assert.deepEqual(Array.from(tokens), want, `string ${i}: ${JSON.stringify(text)}`);
        }
        assert.equal(ctx.getModelInfo().nParams, 0);
        await assert.rejects(ctx.completion({ prompt: 'x', n_predict: 1 }), /vocab_only/);
      } finally {
        await ctx.release();
      }
    });
  }
});
