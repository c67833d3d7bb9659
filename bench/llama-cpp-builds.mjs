// How far apart two llama.cpp CPU builds answer on the files our references come from, to
// judge the tolerances of the reference tests: node-llama-cpp 3.21.1 ships several builds of
// ggml-cpu (zen4, skylakex, icelake, alderlake, haswell, sandybridge, sse42, x64, ...) and
// its loader picks the best one the CPU runs. This copies the install (NLC_DIR) into a
// temporary folder keeping only one variant (haswell: AVX2 with FMA by default), checks
// from /proc/self/maps which libggml-cpu each install loads, reruns ../shared/tools/ref.mjs
// (top-10 log-probabilities, node-llama-cpp's own flash-attention choice) and the reranker's
// make-refs.mjs with both, and prints, per file, the largest |Δ| between the two builds and
// between llama-ts and each, measured as the tests do: top-10 logits relative to the
// reference's top-1 (test/helpers/arch-refs.ts), max |Δ score| for the reranker. Run after
// `npm run build`, with ../shared present:
//   node bench/llama-cpp-builds.mjs [--variant haswell[,sse42,...]] [--json]
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { refDelta, reference } from './llama-cpp-refs.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const shared = join(root, '../shared');
const args = process.argv.slice(2);
const vi = args.indexOf('--variant');
const variants = (vi >= 0 ? args[vi + 1] : 'haswell').split(',');
const json = args.includes('--json');
const nlcDefault = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const refTool = join(shared, 'tools/ref.mjs');

const { generateModel, ensureModel } = await import(join(root, 'dist/src/generator/index.js'));
const { Model, Context, rerankScore, rerankTokens } = await import(join(root, 'dist/src/model/index.js'));
const { setLogCallback } = await import(join(root, 'dist/src/log.js'));
const { checkRefCase } = await import(join(root, 'dist/test/helpers/arch-refs.js'));
const { Q8_REF_MODELS } = await import(join(root, 'dist/test/helpers/q8-ref-models.js'));

const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-builds-'));
const log = (s) => process.stderr.write(`${s}\n`);

/** A copy of the node-llama-cpp install whose only ggml-cpu build is `libggml-cpu-<v>.so`. */
function variantCopy(v) {
  const dir = join(tmp, `nlc-${v}`);
  cpSync(nlcDefault, dir, { recursive: true, verbatimSymlinks: true });
  const bins = join(dir, 'node_modules/@node-llama-cpp/linux-x64/bins/linux-x64');
  const off = join(bins, '../disabled-variants');
  mkdirSync(off);
  const all = readdirSync(bins).filter((f) => /^libggml-cpu-.*\.so$/.test(f));
  if (!all.includes(`libggml-cpu-${v}.so`)) throw new Error(`${bins}: no libggml-cpu-${v}.so (has ${all.join(', ')})`);
  for (const f of all) if (f !== `libggml-cpu-${v}.so`) renameSync(join(bins, f), join(off, f));
  return dir;
}

/** The libggml-cpu an install maps once it has loaded a model (a child process each). */
function loadedVariant(nlc, model) {
  const script = `
    const { getLlama, LlamaLogLevel } = await import(${JSON.stringify(`${nlc}/node_modules/node-llama-cpp/dist/index.js`)});
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
    await llama.loadModel({ modelPath: ${JSON.stringify(model)}, gpuLayers: 0, useMmap: false });
    const fs = await import('node:fs');
    const libs = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.split(/\\s+/).pop()).filter((p) => /libggml-cpu/.test(p));
    console.log([...new Set(libs)].join(' '));
    process.exit(0);`;
  // a file, not -e: node-llama-cpp tests its binding in a child given this process's argv
  const file = join(tmp, 'loaded-variant.mjs');
  writeFileSync(file, script);
  return execFileSync(process.execPath, [file], { encoding: 'utf8' }).trim();
}

/** Largest |Δ| of llama-ts's top-10 logits relative to the reference's top-1 (the tests' figure). */
async function oursDelta(model, cases) {
  let worst = 0;
  for (const c of cases) worst = Math.max(worst, (await checkRefCase(model, c, Infinity, c.prompt)).maxDelta);
  return worst;
}

// the default install first, then one copy per variant, each named by the build it loads
const probe = join(shared, 'fixtures/archs/gemma2-Q8_0.gguf');
const installs = [nlcDefault, ...variants.map(variantCopy)].map((dir) => {
  const lib = loadedVariant(dir, probe);
  log(`${dir} loads ${lib}`);
  return { dir, lib, name: lib.match(/libggml-cpu-([^/]+)\.so/)?.[1] ?? lib };
});
const [A, ...Bs] = installs;

// the logits references: the shared fixtures and the generated q8 models over test/refs/q8's
// 44 prompts, and the rand-* fixtures over their own references' prompts
const q8Prompts = join(root, 'test/refs/q8/prompts.json');
const files = [];
for (const stem of ['deepseek2-Q8_0', 'deepseek2-F32', 'gemma2-Q8_0', 'gemma2-F32'])
  files.push({ name: `fixture ${stem}`, path: join(shared, `fixtures/archs/${stem}.gguf`), prompts: q8Prompts });
