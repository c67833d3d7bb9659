// Fidelity of the recurrent and hybrid architectures against llama.cpp's answers in
// ../shared/fixtures/archs/{qwen35,lfm2,granitehybrid}-{F32,Q8_0} (Gated DeltaNet, short
// convolutions, Mamba-2, each beside attention layers): prompt tokens, top-10 logits
// relative to llama.cpp's top-1 within 0.02 (F32) / 0.1 (Q8_0), greedy tokens generated
// one decode at a time through the recurrent state (llama.cpp's references re-evaluate
// prompt + prefix at every step; identical except at near-ties), on the default device at
// 1, 2 and 3 threads with bit-identical logits at every step, and on the reference kernels.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { setLogCallback } from '../src/log.js';
import { defaultDevices, Model } from '../src/model/index.js';
import { type CaseResult, checkRefCase, type RefCase, sameBits } from './helpers/arch-refs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const ARCHS = ['qwen35', 'lfm2', 'granitehybrid'];
const TYPES: [string, number][] = [
  ['F32', 0.02],
  ['Q8_0', 0.1],
];

// one CPU device per thread count (each its own worker pool)
const cpus = [1, 2, 3].map((n) =>
  new CpuReg(`CPU-recurrent-${n}`).addDevice({ name: `CPU-recurrent-${n}`, threads: n }),
);
after(async () => {
  await Promise.all(cpus.map((d) => d.close()));
});

async function run(
  path: string,
  devices: Device[],
  cases: RefCase[],
  tol: number,
  label: string,
): Promise<CaseResult[]> {
  setLogCallback(() => {});
  const model = await Model.load(path, { devices });
  setLogCallback(null);
  try {
    const out: CaseResult[] = [];
    for (const c of cases) out.push(await checkRefCase(model, c, tol, `${label} '${c.prompt}'`));
    return out;
  } finally {
    model.free();
  }
}

for (const arch of ARCHS) {
  for (const [type, tol] of TYPES) {
    const rel = `fixtures/archs/${arch}-${type}`;
    const path = sharedPath(`${rel}.gguf`);
    test(`${arch} ${type}: llama.cpp's answers at 1, 2 and 3 threads, same bits`, {
      skip: path ? false : missingShared(`${rel}.gguf`),
    }, async () => {
      const ref = JSON.parse(readFileSync(sharedPath(`${rel}.ref.json`)!, 'utf8')) as { cases: RefCase[] };
      const runs: CaseResult[][] = [];
      for (const cpu of cpus) runs.push(await run(path!, [cpu], ref.cases, tol, `${rel} (${cpu.name})`));
      for (let t = 1; t < runs.length; t++) {
        runs[t].forEach((r, i) => {
          assert.ok(sameBits(r.steps, runs[0][i].steps), `${rel}: ${t + 1} threads differ from 1 on case ${i}`);
        });
      }
      const lines = runs[0].map((r) => `max|Δ| ${r.maxDelta.toFixed(4)}, greedy ${r.matched}/${r.required}`);
      process.stdout.write(`# ${rel}: ${lines.join('; ')}\n`);
    });
    test(`${arch} ${type}: llama.cpp's answers on the reference kernels`, {
      skip: path ? false : missingShared(`${rel}.gguf`),
    }, async () => {
      const ref = JSON.parse(readFileSync(sharedPath(`${rel}.ref.json`)!, 'utf8')) as { cases: RefCase[] };
      const devices = defaultDevices().some((d) => d.name !== referenceDevice.name)
        ? [referenceDevice]
        : defaultDevices();
      const r = await run(path!, devices, ref.cases, tol, `${rel} (reference)`);
      process.stdout.write(`# ${rel} (reference): ${r.map((x) => `max|Δ| ${x.maxDelta.toFixed(4)}`).join('; ')}\n`);
    });
  }
}
