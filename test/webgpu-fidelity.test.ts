// The WebGPU device against llama.cpp's answers on the shared fixture models: each model
// fully offloaded (WebGPU0, the CPU device for the ops it lacks) and split at
// nGpuLayers 1 (the last layer and its KV cache on the GPU, the rest on the CPU, copies
// where tensors cross) meets the CPU fidelity tests' tolerances (top-10 logits relative
// to the top-1 within 0.02 for F32/F16/BF16 weights, 0.1 quantized; greedy tokens
// identical except near-ties), and the same tokens twice give the same bits.
// SwiftShader is slow: CI runs a representative set on its first prompt;
// LLAMA_TS_WEBGPU_FIDELITY=all runs every fixture on every prompt (or a comma-separated list of names, e.g. rand-llama-Q6_K,gemma3-Q8_0).
// Skips without a WebGPU adapter or without ../shared.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { setLogCallback } from '../src/log.js';
import { Model } from '../src/model/index.js';
import { type CaseResult, checkRefCase, type RefCase, sameBits } from './helpers/arch-refs.js';
import { fidelityTolerance, generativeFixtures } from './helpers/fidelity-fixtures.js';
import { missingShared, sharedPath } from './helpers/shared.js';
import { webGpuDevice } from './helpers/webgpu.js';

const dev = await webGpuDevice();
const gpu = () => dev as Exclude<typeof dev, string>;
after(() => cpuDevice.close());

/**
 * The CI set: F32, Q4_0 and Q8_0 models (a qwen3: QK-norm), an architecture with its own
 * ops (phi3), a mixture of experts (MUL_MAT_ID) and a recurrent one (SSM_CONV: its
 * transposed state crosses devices at -ngl 1).
 */
const CI = [
  'models/stories260K',
  'fixtures/rand-llama-Q4_0',
  'fixtures/rand-qwen3-Q8_0',
  'fixtures/archs/phi3-F32',
  'fixtures/archs/qwen3moe-F32',
  'fixtures/archs/lfm2-F32',
];

const want = process.env.LLAMA_TS_WEBGPU_FIDELITY;

function selected(): string[] {
  const all = generativeFixtures();
  if (want === 'all') return all;
  if (want) {
    const names = want.split(',');
    return all.filter((rel) => names.some((n) => rel.endsWith(`/${n}`)));
  }
  return CI.filter((rel) => all.includes(rel));
}

async function runCases(path: string, nGpuLayers: number | undefined, cases: RefCase[], tol: number, where: string) {
  setLogCallback(() => {});
  const model = await Model.load(path, {
    devices: [gpu(), cpuDevice],
    ...(nGpuLayers !== undefined ? { nGpuLayers } : {}),
  });
  setLogCallback(null);
  try {
    const out: CaseResult[] = [];
    for (const c of cases) out.push(await checkRefCase(model, c, tol, `${where} '${c.prompt}'`));
    // the same tokens again: the same bits at every step
    const again = await checkRefCase(model, cases[0], tol, `${where} (again)`);
    assert.ok(sameBits(again.steps, out[0].steps), `${where}: a second run gave other bits`);
    return out;
  } finally {
    model.free();
  }
}

const files = selected();
if (typeof dev === 'string') test('webgpu fidelity', { skip: dev }, () => {});
else if (files.length === 0) test('webgpu fidelity', { skip: missingShared('models/ and fixtures/') }, () => {});
else {
  for (const rel of files) {
    for (const [label, ngl] of [
      ['offloaded', undefined],
      ['-ngl 1', 1],
    ] as const) {
      test(`webgpu fidelity (${label}): ${rel}`, async () => {
        const ref = JSON.parse(readFileSync(sharedPath(`${rel}.ref.json`)!, 'utf8')) as { cases: RefCase[] };
        // CI: each model's first prompt (its greedy steps are most of the time); asked for: all
        const cases = want ? ref.cases : ref.cases.slice(0, 1);
        const mm = gpu().opCounts.get('MUL_MAT') ?? 0;
        const r = await runCases(sharedPath(`${rel}.gguf`)!, ngl, cases, fidelityTolerance(rel), `${rel} (${label})`);
        assert.ok((gpu().opCounts.get('MUL_MAT') ?? 0) > mm, `${rel}: no matrix product ran on the GPU`);
        const lines = r.map((x) => `max|Δ| ${x.maxDelta.toFixed(4)}, greedy ${x.matched}/${x.required}`);
        process.stdout.write(`# webgpu ${label} ${rel}: ${lines.join('; ')}\n`);
      });
    }
  }
}