for (const m of Q8_REF_MODELS) {
  const path = join(tmp, `${m.name}.gguf`);
  generateModel(m.spec, path);
  files.push({ name: `generated ${m.name}`, path, prompts: q8Prompts });
}
for (const stem of ['rand-llama-Q8_0', 'rand-qwen2-Q8_0', 'rand-qwen3-Q8_0', 'rand-llama-F32']) {
  const prompts = join(tmp, `${stem}.prompts.json`);
  const own = JSON.parse(readFileSync(join(shared, `fixtures/${stem}.ref.json`), 'utf8'));
  writeFileSync(prompts, JSON.stringify(own.cases.map((c) => c.prompt)));
  files.push({ name: `fixture ${stem}`, path: join(shared, `fixtures/${stem}.gguf`), prompts });
}

const rows = [];
setLogCallback(() => {});
for (const f of files) {
  const base = f.name.replace(/\W+/g, '_');
  const refs = installs.map((i) =>
    reference(refTool, f.path, f.prompts, join(tmp, `${base}.${i.name}.json`), { NLC_DIR: i.dir }),
  );
  const model = await Model.load(f.path);
  try {
    const row = { file: f.name, n: refs[0].length, metric: 'top-10 logit', builds: [], missing: [], ours: [] };
    for (const r of refs.slice(1)) {
      const d = refDelta(refs[0], r);
      row.builds.push(d.worst);
      row.missing.push(d.missing);
    }
    for (const r of refs) row.ours.push(await oursDelta(model, r));
    rows.push(row);
  } finally {
    model.free();
  }
  log(JSON.stringify(rows.at(-1)));
}

// the reranker: make-refs.mjs with each install into a folder of its own, then ours on its pairs
const rerankDirs = installs.map((i) => {
  const out = join(tmp, `rerank-${i.name}`);
  mkdirSync(out);
  execFileSync(process.execPath, [join(root, 'test/refs/rerank/make-refs.mjs'), out], {
    env: { ...process.env, NLC_DIR: i.dir },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return out;
});
const pairs = JSON.parse(readFileSync(join(rerankDirs[0], 'pairs.json'), 'utf8'));
const maxDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));
for (const ft of ['Q8_0', 'F32']) {
  const file = `tiny-bert-reranker-${ft}.ref.json`;
  const refs = rerankDirs.map((d) => JSON.parse(readFileSync(join(d, file), 'utf8')));
  const scores = refs.map((r) => r.cases.map((c) => c.score));
  const m = await Model.load(ensureModel('tiny-bert-reranker', ft));
  const ctx = new Context(m, { nCtx: refs[0].nCtx, nThreads: 2, embeddings: true });
  const row = { file: `generated tiny-bert-reranker-${ft}`, n: pairs.length, metric: 'score', missing: [] };
  row.builds = scores.slice(1).map((s) => maxDiff(scores[0], s));
  try {
    const ours = [];
    for (const p of pairs) {
      ctx.clearMemory();
      await ctx.decode({ tokens: rerankTokens(m, p.query, p.document) });
      ours.push(rerankScore(m, ctx.getEmbeddingsSeq(0), true));
    }
    row.ours = scores.map((s) => maxDiff(ours, s));
  } finally {
    ctx.free();
    m.free();
  }
  rows.push(row);
  log(JSON.stringify(row));
}
setLogCallback(null);
rmSync(tmp, { recursive: true, force: true });

if (json) {
  console.log(JSON.stringify({ installs, rows }, null, 1));
} else {
  const fmt = (x) => (x === 0 ? '0' : x >= 0.01 ? x.toFixed(3) : x.toExponential(1));
  console.log('llama.cpp builds (node-llama-cpp 3.21.1, CPU, 1 thread), as loaded (/proc/self/maps):');
  for (const i of installs) console.log(`- ${i.name}: ${i.lib}`);
  const head = [...Bs.map((b) => `${A.name} vs ${b.name}`), ...installs.map((i) => `llama-ts vs ${i.name}`)];
  console.log(
    "\nLargest |Δ| over the cases: top-10 logits relative to the reference's top-1 (the first named), reranker scores.",
  );
  console.log(`\n| file | cases | metric | ${head.join(' | ')} |`);
  console.log(`| --- | ---: | --- |${' ---: |'.repeat(head.length)}`);
  for (const r of rows) {
    // a top-10 id the other build ranks below 10th is left out of the comparison
    const builds = r.builds.map((x, k) => fmt(x) + (r.missing[k] ? ` (${r.missing[k]} out)` : ''));
    console.log(`| ${r.file} | ${r.n} | ${r.metric} | ${[...builds, ...r.ours.map(fmt)].join(' | ')} |`);
  }
}
