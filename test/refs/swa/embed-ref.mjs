// Embedding references from node-llama-cpp 3.21.1's llama.cpp for an embedding GGUF:
// per text, the tokens llama.cpp evaluates (BOS/EOS as its embedding context adds them) and
// the pooled embedding (the model's pooling, after any dense output layers), raw.
// usage: node embed-ref.mjs MODEL.gguf TEXTS.json OUT.json [--ctx N]
// NLC_DIR: where node-llama-cpp 3.21.1 is installed (default ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1).
import fs from 'node:fs';

const NLC =
  (process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`) +
  '/node_modules/node-llama-cpp/dist';
const { getLlama, LlamaLogLevel } = await import(`${NLC}/index.js`);
const { tokenizeInput } = await import(`${NLC}/utils/tokenizeInput.js`);
const args = process.argv.slice(2);
const [modelPath, textsFile, outFile] = args;
const ctxArg = args.find((_a, i) => args[i - 1] === '--ctx');
const CTX = Number(ctxArg ?? 256);
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: false });
const ctx = await model.createEmbeddingContext({ contextSize: CTX, threads: 1 });
const out = { model: modelPath.split('/').pop(), reference: '', cases: [] };
for (const text of texts) {
  const tokens = tokenizeInput(text, model.tokenizer, undefined, true);
  ctx._prepareInput(tokens);
  const e = await ctx.getEmbeddingFor(text);
  out.cases.push({ prompt: text, tokens: Array.from(tokens), embedding: e.vector.map((x) => +x.toPrecision(7)) });
}
const rel = llama.llamaCppRelease;
out.reference =
  `llama.cpp via node-llama-cpp 3.21.1 (bundled llama.cpp ${rel.repo}@${rel.release}, CPU, 1 thread): ` +
  'createEmbeddingContext({ contextSize: ' +
  CTX +
  ' }).getEmbeddingFor(text).vector (pooled as the model says, after its dense layers, not normalised); ' +
  'tokens: the text tokenized as that context does (BOS/EOS added as llama.cpp adds them).';
await ctx.dispose();
fs.writeFileSync(outFile, `${JSON.stringify(out, null, 1)}\n`);
console.log(JSON.stringify({ model: out.model, n: out.cases.length, dim: out.cases[0]?.embedding.length }));
process.exit(0);
