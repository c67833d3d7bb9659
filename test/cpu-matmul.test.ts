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
import { f16ToF32, f32ToF16 } from '../src/ggml/fp16.js';
import * as ops from '../src/ggml/ops.js';
import { dequantizeMXFP4 } from '../src/ggml/quants/mxfp4.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

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

const TYPES = [
  'F32',
  'F16',
  'BF16',
  'Q4_0',
  'Q8_0',
  'Q4_K',
  'Q6_K',
  'Q5_K',
  'Q4_1',
  'Q5_0',
  'IQ4_NL',
  'MXFP4',
] as const;

for (const name of TYPES) {
  test(`cpu matmul ${name}: K=512, M=67 (16 groups + 3 rows), N in {1, 9, 70}, batches`, async () => {
    const type = GGMLType[name];
    // non-F32 weights see activations rounded to ggml-cpu's vec_dot_type (Q8, F16, BF16)
    const limit = type === GGMLType.F32 ? 1e-7 : 5e-4;
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

test('cpu matmul: a column gives the same bits alone as in a batch (every type)', async () => {
  const K = 512;
  const M = 13;
  for (const name of TYPES) {
    const type = GGMLType[name];
    const a = newTensor(type, [K, M]);
    const bufs = allocTensors([a], cpuDevice.bufferType(), 'weights');
    tensorSet(a, randomData(a, 21));
    const b = newTensor(GGMLType.F32, [K, 6]);
    const data = randomData(b, 22) as Float32Array;
    const batch = await computeOn(cpuDevice, [ops.mulMat(a, b)], [[b, data]]);
    for (const j of [0, 3, 5]) {
      const one = newTensor(GGMLType.F32, [K, 1]);
      const r = await computeOn(cpuDevice, [ops.mulMat(a, one)], [[one, data.subarray(j * K, (j + 1) * K)]]);
      assert.deepEqual(r.values[0], batch.values[0].subarray(j * M, (j + 1) * M), `${name} column ${j}`);
      r.allocator.free();
    }
    batch.allocator.free();
    for (const x of bufs) x.free();
  }
});

test('cpu matmul: few columns (2..8: the pair, unpacked and four-column tiles) give each column the bits it has alone', async () => {
  // K = 768: three Q4_K/Q6_K super-blocks, 24 Q4_0/Q8_0 blocks; M = 13: three groups and a row
  const K = 768;
  const M = 13;
  for (const name of ['Q4_0', 'Q8_0', 'Q4_K', 'Q6_K', 'MXFP4'] as const) {
    const type = GGMLType[name];
    const a = newTensor(type, [K, M]);
    const bufs = allocTensors([a], cpuDevice.bufferType(), 'weights');
    tensorSet(a, randomData(a, 31));
    const data = randomData(newTensor(GGMLType.F32, [K, 8]), 32) as Float32Array;
    const alone: Float32Array[] = [];
    for (let j = 0; j < 8; j++) {
      const one = newTensor(GGMLType.F32, [K, 1]);
      const r = await computeOn(cpuDevice, [ops.mulMat(a, one)], [[one, data.subarray(j * K, (j + 1) * K)]]);
      alone.push(Float32Array.from(r.values[0]));
      r.allocator.free();
    }
    for (const N of [2, 3, 5, 6, 7, 8]) {
      const b = newTensor(GGMLType.F32, [K, N]);
      const r = await computeOn(cpuDevice, [ops.mulMat(a, b)], [[b, data.subarray(0, N * K)]]);
      for (let j = 0; j < N; j++) {
        assert.deepEqual(r.values[0].subarray(j * M, (j + 1) * M), alone[j], `${name} N=${N} column ${j}`);
      }
      r.allocator.free();
    }
    for (const x of bufs) x.free();
  }
});

test('cpu matmul MXFP4: exponent bytes 0 and 1 (subnormal scales) and large ones, in groups and alone', async () => {
  // 9 rows: two interleaved groups and a plain row; every block of a row has the same
  // exponent byte. Expected: the exact sum over ggml's dequantized weights and the
  // activations rounded as ggml-cpu's Q8_0 (vec_dot_type), in double (the reference
  // device loses bits where the products are subnormal)
  const K = 256;
  const E = [0, 1, 2, 3, 127, 1, 0, 200, 0];
  const a = newTensor(GGMLType.MXFP4, [K, E.length]);
  const bytes = randomData(a, 41) as Uint8Array;
  for (let r = 0; r < E.length; r++) for (let b = 0; b < K / 32; b++) bytes[r * (K / 32) * 17 + b * 17] = E[r];
  const w = new Float32Array(K * E.length);
  dequantizeMXFP4(bytes, 0, w, 0, (K / 32) * E.length);
  const x = randomData(newTensor(GGMLType.F32, [K, 5]), 42) as Float32Array;
  const expected = (r: number, c: number) => {
    let sum = 0;
    for (let b = 0; b < K / 32; b++) {
      const xs = x.subarray(c * K + b * 32, c * K + b * 32 + 32);
      const amax = xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      const d = f16ToF32(f32ToF16(amax / 127));
      const id = amax ? 127 / amax : 0;
      for (let j = 0; j < 32; j++) sum += w[r * K + b * 32 + j] * Math.round(xs[j] * id) * d;
    }
    return sum;
  };
  for (const cols of [1, 5]) {
    const t = newTensor(GGMLType.MXFP4, [K, E.length]);
    const bufs = allocTensors([t], cpuDevice.bufferType(), 'weights');
    tensorSet(t, bytes);
    const y = newTensor(GGMLType.F32, [K, cols]);
    const r = await computeOn(cpuDevice, [ops.mulMat(t, y)], [[y, x.subarray(0, K * cols)]]);
    const got = r.values[0];
    for (const f of bufs) f.free();
    r.allocator.free();
    for (let c = 0; c < cols; c++) {
      for (let m = 0; m < E.length; m++) {
        const want = expected(m, c);
        const v = got[c * E.length + m];
        assert.ok(want !== 0 && Number.isFinite(want));
        assert.ok(
          Math.abs(v - want) <= 1e-5 * Math.abs(want),
          `${cols} columns: row ${m} (e ${E[m]}), column ${c}: ${v} vs ${want}`,
        );
      }
    }
  }
});
