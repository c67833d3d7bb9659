// Regenerates the reranking references in this folder from two bindings of llama.cpp,
// installed outside the repository: node-llama-cpp 3.21.1 (NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1; its ranking context's `rank`) and
// @fugood/llama.node 1.7.15 (LN_DIR, default /work/oracles/llama-node; its context's
// `rerank`, run in a child process: two llama.cpp builds in one process crash). Needs
// `npm run build` first. For each generated reranker (ensureModel, the shared cache) and
// each (query, document) pair: the tokens each oracle evaluated and the score it returned.
// node-llama-cpp's tokens come from its ranking context's input builder; llama.node's are
// read from its native log (`prompt_tokens = …`).
//   node test/data/rerank/make-refs.mjs   -> rerank.json
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const lnDir = process.env.LN_DIR ?? '/work/oracles/llama-node';
const { ensureModel } = await import(`${root}dist/src/generator/index.js`);

const MODELS = ['tiny-bert-reranker', 'tiny-qwen3-reranker'];
const QUERIES = ['what is a panda?', 'capital of france'];
const DOCUMENTS = [
  'hi',
  'The giant panda is a bear species endemic to China.',
  'paris is the capital of france',
  'pandas eat bamboo',
  'Berlin, Madrid and Rome are capitals too.',
];

if (process.argv[2] === '--llama-node') {
  // child: llama.node's rerank on every query; prints one JSON line
  const require = (await import('node:module')).createRequire(import.meta.url);
  const ln = require(`${lnDir}/node_modules/@fugood/llama.node/lib/index.js`);
  const ctx = await ln.loadModel({
    model: process.argv[3],
    n_ctx: 512,
    n_threads: 1,
    n_gpu_layers: 0,
    embedding: true,
    use_mmap: false,
  });
  const out = [];
  for (const q of QUERIES) {
    const r = await ctx.rerank(q, DOCUMENTS);
    const byIndex = new Map(r.map((x) => [x.index, x.score]));
    for (const [i, d] of DOCUMENTS.entries()) out.push({ query: q, document: d, score: byIndex.get(i) });
  }
  await ctx.release();
  console.log(`LN ${JSON.stringify({ version: ln.BuildInfo ?? null, pairs: out })}`);
  process.exit(0);
}

const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const doc = {
  reference:
    'score: node-llama-cpp 3.21.1 LlamaRankingContext.rank (sigmoid of the head output; Qwen3: the softmax output as is) ' +
    'and @fugood/llama.node 1.7.15 LlamaContext.rerank (the raw head output; its `normalize` option has no effect); ' +
    'tokens: what each evaluated (llama.node 1.7.15 uses neither the rerank prompt nor the BERT pair layout llama-server uses)',
  models: {},
};
for (const preset of MODELS) {
  const path = ensureModel(preset, 'F32');
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: false });
  const rc = await model.createRankingContext({ contextSize: 512, threads: 1 });
  const nlc = [];
  for (const q of QUERIES) {
    for (const d of DOCUMENTS) {
      const tokens = Array.from(
        rc._getEvaluationInput(
          model.tokenize(q, false, 'trimLeadingSpace'),
          model.tokenize(d, false, 'trimLeadingSpace'),
        ),
      );
      nlc.push({ query: q, document: d, tokens, score: +(await rc.rank(q, d)).toFixed(7) });
    }
  }
  await rc.dispose();
  await model.dispose();
  // (its native log prints each evaluated prompt: `prompt_tokens = …`, in order)
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--llama-node', path], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const text = `${child.stdout}\n${child.stderr}`;
  const line = text.split('\n').find((l) => l.startsWith('LN '));
  if (!line) throw new Error(`llama.node failed: ${child.stderr.slice(-500)}`);
  const ln = JSON.parse(line.slice(3));
  const prompts = [...text.matchAll(/prompt_tokens = ([\d ]+)/g)].map((m) => m[1].trim().split(/\s+/).map(Number));
  if (prompts.length !== ln.pairs.length)
    throw new Error(`${prompts.length} prompts logged for ${ln.pairs.length} pairs`);
  ln.pairs.forEach((p, i) => {
    p.tokens = prompts[i];
  });
  doc.models[preset] = {
    sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
    nodeLlamaCpp: nlc,
    llamaNode: ln.pairs.map((p) => ({ ...p, score: +p.score.toFixed(7) })),
  };
  console.log(`${preset}: ${nlc.length} pairs`);
}
writeFileSync(join(here, 'rerank.json'), `${JSON.stringify(doc, null, 1)}\n`);
