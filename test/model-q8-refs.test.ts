// Gemma 2 and DeepSeek-2 against llama.cpp (node-llama-cpp 3.21.1) over 44 prompts of 2 to
// 69 tokens (test/refs/q8/, made by test/refs/make-refs.mjs q8): generated models at shapes
// the shared fixtures do not have, F32 and Q8_0, and the shared fixtures themselves where
// ../shared is present. node-llama-cpp runs both architectures without flash attention;
// with flash attention, ours were up to 0.14 (Gemma 2) and 0.17 (DeepSeek-2) off its
// Q8_0 fixture logits on these prompts. Every prompt's top-10 logits relative to
// llama.cpp's top-1 within 0.02 (F32) / 0.1 (Q8_0), and its greedy tokens generated one
// decode at a time through the cache, identical except at near-ties; the largest |Δ| is
// reported.

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
import { checkRefCase, type RefCase } from './helpers/arch-refs.js';
import { Q8_FIXTURE_REFS, Q8_REF_MODELS } from './helpers/q8-ref-models.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const REFS = join(REPO_ROOT, 'test/refs/q8');
const manifest = JSON.parse(readFileSync(join(REFS, 'models.json'), 'utf8')) as Record<string, { sha256: string }>;
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-q8-refs-'));
const cpu = new CpuReg('CPU-q8-refs').addDevice({ name: 'CPU-q8-refs', threads: 2 });
after(async () => {
  await cpu.close();
  rmSync(dir, { recursive: true, force: true });
});

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Every case of a reference file within tol (all failures listed), then the figures. */
async function checkAll(path: string, file: string, tol: number): Promise<void> {
  setLogCallback(() => {});
  const model = await Model.load(path, { devices: [cpu] });
  setLogCallback(null);
  try {
    const { cases } = JSON.parse(readFileSync(join(REFS, file), 'utf8')) as { cases: RefCase[] };
    const failed: string[] = [];
    let worst = 0;
    let matched = 0;
    let required = 0;
    for (const c of cases) {
      try {
        const x = await checkRefCase(model, c, tol, `${file} '${c.prompt.slice(0, 40)}'`);
        worst = Math.max(worst, x.maxDelta);
        matched += x.matched;
        required += x.required;
      } catch (e) {
        failed.push((e as Error).message.split('\n')[0]);
      }
    }
    assert.deepEqual(failed, [], `${file}: ${failed.length} of ${cases.length} prompts off`);
    process.stdout.write(
      `# ${file}: ${cases.length} prompts, max|Δ| ${worst.toFixed(4)} (tolerance ${tol}), greedy ${matched}/${required}\n`,
    );
  } finally {
    model.free();
  }
}

for (const m of Q8_REF_MODELS) {
  test(`${m.name}: ${m.covers}`, async () => {
    const path = join(dir, `${m.name}.gguf`);
    generateModel(m.spec, path);
    assert.equal(
      sha256(path),
      manifest[m.name]?.sha256,
      `${m.name}: the generator now writes other bytes; rerun make-refs.mjs q8`,
    );
    for (const r of m.refs) await checkAll(path, r.file, r.tol);
  });
}

for (const f of Q8_FIXTURE_REFS) {
  const path = sharedPath(f.shared);
  test(`${f.shared}: 44 prompts`, { skip: path ? false : missingShared(f.shared) }, async () => {
    assert.equal(
      sha256(path!),
      manifest[f.shared]?.sha256,
      `../shared/${f.shared} is not the file the references were made on`,
    );
    await checkAll(path!, f.file, f.tol);
  });
}
