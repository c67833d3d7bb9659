// The generated BERT reranker against llama.cpp on 96 (query, document) pairs: long
// documents (up to 123 tokens, so both of ggml-cpu's attention kernels), unicode, an empty
// document (test/refs/rerank, made by make-refs.mjs with node-llama-cpp 3.21.1's ranking
// context). Each pair is laid out as llama.cpp lays it out ([CLS] query [SEP] document) and
// scored alone; the score is the sigmoid of the head's output, as node-llama-cpp's `rank`.
// F32: within 3e-4 of llama.cpp's on every pair (two llama.cpp builds agree to about that).
// Q8_0: the weights' products quantize their inputs to 8 bits, so an input an ulp away from
// llama.cpp's can round to the next step and move a score by 1e-3. Two thirds of the pairs
// score within 1e-6 of llama.cpp's; the others are held to 3e-3 (measured: 2.4e-3).

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model, rerankScore, rerankTokens } from '../src/model/index.js';
import { REPO_ROOT } from './helpers/shared.js';

const REFS = join(REPO_ROOT, 'test', 'refs', 'rerank');
const PRESET = 'tiny-bert-reranker';

interface Ref {
  nCtx: number;
  cases: { tokens: number[]; score: number }[];
}

const read = <T>(name: string): T => JSON.parse(readFileSync(join(REFS, name), 'utf8')) as T;
const manifest = read<Record<string, { sha256: string }>>('models.json');
const pairs = read<{ query: string; document: string }[]>('pairs.json');

const loaded: Model[] = [];
after(() => {
  for (const m of loaded) m.free();
});

/** |score - llama.cpp's| of each pair, each decoded alone. */
async function differences(fileType: 'F32' | 'Q8_0'): Promise<number[]> {
  setLogCallback(() => {});
  const path = ensureModel(PRESET, fileType);
  const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
  assert.equal(
    sha,
    manifest[`${PRESET}-${fileType}`]?.sha256,
    `${path}: the generator now writes other bytes; rerun make-refs.mjs`,
  );
  const m = await Model.load(path);
  loaded.push(m);
  const ref = read<Ref>(`${PRESET}-${fileType}.ref.json`);
  assert.equal(ref.cases.length, pairs.length);
  const ctx = new Context(m, { nCtx: ref.nCtx, nThreads: 2, embeddings: true });
  const diffs: number[] = [];
  try {
    for (const [i, p] of pairs.entries()) {
      const tokens = rerankTokens(m, p.query, p.document);
      assert.deepEqual(tokens, ref.cases[i]!.tokens, `tokens of ${JSON.stringify(p)}`);
      ctx.clearMemory();
      await ctx.decode({ tokens });
      const score = rerankScore(m, ctx.getEmbeddingsSeq(0), true);
      diffs.push(Math.abs(score - ref.cases[i]!.score));
    }
  } finally {
    ctx.free();
  }
  return diffs;
}

test('BERT reranker, F32: 96 pairs within 3e-4 of llama.cpp', async (t) => {
  const worst = Math.max(...(await differences('F32')));
  t.diagnostic(`largest score difference ${worst.toExponential(2)}`);
  assert.ok(worst <= 3e-4, `scores differ by up to ${worst}`);
});

test('BERT reranker, Q8_0: 2/3 of 96 pairs within 1e-6 of llama.cpp, all within 3e-3', async (t) => {
  const diffs = await differences('Q8_0');
  const worst = Math.max(...diffs);
  const exact = diffs.filter((d) => d <= 1e-6).length;
  t.diagnostic(`largest score difference ${worst.toExponential(2)}; ${exact} pairs within 1e-6`);
  assert.ok(exact >= 64, `only ${exact} pairs within 1e-6`);
  assert.ok(worst <= 3e-3, `scores differ by up to ${worst}`);
});
