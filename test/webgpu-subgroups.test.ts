// The WebGPU device's two reduction paths on one adapter: with `subgroups` (subgroupAdd /
// subgroupMax in the norms, SOFT_MAX, SUM_ROWS, and the matrix-vector MUL_MAT and MUL_MAT_ID)
// and without (workgroup-memory trees). Each path runs the op harness cases those kernels
// serve plus rows long enough for many subgroups and row blocks, against the reference
// device, and gives the same bits on a second run. Dawn on SwiftShader has subgroups (of
// 4); an adapter without them runs the second path only. Skips without a WebGPU adapter.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { compareDevices, type OpCase, opCases, randomData } from '../src/backends/testing/op-harness.js';
import { bindPlan, kernelFor, shaderSource } from '../src/backends/webgpu/kernels.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, type Tensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { webGpuDevice } from './helpers/webgpu.js';

const dev = await webGpuDevice();
const skip = typeof dev === 'string' ? dev : false;
const gpu = () => dev as Exclude<typeof dev, string>;
const { F32, Q4_0, Q4_K, Q8_0, I32 } = GGMLType;

/** The harness cases whose kernels take the subgroup path (N = 1 products, every MUL_MAT_ID, row reductions). */
const REDUCING = /^(MUL_MAT\(.* N=1 |MUL_MAT_ID|RMS_NORM|NORM|L2_NORM|SOFT_MAX|SUM_ROWS)/;

/** Long rows and many row blocks: many subgroups per row, a partial last block, broadcast batches. */
function longCases(): OpCase[] {
  const mm = (type: number, K: number, M: number, b2: number, r2: number): OpCase => ({
    name: `MUL_MAT(${GGMLType[type]} x F32) K=${K} M=${M} N=1 batch ${b2} bcast ${r2}`,
    build: () => {
      const a = newTensor(type, [K, M, b2]);
      const b = newTensor(F32, [K, 1, b2 * r2]);
      return { out: ops.mulMat(a, b), inputs: [a, b] };
    },
  });
  const row = (name: string, ne: number[], f: (a: Tensor) => Tensor): OpCase => ({
    name: `${name} [${ne}]`,
    build: () => {
      const a = newTensor(F32, ne);
      return { out: f(a), inputs: [a] };
    },
  });
  return [
    mm(F32, 1000, 67, 2, 3),
    mm(Q8_0, 1024, 33, 1, 1),
    mm(Q4_K, 512, 19, 1, 2),
    {
      name: 'MUL_MAT_ID(Q4_0) K=512 M=21 4 experts, 3 tokens, 2 used',
      build: () => {
        const as = newTensor(Q4_0, [512, 21, 4]);
        const b = newTensor(F32, [512, 1, 3]);
        const ids = newTensor(I32, [2, 3]);
        return { out: ops.mulMatId(as, b, ids), inputs: [as, b, [ids, new Int32Array([3, 0, 1, 3, 2, 1])]] };
      },
    },
    row('RMS_NORM', [4099, 3], (a) => ops.rmsNorm(a, 1e-6)),
    row('NORM', [1025, 2], (a) => ops.norm(a, 1e-5)),
    row('L2_NORM', [777, 3], (a) => ops.l2Norm(a, 1e-6)),
    row('SUM_ROWS', [3001, 2], ops.sumRows),
    row('SOFT_MAX', [1000, 4], (a) => ops.softMax(a, null, 0.125)),
  ];
}

const cases = () => [...opCases().filter((c) => REDUCING.test(c.name)), ...longCases()];

test('webgpu: subgroups are used where the adapter has them (and LLAMA_TS_WEBGPU_NO_SUBGROUPS=1 is unset)', {
  skip,
}, () => {
  const c = gpu().ctx;
  process.stdout.write(`# ${gpu().description}: subgroups ${c.available.subgroups ? 'available' : 'absent'}\n`);
  assert.equal(c.features.subgroups, c.available.subgroups);
  // the kernels follow the switch: a decode product's shader reduces by subgroupAdd or by a tree
  const a = newTensor(F32, [64, 8]);
  const sg = { subgroups: true, f16: false };
  const noSg = { subgroups: false, f16: false };
  const mv = kernelFor(ops.mulMat(a, newTensor(F32, [64, 1])), sg);
  assert.ok(typeof mv !== 'string' && shaderSource(mv, bindPlan(mv, [0, 1, 0, 2], sg), sg).includes('subgroupAdd'));
  const tree = kernelFor(ops.mulMat(a, newTensor(F32, [64, 1])), noSg);
  assert.ok(
    typeof tree !== 'string' && !shaderSource(tree, bindPlan(tree, [0, 1, 0, 2], noSg), noSg).includes('subgroup'),
  );
  c.setFeatures({ subgroups: true });
  assert.equal(c.features.subgroups, c.available.subgroups, 'never more than the device was created with');
});

for (const sg of [true, false]) {
  test(`webgpu ${sg ? 'with' : 'without'} subgroups: reductions and decode products match the reference, the same bits twice`, {
    skip: skip || (sg && !gpu().ctx.available.subgroups ? 'the adapter has no subgroups' : false),
  }, async () => {
    const c = gpu().ctx;
    c.setFeatures({ subgroups: sg });
    try {
      const failures: string[] = [];
      const lines: string[] = [];
      const t0 = performance.now();
      const all = cases();
      for (const r of await compareDevices(gpu(), referenceDevice, undefined, all)) {
        // (the IQ1-3 and TQ types have no WebGPU reader: they stay on the host)
        if (r.skipped) {
          if (!/\((IQ[123]|TQ)/.test(r.name)) failures.push(`${r.name}: skipped (${r.skipped})`);
        } else if (!(r.nmse! <= 1e-6)) failures.push(`${r.name}: NMSE ${r.nmse}`);
        else lines.push(`# ${sg ? 'sg' : 'tree'} ${r.name} ${r.nmse!.toExponential(2)}`);
      }
      process.stdout.write(`${lines.join('\n')}\n# ${all.length} cases in ${(performance.now() - t0).toFixed(0)} ms\n`);
      assert.deepEqual(failures, []);
      assert.ok(lines.length >= 60, `only ${lines.length} cases ran`);
      // determinism: the long cases again, bit for bit
      for (const oc of longCases()) {
        const runs: Uint32Array[] = [];
        for (let i = 0; i < 2; i++) {
          const { out, inputs } = oc.build();
          const data = inputs.map((x, k): [Tensor, ArrayBufferView] =>
            Array.isArray(x) ? x : [x, randomData(x, 1000 + k)],
          );
          const v = (await computeOn(gpu(), [out], data)).values[0];
          runs.push(new Uint32Array(v.buffer, v.byteOffset, v.length));
        }
        assert.deepEqual(runs[1], runs[0], `${oc.name}: a second run gave other bits`);
      }
    } finally {
      c.setFeatures({ subgroups: true });
    }
  });
}
