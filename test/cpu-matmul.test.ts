// Matrix products on the CPU device at sizes beyond the harness's (several interleaved
// groups plus leftover rows, many columns, batches), weights placed as a model places
// them (allocTensors, 'weights' buffers), against the reference device.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { tensorSet } from '../src/backends/api.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { allocTensors } from '../src/ggml/alloc.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType, traitsOf } from '../src/ggml/types.js';

after(() => cpuDevice.close());

async function product(dev: Device, type: number, K: number, M: number, N: number, batch: number, bcast: number) {
  const a = newTensor(type, [K, M, batch]);
  const bufs = allocTensors([a], dev.bufferType(), 'weights');
  tensorSet(a, randomData(a, 11));
  const b = newTensor(GGMLType.F32, [K, N, batch * bcast]);
  const r = await computeOn(dev, [ops.mulMat(a, b)], [[b, randomData(b, 12)]]);
  for (const x of bufs) x.free();
  r.allocator.free();
  return r.values[0];
}

const TYPES = ['F32', 'F16', 'BF16', 'Q4_0', 'Q8_0', 'Q4_K', 'Q6_K', 'Q5_K', 'Q4_1', 'IQ4_NL'] as const;

for (const name of TYPES) {
  test(`cpu matmul ${name}: K=512, M=67 (16 groups + 3 rows), N in {1, 9, 70}, batches`, async () => {
    const type = GGMLType[name];
    const limit = traitsOf(type).quantized ? 5e-4 : 1e-7;
    for (const [N, batch, bcast] of [
      [1, 1, 1],
      [9, 2, 1],
      [70, 1, 2],
    ]) {
      const got = await product(cpuDevice, type, 512, 67, N, batch, bcast);
      const want = await product(referenceDevice, type, 512, 67, N, batch, bcast);
      const e = nmse(got, want);
      assert.ok(e <= limit, `${name} N=${N} batch ${batch} bcast ${bcast}: NMSE ${e}`);
    }
  });
}

test('cpu matmul: integer Q8_0 x Q8 result matches the dequantized product closely', async () => {
  const got = await product(cpuDevice, GGMLType.Q8_0, 4096, 8, 2, 1, 1);
  const want = await product(referenceDevice, GGMLType.Q8_0, 4096, 8, 2, 1, 1);
  assert.ok(nmse(got, want) < 5e-5);
});
