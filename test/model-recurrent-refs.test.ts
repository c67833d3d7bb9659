// Fidelity for what ../shared/fixtures/archs leaves out of the recurrent and hybrid
// architectures, against references made with llama.cpp (node-llama-cpp 3.21.1) for
// generated models (test/refs/recurrent/, made by test/refs/make-refs.mjs recurrent): nemotron_h
// (Mamba-2 with groups, squared-ReLU feed-forward, attention without RoPE), the mixtures
// of experts lfm2moe, granitehybrid with experts and nemotron_h_moe, the generator's
// qwen35 / qwen35moe / lfm2 / granitehybrid files, and an 864-token prompt evaluated in
// ubatches of 64 (the recurrent states carried across ubatches; llama.cpp evaluated it in
// its own batches). Greedy tokens are generated one decode at a time through the state,
// at 1, 2 and 3 threads with the same bits; and one run per long model is saved to a
// session mid-generation, loaded into a fresh context and continued, matching llama.cpp's
// greedy tokens too. No ../shared needed: the models are generated.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { modelIdentity } from '../src/api/info.js';
import { loadSession, saveSession } from '../src/api/session.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import { generateModel } from '../src/generator/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { argmax, type CaseResult, checkRefCase, type RefCase, sameBits } from './helpers/arch-refs.js';
import { REF_MODELS } from './helpers/recurrent-ref-models.js';
import { REPO_ROOT } from './helpers/shared.js';

const REFS = join(REPO_ROOT, 'test/refs/recurrent');
const manifest = JSON.parse(readFileSync(join(REFS, 'models.json'), 'utf8')) as Record<string, { sha256: string }>;
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-recurrent-refs-'));
const cpus = [1, 2, 3].map((n) => new CpuReg(`CPU-rrefs-${n}`).addDevice({ name: `CPU-rrefs-${n}`, threads: n }));
after(async () => {
  await Promise.all(cpus.map((d) => d.close()));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Prompt, then greedy: after `cut` tokens the sequence is saved to a session file, which a
 * fresh context loads and continues from (the next token, sampled before saving, is
 * decoded there). Each step's argmax is held to llama.cpp's greedy token where its gap
 * allows, and fed back as llama.cpp's (teacher forcing).
 */
async function sessionRun(model: Model, c: RefCase, tol: number, ctxN: number, cut: number): Promise<number> {
  const file = join(dir, `${model.hp.arch}-${cut}.session`);
  const identity = modelIdentity(openGGUF(model.path), model);
  let ctx = new Context(model, { nCtx: ctxN, nUbatch: 64 });
  let checked = 0;
  try {
    await ctx.decode({ tokens: c.tokens });
    let logits = ctx.getLogits(-1);
    const seen = [...c.tokens];
    for (let s = 0; s < c.greedy.length; s++) {
      if (c.greedy_gap[s] > 2 * tol) {
        assert.equal(argmax(logits), c.greedy[s], `session run: step ${s} (cut after ${cut})`);
        checked++;
      }
      if (s === cut) {
        await saveSession(file, ctx, seen, identity);
        ctx.free();
        ctx = new Context(model, { nCtx: ctxN, nUbatch: 64 });
        assert.deepEqual(await loadSession(file, ctx, identity), seen);
      }
      if (s + 1 < c.greedy.length) {
        await ctx.decode({ tokens: [c.greedy[s]] });
        seen.push(c.greedy[s]);
        logits = ctx.getLogits(-1);
      }
    }
  } finally {
    ctx.free();
  }
  return checked;
}

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
          // a long prompt in ubatches of 64: the states carried from one ubatch to the next
          const params = { nCtx: r.ctx, nUbatch: r.ctx > 256 ? 64 : 512 };
          for (const c of ref.cases) {
            res.push(await checkRefCase(model, c, r.tol, `${r.file} (${cpu.name}) '${c.prompt.slice(0, 30)}'`, params));
          }
          runs.push(res);
          if (cpu === cpus[0] && r.ctx > 256) {
            const checked = await sessionRun(model, ref.cases[0], r.tol, r.ctx, 7);
            process.stdout.write(`# ${r.file}: saved after 8 greedy tokens, restored, ${checked} steps checked\n`);
          }
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
