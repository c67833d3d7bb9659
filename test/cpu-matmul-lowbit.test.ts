// Products of the codebook and ternary types (assembly/iquant.ts) with one column and
// with several: a single column takes the fused decode-and-dot kernels (TQ1_0, TQ2_0 and
// IQ2_XXS in the relaxed build dot straight from the weights), several columns the
// unpacked rows or, for TQ1_0 and TQ2_0, the same kernels column by column. Against the
// reference device, and a column alone must give the same bits as in the batch.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { cpuDevice } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { weightProduct } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

after(() => cpuDevice.close());

const TYPES = ['IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ3_XXS', 'IQ3_S', 'IQ1_S', 'IQ1_M', 'TQ1_0', 'TQ2_0'] as const;

for (const name of TYPES) {
  test(`cpu matmul ${name}: K=768, M=7, N=6 against the reference; a column alone, the same bits`, async () => {
    const type = GGMLType[name];
    const [K, M, N] = [768, 7, 6];
    const wdata = randomData(newTensor(type, [K, M]), 41);
    const data = randomData(newTensor(GGMLType.F32, [K, N]), 42) as Float32Array;
    const product = (dev: Device, j0: number, n: number) => weightProduct(dev, type, K, M, wdata, data, j0, n);
    const got = await product(cpuDevice, 0, N);
    const e = nmse(got, await product(referenceDevice, 0, N));
    assert.ok(e <= 5e-4, `${name}: NMSE ${e}`);
    for (let j = 0; j < N; j++) {
      assert.deepEqual(await product(cpuDevice, j, 1), got.subarray(j * M, (j + 1) * M), `${name} column ${j}`);
    }
  });
}
