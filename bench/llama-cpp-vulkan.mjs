// How close llama.cpp's own GPU backend comes to llama.cpp's CPU answers on the shared
// fixtures, next to how close our WebGPU device comes: the yardstick for the WebGPU
// fidelity tolerance (README "GPU (WebGPU)"). node-llama-cpp 3.21.1 ships a Vulkan build
// (@node-llama-cpp/linux-x64-vulkan); this reruns ../shared/tools/ref.mjs through a copy
// that asks for it (getLlama({ gpu: 'vulkan' }), gpuLayers 'max': every layer and the
// output offloaded), same prompts and context, and compares its top-10 with the fixture's
// stored CPU reference as the tests do (top-10 logits relative to the CPU's top-1).
// Ours: WebGPU0 fully offloaded, the WebGPU fidelity test's figure, on the same prompts.
//
// A software Vulkan device: ggml-vulkan skips devices of type CPU unless named in
// GGML_VK_VISIBLE_DEVICES (set here), and refuses SwiftShader ("does not support 16-bit
// storage"), so llama.cpp runs on Mesa's lavapipe (llvmpipe) ICD; ours on whatever
// VK_ICD_FILENAMES gives this process (SwiftShader for the README's figures). Run after
// `npm run build`, with ../shared present:
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/llama-cpp-vulkan.mjs \
//     [--icd /usr/share/vulkan/icd.d/lvp_icd.x86_64.json] [--no-f16] [--no-ours] [--json] [NAME ...]
// --no-f16 sets GGML_VK_DISABLE_F16=1: ggml-vulkan's float32 shaders instead of its float16
// ones (on a device with float16 and no cooperative matrices its matrix-matrix products hold
// operands and sums in float16).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { refDelta, reference } from './llama-cpp-refs.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const shared = join(root, '../shared');
const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const icd = opt('--icd', '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json');
const json = args.includes('--json');
const withOurs = !args.includes('--no-ours');
const names = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--icd');
const nlc = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const noF16 = args.includes('--no-f16');
const vkEnv = {
  VK_ICD_FILENAMES: icd,
  GGML_VK_VISIBLE_DEVICES: '0',
  NLC_DIR: nlc,
  ...(noF16 ? { GGML_VK_DISABLE_F16: '1' } : {}),
};
const log = (s) => process.stderr.write(`${s}\n`);

// the five Q8_0 files over the tolerance on WebGPU, and files within it for comparison
const FILES = [
  'fixtures/archs/gemma3-Q8_0',
  'fixtures/archs/gemma4-Q8_0',
  'fixtures/archs/lfm2-Q8_0',
  'fixtures/archs/qwen35-Q8_0',
  'fixtures/archs/smollm3-Q8_0',
  'fixtures/archs/gemma2-Q8_0',
  'fixtures/archs/phi3-Q8_0',
  'fixtures/rand-llama-Q4_0',
  'fixtures/rand-qwen3-Q8_0',
];
const files = names.length ? FILES.filter((f) => names.some((n) => f.endsWith(`/${n}`))) : FILES;

const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-vulkan-'));

/** ref.mjs made to run on the Vulkan build with everything offloaded (a copy; the original stays CPU-only). */
function vulkanRefTool() {
  let src = readFileSync(join(shared, 'tools/ref.mjs'), 'utf8');
  for (const [from, to] of [
    ['getLlama({ gpu: false,', "getLlama({ gpu: 'vulkan',"],
    ['gpuLayers: 0,', "gpuLayers: 'max',"],
  ]) {
    if (!src.includes(from)) throw new Error(`../shared/tools/ref.mjs: no '${from}' to switch to the Vulkan build`);
    src = src.replace(from, to);
  }
  const file = join(tmp, 'ref-vulkan.mjs');
  writeFileSync(file, src);
  return file;
}

/** The Vulkan device llama.cpp picks and how many of a model's layers it offloads (a child process). */
function offload(model) {
  const file = join(tmp, 'offload.mjs');
  // a file, not -e: node-llama-cpp tests its binding in a child given this process's argv
  writeFileSync(
    file,
    `const { getLlama, LlamaLogLevel } = await import(${JSON.stringify(`${nlc}/node_modules/node-llama-cpp/dist/index.js`)});
    const llama = await getLlama({ gpu: 'vulkan', build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
    const m = await llama.loadModel({ modelPath: ${JSON.stringify(model)}, gpuLayers: 'max', useMmap: false });
    console.log(JSON.stringify({ gpu: llama.gpu, device: (await llama.getGpuDeviceNames()).join(', '), layers: m.gpuLayers, of: m.fileInsights.totalLayers }));
    process.exit(0);`,
  );
  return JSON.parse(execFileSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, ...vkEnv } }));
}

/**
 * Prompts whose greedy tokens part from a's at a step that is not a near-tie (a's top-1 over
 * its top-2 by more than 0.2): past the first difference each follows its own tokens.
 */
