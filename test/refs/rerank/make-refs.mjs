// Reranking references from llama.cpp for the generated BERT reranker (F32 and Q8_0), through
// node-llama-cpp 3.21.1's ranking context (NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1; CPU, flash attention as its default
// "auto" resolves on CPU: on): for every (query, document) pair, the tokens it evaluated
// ([CLS] query [SEP] document, from its input builder) and `rank`'s score (the sigmoid of
// the head's output). Queries and documents include long documents (up to the model's 128
// positions), unicode and an empty document. Models come from the generator (ensureModel,
// the shared cache); models.json holds their SHA-256. Run after `npm run build`:
//   node test/refs/rerank/make-refs.mjs [OUT_DIR]   -> models.json, pairs.json, tiny-bert-reranker-{F32,Q8_0}.ref.json
// OUT_DIR (default: here) lets another llama.cpp build answer elsewhere (bench/llama-cpp-builds.mjs).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const outDir = process.argv[2] ?? here;
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const { ensureModel } = await import(`${root}dist/src/generator/index.js`);
const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);

const PRESET = 'tiny-bert-reranker';
const FILE_TYPES = ['F32', 'Q8_0'];
const N_CTX = 128; // the preset's training context: position embeddings for 128 tokens

const WORDS =
  'the giant panda is a bear species endemic to china it eats bamboo paris capital of france magnets attract iron river mountain'.split(
    ' ',
  );
/** A seeded document of n words (the strings are committed in pairs.json). */
function longDoc(seed, n) {
  let s = seed;
  const words = [];
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    words.push(WORDS[s % WORDS.length]);
  }
  return words.join(' ');
}

const QUERIES = [
  'what is a panda?',
  'capital of france',
  'x',
  'how do magnets work',
  'PANDA',
  'Où est la gare? 東京 😀',
  'a b c d e f g h i j k l m n o p q r s t u v w x y z',
  'Does the giant panda eat bamboo, and where does it live?',
];
const DOCUMENTS = [
  '',
  'hi',
  'The giant panda is a bear species endemic to China.',
  'paris is the capital of france',
  'pandas eat bamboo',
  'Berlin, Madrid and Rome are capitals too.',
  'naïve café résumé — Ελληνικά हिन्दी العَرَبِيَّة',
  '!!! ??? ... ---',
  longDoc(1, 10),
  longDoc(2, 18),
  longDoc(3, 26),
  longDoc(4, 30),
];

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const manifest = {};
const pairs = [];
for (const q of QUERIES) for (const d of DOCUMENTS) pairs.push({ query: q, document: d });
let kept = null;
for (const ft of FILE_TYPES) {
  const path = ensureModel(PRESET, ft);
  manifest[`${PRESET}-${ft}`] = { sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: false });
  const rc = await model.createRankingContext({ contextSize: N_CTX, threads: 1 });
  const out = [];
  for (const p of pairs) {
    const tokens = Array.from(
      rc._getEvaluationInput(
        model.tokenize(p.query, false, 'trimLeadingSpace'),
        model.tokenize(p.document, false, 'trimLeadingSpace'),
      ),
    );
    if (tokens.length >= N_CTX) continue; // node-llama-cpp ranks inputs shorter than its context
    out.push({
      query: p.query,
      document: p.document,
      tokens,
      score: +(await rc.rank(p.query, p.document)).toPrecision(9),
    });
  }
  await rc.dispose();
  await model.dispose();
  kept ??= out.map((c) => ({ query: c.query, document: c.document }));
  const ref = {
    model: `${PRESET}-${ft}`,
    oracle: 'node-llama-cpp 3.21.1 LlamaRankingContext.rank (sigmoid of the classification head output), CPU, 1 thread',
    nCtx: N_CTX,
    cases: out.map((c) => ({ tokens: c.tokens, score: c.score })),
  };
  writeJson(`${PRESET}-${ft}.ref.json`, ref);
  console.error(`${PRESET}-${ft}: ${out.length} pairs`);
}
writeJson('pairs.json', kept);
writeJson('models.json', manifest);

function writeJson(name, data) {
  const path = join(outDir, name);
  writeFileSync(path, `${JSON.stringify(data, null, 1)}\n`);
  // the committed files in Biome's layout; other folders are read by scripts only
  if (outDir === here) execFileSync('npx', ['biome', 'format', '--write', path], { cwd: root, stdio: 'ignore' });
}
