// Q4_0/Q8_0 products with enough columns that the relaxed build unpacks each group of
// four Q4_0 rows once per column chunk (assembly/matmul.ts, mmUnpacked: pieces of blocks,
// pairs of columns and a leftover one; Q8_0 keeps the per-group kernels): against the
// reference device, and a column alone (the per-group kernels) must give the same bits as
// in the batch.

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

// K = 96: three blocks (one piece); 2048: more blocks than one piece holds
for (const name of ['Q4_0', 'Q8_0'] as const) {
  for (const K of [96, 2048]) {
    test(`cpu matmul ${name} unpacked groups: K=${K}, M=22, N=21`, async () => {
      const type = GGMLType[name];
      const M = 22;
      const N = 21;
      const wdata = randomData(newTensor(type, [K, M]), 31);
      const data = randomData(newTensor(GGMLType.F32, [K, N]), 32) as Float32Array;
      // columns [j0, j0 + n) on dev, weights placed as a model places them
      const product = (dev: Device, j0: number, n: number) => weightProduct(dev, type, K, M, wdata, data, j0, n);
      const got = await product(cpuDevice, 0, N);
      const e = nmse(got, await product(referenceDevice, 0, N));
      assert.ok(e <= 5e-4, `${name} K=${K}: NMSE ${e}`);
      for (const j of [0, 7, 19, 20]) {
        assert.deepEqual(
          await product(cpuDevice, j, 1),
          got.subarray(j * M, (j + 1) * M),
          `${name} K=${K} column ${j}`,
        );
      }
    });
  }
}
