// Runs the checks of a folder of llama.cpp references for generated models (test/refs/swa/,
// variants/, variants-b/, recurrent/): each model generated from its spec (its SHA-256
// checked against the folder's models.json first), then loaded on 1, 2 and 3 CPU threads;
// logits and teacher-forced greedy tokens against the references (checkRefCase), pooled
// embeddings by cosine; the threads give the same bits.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type CpuDevice, CpuReg } from '../../src/backends/cpu/index.js';
import { generateModel } from '../../src/generator/index.js';
import { setLogCallback } from '../../src/log.js';
import { Context, Model } from '../../src/model/index.js';
import { type CaseResult, checkRefCase, type RefCase, sameBits } from './arch-refs.js';
import type { RefFile, RefModel } from './swa-ref-models.js';

/** Called on the 1-thread model after a logits reference's cases passed, for extra checks. */
export type AfterFirstRun = (model: Model, cases: RefCase[], ref: RefFile) => Promise<void>;

interface EmbedCase {
  prompt: string;
  tokens: number[];
  embedding: number[];
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  let x = 0;
  let y = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    x += a[i] * a[i];
    y += b[i] * b[i];
  }
  return d / Math.sqrt(x * y);
}

/**
 * One test per model of `models`, against the references in `refs` (a folder). Returns the
 * temporary folder the models are generated into and the 1/2/3-thread CPU devices, for a
 * file's other tests (both released after all of them).
 */
export function refModelTests(
  refs: string,
  models: readonly RefModel[],
  afterFirstRun?: AfterFirstRun,
): { dir: string; cpus: CpuDevice[] } {
  const manifest = JSON.parse(readFileSync(join(refs, 'models.json'), 'utf8')) as Record<string, { sha256: string }>;
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-refs-'));
  const cpus = [1, 2, 3].map((n) => new CpuReg(`CPU-refs-${n}`).addDevice({ name: `CPU-refs-${n}`, threads: n }));
  after(async () => {
    await Promise.all(cpus.map((d) => d.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  for (const m of models) {
    test(`${m.name}: ${m.covers}`, async () => {
      const path = join(dir, `${m.name}.gguf`);
      generateModel(m.spec, path);
      const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
      assert.equal(
        sha,
        manifest[m.name]?.sha256,
        `${m.name}: the generator now writes other bytes; rerun test/refs/make-refs.mjs (see the folder's README)`,
      );
      for (const r of m.refs) {
        const ref = JSON.parse(readFileSync(join(refs, r.file), 'utf8'));
        const lines: string[] = [];
        const runs: CaseResult[][] = [];
        for (const cpu of cpus) {
          setLogCallback(() => {});
          const model = await Model.load(path, { devices: [cpu] });
          setLogCallback(null);
          try {
            if (r.kind === 'embedding') {
              for (const c of ref.cases as EmbedCase[]) {
                assert.deepEqual(model.vocab.encode(c.prompt, { addSpecial: true }), c.tokens, `${r.file}: tokens`);
                const ctx = new Context(model, { nCtx: r.ctx, embeddings: true });
                try {
                  await ctx.decode({ tokens: c.tokens });
                  const cos = cosine(ctx.getEmbeddingsSeq(0), c.embedding);
                  assert.ok(cos >= 1 - r.tol, `${r.file} (${cpu.name}) '${c.prompt}': cosine ${cos}`);
                  if (cpu === cpus[0]) lines.push(`cosine ${cos.toFixed(7)}`);
                } finally {
                  ctx.free();
                }
              }
              continue;
            }
            const res: CaseResult[] = [];
            // a long prompt in ubatches of 64: the window cache (512 + 64 cells, padded to 768) wraps
            const params = { nCtx: r.ctx, nUbatch: r.ctx > 256 ? 64 : 512 };
            for (const c of ref.cases as RefCase[]) {
              res.push(
                await checkRefCase(model, c, r.tol, `${r.file} (${cpu.name}) '${c.prompt.slice(0, 30)}'`, params),
              );
            }
            runs.push(res);
            if (cpu === cpus[0] && afterFirstRun) await afterFirstRun(model, ref.cases, r);
          } finally {
            model.free();
          }
        }
        for (let t = 1; t < runs.length; t++) {
          runs[t].forEach((x, i) => {
            assert.ok(sameBits(x.steps, runs[0][i].steps), `${r.file}: ${t + 1} threads differ from 1 on case ${i}`);
          });
        }
        if (runs.length > 0)
          lines.push(...runs[0].map((x) => `max|Δ| ${x.maxDelta.toFixed(4)}, greedy ${x.matched}/${x.required}`));
        process.stdout.write(`# ${r.file}: ${lines.join('; ')}\n`);
      }
    });
  }
  return { dir, cpus };
}
