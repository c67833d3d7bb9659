// The fidelity tests every architecture family runs on its ../shared/fixtures/archs files
// ({arch}-{F32,Q8_0}.gguf with llama.cpp's answers): checkRefCase on the CPU device at 1, 2
// and 3 threads with bit-identical logits at every step, and on the reference kernels
// (ggml-cpu numerics). Tolerances on relative logits: 0.02 (F32), 0.1 (Q8_0).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { CpuReg } from '../../src/backends/cpu/index.js';
import type { Device } from '../../src/backends/index.js';
import { referenceDevice } from '../../src/backends/reference/index.js';
import { setLogCallback } from '../../src/log.js';
import { defaultDevices, Model } from '../../src/model/index.js';
import { type CaseResult, checkRefCase, type RefCase, sameBits } from './arch-refs.js';
import { missingShared, sharedPath } from './shared.js';

const TYPES: [string, number][] = [
  ['F32', 0.02],
  ['Q8_0', 0.1],
];

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

/** Registers the two tests per architecture and type; `family` names the CPU devices (one per thread count, each its own worker pool). */
export function archFixtureTests(family: string, archs: readonly string[]): void {
  const cpus = [1, 2, 3].map((n) =>
    new CpuReg(`CPU-${family}-${n}`).addDevice({ name: `CPU-${family}-${n}`, threads: n }),
  );
  after(async () => {
    await Promise.all(cpus.map((d) => d.close()));
  });

  for (const arch of archs) {
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
}
