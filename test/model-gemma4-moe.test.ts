// Fidelity of Gemma 4's mixture-of-experts layers (26B-A4B's kind: a dense GeGLU beside
// routed GeGLU experts, each branch between its own norms, the router reading
// rmsnorm(h)/√n_embd·ffn_gate_inp.scale) against llama.cpp's answers for generated models
// (test/refs/gemma4-moe/, made by test/refs/make-moe-refs.ts with node-llama-cpp 3.21.1,
// llama.node 1.7.15's top-10 beside): fused gate_up stacks with per-expert down scales in
// F32 and Q8_0, and separate gate/up stacks without scales. Prompt tokens identical;
// top-10 logits relative to llama.cpp's top-1 within 0.02 (F32) or 0.1 (Q8_0); greedy
// tokens generated one decode at a time through the cache (the window of 8 wraps),
// identical except at near-ties; at 1, 2 and 3 threads with the same bits at every step.
//
// The reference kernels (ggml-cpu numerics) are checked on the top-10 after the prompt
// only: their attention is a few ulp from ggml-cpu's (see reference/ops/attention.ts),
// which these random weights amplify to ~1e-3 by the last layer, and there a routing
// near-tie (two experts' probabilities 2e-4 apart) can go the other way and move the
// logits past the tolerance at a later greedy step; the cpu device computes ggml-cpu's
// arithmetic and picks llama.cpp's experts. Their greedy figures are printed.
// A layer with a router but without one of its expert tensors is refused by name.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/index.js';
import { referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { generateModel, type ModelSpec } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { type CaseResult, describe, type RefCase, runRefCase, sameBits, withinTolerance } from './helpers/moe-refs.js';
import { REPO_ROOT } from './helpers/shared.js';

const cpus = [1, 2, 3].map((n) => new CpuReg(`CPU-g4moe-${n}`).addDevice({ name: `CPU-g4moe-${n}`, threads: n }));
const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-gemma4-moe-'));
after(async () => {
  await Promise.all(cpus.map((d) => d.close()));
  rmSync(tmp, { recursive: true, force: true });
});

async function run(path: string, device: Device, cases: RefCase[], tol: number, label: string): Promise<CaseResult[]> {
  setLogCallback(() => {});
  const model = await Model.load(path, { devices: [device] });
  setLogCallback(null);
  try {
    const out: CaseResult[] = [];
    for (const c of cases) out.push(await runRefCase(model, c, tol, `${label} '${c.prompt}'`));
    return out;
  } finally {
    model.free();
  }
}

const REFS = join(REPO_ROOT, 'test', 'refs', 'gemma4-moe');

for (const file of readdirSync(REFS).filter((f) => f.endsWith('.ref.json'))) {
  const ref = JSON.parse(readFileSync(join(REFS, file), 'utf8')) as {
    what: string;
    spec: ModelSpec;
    sha256: string;
    cases: RefCase[];
  };
  test(`${file}: ${ref.what}`, async () => {
    const tol = /-F32\b/.test(file) ? 0.02 : 0.1;
    const label = `refs/gemma4-moe/${file}`;
    const path = join(tmp, file.replace('.ref.json', '.gguf'));
    generateModel(ref.spec, path);
    const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
    assert.equal(sha, ref.sha256, `${file}: the generator's output changed; run test/refs/make-moe-refs.ts again`);

    const runs: CaseResult[][] = [];
    for (const cpu of cpus) {
      const before = cpu.opCounts.get('MUL_MAT_ID') ?? 0;
      runs.push(await run(path, cpu, ref.cases, tol, `${label} (${cpu.name})`));
      assert.ok((cpu.opCounts.get('MUL_MAT_ID') ?? 0) > before, `${label}: MUL_MAT_ID ran on ${cpu.name}`);
    }
    for (let t = 1; t < runs.length; t++) {
      runs[t].forEach((r, i) => {
        assert.ok(sameBits(r.steps, runs[0][i].steps), `${label}: ${t + 1} threads differ from 1 on case ${i}`);
      });
    }
    runs[0].forEach((r, i) => {
      assert.ok(withinTolerance(r, tol), `${label} '${ref.cases[i].prompt}': ${describe(r)}`);
    });
    process.stdout.write(`# ${label}: ${runs[0].map(describe).join('; ')}\n`);

    const exact = await run(path, referenceGgmlCpuDevice(), ref.cases, tol, `${label} (reference)`);
    exact.forEach((r, i) => {
      assert.ok(
        r.maxDelta <= tol && r.missing.length === 0,
        `${label} (reference) '${ref.cases[i].prompt}': ${describe(r)}`,
      );
    });
    process.stdout.write(`# ${label} (reference kernels): ${exact.map(describe).join('; ')}\n`);
  });
}

test('gemma4: a layer with a router but without one of its expert norms is refused, naming the tensor', async () => {
  const ref = JSON.parse(readFileSync(join(REFS, 'gemma4-moe-split-F32.ref.json'), 'utf8')) as { spec: ModelSpec };
  const good = join(tmp, 'norm-check.gguf');
  generateModel(ref.spec, good);
  // the same file with layer 1's pre_ffw_norm_2 renamed (same length: offsets unchanged)
  const bytes = readFileSync(good);
  const at = bytes.indexOf('blk.1.pre_ffw_norm_2.weight');
  assert.ok(at > 0);
  bytes.write('blk.1.pre_ffw_norm_9.weight', at);
  const bad = join(tmp, 'norm-missing.gguf');
  writeFileSync(bad, bytes);
  setLogCallback(() => {});
  try {
    await assert.rejects(async () => {
      const model = await Model.load(bad, { devices: [cpus[0]] });
      try {
        const ctx = new Context(model, { nCtx: 64 });
        try {
          await ctx.decode({ tokens: [1, 2, 3] });
        } finally {
          ctx.free();
        }
      } finally {
        model.free();
      }
    }, /missing tensor 'blk\.1\.pre_ffw_norm_2\.weight'/);
  } finally {
    setLogCallback(null);
  }
});