function greedyDiffs(a, b) {
  let n = 0;
  for (const [i, ca] of a.entries()) {
    const s = ca.greedy.findIndex((t, k) => b[i].greedy[k] !== t);
    if (s >= 0 && ca.greedy_gap[s] > 0.2) n++;
  }
  return n;
}

/** Our WebGPU device fully offloaded: per case the largest |Δ|, as the fidelity test measures it. */
async function ours(path, cases) {
  const { Model } = await import(join(root, 'dist/src/model/index.js'));
  const { cpuDevice } = await import(join(root, 'dist/src/backends/cpu/index.js'));
  const { setLogCallback } = await import(join(root, 'dist/src/log.js'));
  const { checkRefCase } = await import(join(root, 'dist/test/helpers/arch-refs.js'));
  const { webGpuDevice } = await import(join(root, 'dist/test/helpers/webgpu.js'));
  const gpu = await webGpuDevice();
  if (typeof gpu === 'string') throw new Error(gpu);
  setLogCallback(() => {});
  const model = await Model.load(path, { devices: [gpu, cpuDevice] });
  setLogCallback(null);
  try {
    const out = [];
    for (const c of cases) out.push((await checkRefCase(model, c, Infinity, c.prompt)).maxDelta);
    return out;
  } finally {
    model.free();
  }
}

// ggml-vulkan multiplies by a weight matrix with its matrix-vector shaders (float32) up to 8
// columns, with its matrix-matrix ones beyond (operands, and on float16 devices the sums, in
// float16): the prompts' token counts pick the path
const MAX_VEC_COLS = 8;
const shortOnes = (r) => r.tokens.map((n, i) => (n <= MAX_VEC_COLS ? i : -1)).filter((i) => i >= 0);
const worstOf = (xs, idx) => Math.max(0, ...idx.map((i) => xs[i]));

const tool = vulkanRefTool();
const where = offload(join(shared, `${files[0]}.gguf`));
log(`llama.cpp Vulkan: ${where.device} (VK_ICD_FILENAMES=${icd})`);
const rows = [];
for (const rel of files) {
  const path = join(shared, `${rel}.gguf`);
  const cpu = JSON.parse(readFileSync(join(shared, `${rel}.ref.json`), 'utf8')).cases;
  const prompts = join(tmp, 'prompts.json');
  writeFileSync(prompts, JSON.stringify(cpu.map((c) => c.prompt)));
  const o = offload(path);
  if (o.gpu !== 'vulkan' || o.layers !== o.of)
    throw new Error(`${rel}: llama.cpp offloaded ${o.layers}/${o.of} layers to ${o.gpu}`);
  const t0 = Date.now();
  const vk = reference(tool, path, prompts, join(tmp, 'vulkan.json'), vkEnv);
  const d = refDelta(cpu, vk);
  const perCase = cpu.map((c, i) => refDelta([c], [vk[i]]).worst);
  const row = { file: rel, tokens: cpu.map((c) => c.tokens.length), layers: `${o.layers}/${o.of}` };
  Object.assign(row, { vulkan: d.worst, missing: d.missing, vulkanPerCase: perCase });
  row.vulkanGreedy = greedyDiffs(cpu, vk);
  row.vulkanSeconds = (Date.now() - t0) / 1000;
  if (withOurs) row.oursPerCase = await ours(path, cpu);
  rows.push(row);
  log(JSON.stringify(row));
}
rmSync(tmp, { recursive: true, force: true });
if (withOurs) (await import(join(root, 'dist/src/backends/cpu/index.js'))).cpuDevice.close();

if (json) console.log(JSON.stringify({ vulkanDevice: where.device, icd, noF16, rows }, null, 1));
else {
  const shaders = noF16 ? ' (GGML_VK_DISABLE_F16=1)' : '';
  console.log(`llama.cpp Vulkan build (node-llama-cpp 3.21.1) on ${where.device}${shaders}, every layer offloaded;`);
  console.log("largest |Δ| of the top-10 logits relative to the CPU reference's top-1, over all prompts and over");
  console.log(`those of at most ${MAX_VEC_COLS} tokens (ggml-vulkan's matrix-vector shaders throughout):\n`);
  console.log(
    `| file | prompt tokens | llama.cpp Vulkan: all | ≤ ${MAX_VEC_COLS} tokens | prompts whose greedy parts (not at a near-tie) | llama-ts WebGPU: all | ≤ ${MAX_VEC_COLS} tokens |`,
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  const all = (r) => r.tokens.map((_, i) => i);
  for (const r of rows) {
    const vk = r.vulkan.toFixed(3) + (r.missing ? ` (${r.missing} out of its top 10)` : '');
    const o = r.oursPerCase
      ? [worstOf(r.oursPerCase, all(r)), worstOf(r.oursPerCase, shortOnes(r))].map((x) => x.toFixed(3))
      : ['-', '-'];
    const cells = [
      r.file,
      r.tokens.join(', '),
      vk,
      worstOf(r.vulkanPerCase, shortOnes(r)).toFixed(3),
      r.vulkanGreedy,
      ...o,
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}
