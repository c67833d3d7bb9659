// Reranking at the model level, on generated rerankers (a BERT-style one with a cls.*
// classification head, and a Qwen3-Reranker-style one with its yes/no head and rerank
// prompt): pairs laid out as llama-server and node-llama-cpp lay them out, scores within
// 1e-3 of node-llama-cpp 3.21.1's `rank` and of @fugood/llama.node 1.7.15's `rerank` on the
// tokens each evaluated (test/data/rerank, made by make-refs.mjs), identical orderings,
// several pairs in one batch, and clear errors for models that cannot rank.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureModel, QWEN3_RERANK_PROMPT } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, ContextError, Model, rerankScore, rerankTokens } from '../src/model/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const refPath = join(here, '..', '..', 'test', 'data', 'rerank', 'rerank.json');

interface Pair {
  query: string;
  document: string;
  tokens: number[];
  score: number;
}
interface RerankRef {
  models: Record<string, { sha256: string; nodeLlamaCpp: Pair[]; llamaNode: Pair[] }>;
}

const models: Record<string, Model> = {};
before(async () => {
  setLogCallback(() => {});
  for (const p of ['tiny-bert-reranker', 'tiny-qwen3-reranker']) models[p] = await Model.load(ensureModel(p, 'F32'));
});
after(() => {
  for (const m of Object.values(models)) m.free();
});

/** The head's outputs for each token sequence, one decode each. */
async function headOf(m: Model, sequences: number[][]): Promise<Float32Array[]> {
  const ctx = new Context(m, { nCtx: 512, nThreads: 2, embeddings: true });
  try {
    const out: Float32Array[] = [];
    for (const tokens of sequences) {
      ctx.clearMemory();
      await ctx.decode({ tokens });
      out.push(ctx.getEmbeddingsSeq(0));
    }
    return out;
  } finally {
    ctx.free();
  }
}

function order(scores: number[]): number[] {
  return scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a]);
}

function loadRef(t: { skip(msg: string): void }): RerankRef | null {
  if (!existsSync(refPath)) {
    t.skip(`${refPath} missing`);
    return null;
  }
  const ref = JSON.parse(readFileSync(refPath, 'utf8')) as RerankRef;
  for (const [name, r] of Object.entries(ref.models)) {
    const sha = createHash('sha256').update(readFileSync(models[name].path)).digest('hex');
    assert.equal(sha, r.sha256, `${models[name].path} is not the model the references were made on: run make-refs.mjs`);
  }
  return ref;
}

test('a BERT reranker: pairs as node-llama-cpp lays them out, sigmoid scores within 1e-3 of its rank, same order', async (t) => {
  const ref = loadRef(t);
  if (!ref) return;
  const m = models['tiny-bert-reranker'];
  const pairs = ref.models['tiny-bert-reranker'].nodeLlamaCpp;
  const tokens = pairs.map((p) => rerankTokens(m, p.query, p.document));
  // [CLS] query [SEP] document (a WordPiece vocabulary adds BOS and SEP, not EOS)
  pairs.forEach((p, i) => {
    assert.deepEqual(tokens[i], p.tokens, `tokens of (${p.query}, ${p.document})`);
  });
  const heads = await headOf(m, tokens);
  const scores = heads.map((h) => rerankScore(m, h, true));
  let worst = 0;
  pairs.forEach((p, i) => {
    worst = Math.max(worst, Math.abs(scores[i] - p.score));
  });
  assert.ok(worst <= 1e-3, `scores differ by ${worst}`);
  for (let q = 0; q < pairs.length; q += 5) {
    assert.deepEqual(order(scores.slice(q, q + 5)), order(pairs.slice(q, q + 5).map((p) => p.score)));
  }
  // raw scores are the logits the sigmoid was taken of
  assert.ok(Math.abs(rerankScore(m, heads[0], false) - Math.log(scores[0] / (1 - scores[0]))) < 1e-5);
  t.diagnostic(`largest score difference ${worst.toExponential(2)}`);
});

