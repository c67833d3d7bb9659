// NORM (BERT's layer norm) rounds as ggml-cpu's x86-64 AVX-512 build does: the cpu device,
// both kernel builds, equals the reference kernels with ggml-cpu numerics bit for bit, and
// these follow ggml_compute_forward_norm_f32 step by step (mean rounded to f32, x - mean in
// f32, squares summed per 16 in _mm512_reduce_add_ps's tree, f32 scale). A layer norm an
// ulp off llama.cpp's sends later F16 K/V and Q8_0 activation roundings the other way:
// the generated BERT reranker's F32 scores were up to 1.4e-4 from llama.cpp's, now 6e-5.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CpuReg, cpuDevice } from '../src/backends/cpu/index.js';
import { referenceDevice, referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { rng } from '../src/backends/testing/op-harness.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const strict = new CpuReg('CPU-strict').addDevice({ name: 'CPU-strict', variant: 'strict' });
after(async () => {
  await Promise.all([cpuDevice.close(), strict.close()]);
});

/** Rows of width n (a non-zero mean, spread over a few binades), normalized on `device`. */
async function normOn(device: Parameters<typeof computeOn>[0], n: number, rows: number): Promise<Float32Array> {
  const r = rng(n);
  const x = Float32Array.from({ length: n * rows }, () => (r() - 0.3) * 2 ** Math.floor(r() * 6));
  const a = newTensor(GGMLType.F32, [n, rows]);
  const { values } = await computeOn(device, [ops.norm(a, 1e-12)], [[a, x]]);
  return values[0]!;
}

test('NORM: cpu device = reference with ggml-cpu numerics, bit for bit (widths with and without a tail of 16)', async () => {
  for (const [n, rows] of [
    [64, 22],
    [100, 7],
    [384, 5],
    [1024, 3],
  ] as const) {
    const want = await normOn(referenceGgmlCpuDevice(), n, rows);
    for (const dev of [cpuDevice, strict]) {
      const got = await normOn(dev, n, rows);
      const off = got.findIndex((v, i) => !Object.is(v, want[i]));
      assert.equal(off, -1, `${dev.name}, width ${n}: element ${off} is ${got[off]}, want ${want[off]}`);
    }
  }
});

test("NORM with ggml-cpu numerics: llama.cpp's roundings, not the exact result's", async () => {
  // x - mean, the variance and the scale rounded to f32 leave ulps the exact formula has not
  const n = 64;
  const exact = await normOn(referenceDevice, n, 22);
  const ggml = await normOn(referenceGgmlCpuDevice(), n, 22);
  let differ = 0;
  for (let i = 0; i < exact.length; i++) {
    assert.ok(Math.abs(exact[i]! - ggml[i]!) <= 4e-6 * Math.max(1, Math.abs(exact[i]!)), `element ${i}`);
    if (exact[i] !== ggml[i]) differ++;
  }
  assert.ok(differ > exact.length / 10, `only ${differ} of ${exact.length} elements round differently`);
});
