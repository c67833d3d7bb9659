// Fidelity for the tensor and hyper-parameter variants llama.cpp's loaders accept for the
// expert, latent-attention and recurrent-hybrid architectures, against references made
// with llama.cpp (node-llama-cpp 3.21.1) for generated models (test/refs/variants-b/, made
// by make-refs.mjs there): each model is an existing preset with one variant (see
// test/helpers/variants-b-ref-models.ts). Prompt logits, greedy tokens generated one decode
// at a time, at 1, 2 and 3 threads with the same bits. No ../shared needed.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import { generateModel } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Model } from '../src/model/index.js';
import { type CaseResult, checkRefCase, type RefCase, sameBits } from './helpers/arch-refs.js';
import { REPO_ROOT } from './helpers/shared.js';
import { REF_MODELS } from './helpers/variants-b-ref-models.js';

const REFS = join(REPO_ROOT, 'test/refs/variants-b');
const manifest = JSON.parse(readFileSync(join(REFS, 'models.json'), 'utf8')) as Record<string, { sha256: string }>;
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-variants-b-refs-'));
const cpus = [1, 2, 3].map((n) => new CpuReg(`CPU-vbrefs-${n}`).addDevice({ name: `CPU-vbrefs-${n}`, threads: n }));
after(async () => {
  await Promise.all(cpus.map((d) => d.close()));
  rmSync(dir, { recursive: true, force: true });
});

for (const m of REF_MODELS) {
  test(`${m.name}: ${m.covers}`, async () => {
    const path = join(dir, `${m.name}.gguf`);
    generateModel(m.spec, path);
    const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
    assert.equal(sha, manifest[m.name]?.sha256, `${m.name}: the generator now writes other bytes; rerun make-refs.mjs`);
    for (const r of m.refs) {
      const ref = JSON.parse(readFileSync(join(REFS, r.file), 'utf8')) as { cases: RefCase[] };
      const runs: CaseResult[][] = [];
      for (const cpu of cpus) {
        setLogCallback(() => {});
        const model = await Model.load(path, { devices: [cpu] });
        setLogCallback(null);
        try {
          const res: CaseResult[] = [];
          for (const c of ref.cases) {
            const where = `${r.file} (${cpu.name}) '${c.prompt.slice(0, 30)}'`;
            res.push(await checkRefCase(model, c, r.tol, where, { nCtx: r.ctx }));
          }
          runs.push(res);
        } finally {
          model.free();
        }
      }
      for (let t = 1; t < runs.length; t++) {
        runs[t].forEach((x, i) => {
          assert.ok(sameBits(x.steps, runs[0][i].steps), `${r.file}: ${t + 1} threads differ from 1 on case ${i}`);
        });
      }
      const lines = runs[0].map((x) => `max|Δ| ${x.maxDelta.toFixed(4)}, greedy ${x.matched}/${x.required}`);
      process.stdout.write(`# ${r.file}: ${lines.join('; ')}\n`);
    }
  });
}