test('a Qwen3 reranker: the rerank prompt with query and document, and the softmaxed yes score', async (t) => {
  const ref = loadRef(t);
  if (!ref) return;
  const m = models['tiny-qwen3-reranker'];
  assert.equal(m.rerankTemplate, QWEN3_RERANK_PROMPT);
  const prompt = QWEN3_RERANK_PROMPT.replace('{query}', 'q?').replace('{document}', 'a doc');
  const want = m.vocab.encode(prompt, { addSpecial: false, parseSpecial: true });
  assert.deepEqual(rerankTokens(m, 'q?', 'a doc'), want);
  assert.equal(want[0], m.vocab.textToToken('<|im_start|>'));
  // node-llama-cpp cuts its prompt around the query and document (so tokens differ at
  // the seams): compare the model on its tokens; a softmaxed head is a probability already
  const pairs = ref.models['tiny-qwen3-reranker'].nodeLlamaCpp;
  const heads = await headOf(
    m,
    pairs.map((p) => p.tokens),
  );
  let worst = 0;
  pairs.forEach((p, i) => {
    assert.equal(heads[i].length, 2);
    assert.ok(Math.abs(heads[i][0] + heads[i][1] - 1) < 1e-5);
    assert.equal(rerankScore(m, heads[i], true), heads[i][0]);
    worst = Math.max(worst, Math.abs(heads[i][0] - p.score));
  });
  assert.ok(worst <= 1e-3, `scores differ by ${worst}`);
  t.diagnostic(`largest score difference ${worst.toExponential(2)}`);
});

test('both rerankers score llama.node 1.7.15 rerank inputs within 1e-3 of its raw scores', async (t) => {
  const ref = loadRef(t);
  if (!ref) return;
  for (const name of ['tiny-bert-reranker', 'tiny-qwen3-reranker']) {
    const m = models[name];
    const pairs = ref.models[name].llamaNode;
    const heads = await headOf(
      m,
      pairs.map((p) => p.tokens),
    );
    let worst = 0;
    pairs.forEach((p, i) => {
      worst = Math.max(worst, Math.abs(rerankScore(m, heads[i], false) - p.score));
    });
    assert.ok(worst <= 1e-3, `${name}: scores differ by ${worst}`);
    t.diagnostic(`${name}: largest difference ${worst.toExponential(2)}`);
  }
});

test('several pairs in one batch score as they do alone', async () => {
  for (const name of ['tiny-bert-reranker', 'tiny-qwen3-reranker']) {
    const m = models[name];
    const all = [
      ['what is a panda?', 'pandas eat bamboo'],
      ['capital of france', 'paris'],
      ['x', 'a longer document about nothing much at all'],
    ].map(([q, d]) => rerankTokens(m, q, d));
    const alone = await headOf(m, all);
    // from 64 query rows attention runs ggml-cpu's tiled kernel instead of the row kernel,
    // as llama.cpp does, and its sums depend on the batch: a batch under 64 rows (BERT's
    // first two pairs) scores each pair bit for bit as alone, a larger one within 1e-3
    for (const n of [2, 3]) {
      const seqs = all.slice(0, n);
      const tol = seqs.flat().length < 64 ? 0 : 1e-3;
      const ctx = new Context(m, {
        nCtx: 1024,
        nBatch: 1024,
        nUbatch: 1024,
        nThreads: 2,
        embeddings: true,
        nSeqMax: 3,
      });
      try {
        await ctx.decode({ tokens: seqs.flat(), seqIds: seqs.flatMap((s, i) => s.map(() => i)) });
        seqs.forEach((_, i) => {
          const got = ctx.getEmbeddingsSeq(i);
          for (let k = 0; k < got.length; k++) {
            assert.ok(
              Math.abs(got[k] - alone[i][k]) <= tol,
              `${name}, ${n} pairs: seq ${i} ${got[k]} vs ${alone[i][k]}`,
            );
          }
        });
      } finally {
        ctx.free();
      }
    }
  }
});

test('models that cannot rank say so', async () => {
  const emb = await Model.load(ensureModel('tiny-bert', 'F32'));
  const gen = await Model.load(ensureModel('tiny-llama', 'F32'));
  try {
    assert.throws(
      () => new Context(emb, { embeddings: true, pooling: 'rank' }),
      (e: Error) => e instanceof ContextError && /has no classification head/.test(e.message),
    );
    assert.throws(() => new Context(gen, { embeddings: true, pooling: 'rank' }), /llama models cannot rank/);
  } finally {
    emb.free();
    gen.free();
  }
});
