// The CPU device against the reference device: every case of the op harness, with both
// kernel builds (relaxed SIMD and plain SIMD128), each op checked to have run on the CPU
// device (no case skipped but NOT_ON_CPU's, the device's op counter moved).
// - Against the exact (double precision) reference: matrix products with non-F32
//   weights see activations rounded to ggml-cpu's vec_dot_type (Q8_0, Q8_1, Q8_K, F16,
//   BF16) as llama.cpp's do, and flash attention its query rows: NMSE up to 5e-4
//   (test-backend-ops' bound); GELU reads ggml-cpu's f16 table (input and result rounded
//   to f16): up to 1e-5; everything else keeps the harness's 1e-7.
// - Against the reference with ggml-cpu numerics (the same rounding): every case within
//   1e-7, i.e. the kernels compute what llama.cpp's CPU backend computes (flash attention:
//   what the cpu device's tiled kernel computes, see the reference's attention.ts).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { CpuDevice } from '../src/backends/cpu/index.js';
import { CpuReg, cpuDevice, relaxedSimdSupported } from '../src/backends/cpu/index.js';
import { referenceDevice, referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { compareDevices, type OpCase, opCases } from '../src/backends/testing/op-harness.js';

const ROUNDED_MATMUL = /^MUL_MAT(_ID)?\((?!F32[ )])/;

/**
 * Cases outside the CPU device's kernels, which no model graph builds: SOFT_MAX with ALiBi
 * (max_bias > 0; the reference and WebGPU devices run it).
 */
const NOT_ON_CPU = /^SOFT_MAX ALiBi /;

function cases(exact: boolean): OpCase[] {
  const all = opCases().filter((c) => !NOT_ON_CPU.test(c.name));
  // with ggml-cpu numerics every case, flash attention's included, is held to 1e-7
  if (!exact) return all.map((c) => ({ ...c, maxNmse: 1e-7 }));
  return all.map((c) =>
    ROUNDED_MATMUL.test(c.name) ? { ...c, maxNmse: 5e-4 } : c.name.startsWith('GELU') ? { ...c, maxNmse: 1e-5 } : c,
  );
}

const strict = new CpuReg('CPU-strict').addDevice({ name: 'CPU-strict', variant: 'strict' });
const odd = new CpuReg('CPU-3').addDevice({ name: 'CPU-3', threads: 3 });

after(async () => {
  await Promise.all([cpuDevice.close(), strict.close(), odd.close()]);
});

async function harness(dev: CpuDevice, exact = true): Promise<void> {
  const failures: string[] = [];
  const ref = exact ? referenceDevice : referenceGgmlCpuDevice();
  for (const c of cases(exact)) {
    const op = /^[A-Z0-9_]+/.exec(c.name)![0];
    const before = dev.opCounts.get(op) ?? 0;
    const [r] = await compareDevices(dev, ref, undefined, [c]);
    if (r.skipped) failures.push(`${r.name}: skipped (${r.skipped})`);
    else if (!r.ok) failures.push(`${r.name}: NMSE ${r.nmse}`);
    else if ((dev.opCounts.get(op) ?? 0) <= before) failures.push(`${r.name}: no ${op} ran on ${dev.name}`);
  }
  assert.deepEqual(failures, []);
}

test('cpu harness: every op x type x shape matches the reference (default build)', async () => {
  assert.equal(cpuDevice.variant, relaxedSimdSupported() ? 'relaxed' : 'strict');
  await harness(cpuDevice);
});

test('cpu harness: the strict SIMD128 build matches the reference too', async () => {
  assert.equal(strict.variant, 'strict');
  await harness(strict);
});

test('cpu harness: an odd thread count (3) splits work correctly', async () => {
  await harness(odd);
});

test('cpu harness: both builds match the reference with ggml-cpu numerics within 1e-7', async () => {
  await harness(cpuDevice, false);
  await harness(strict, false);
});
