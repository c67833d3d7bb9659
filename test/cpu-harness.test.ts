// The CPU device against the reference device: every case of the op harness, with both
// kernel builds (relaxed SIMD and plain SIMD128), each op checked to have run on the CPU
// device (no case skipped, the device's op counter moved). Quantized matrix products
// compare with activations quantized to 8 bits, as ggml's: NMSE up to 5e-4 (as
// test-backend-ops); everything else keeps the harness's 1e-7.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { CpuDevice } from '../src/backends/cpu/index.js';
import { CpuReg, cpuDevice, relaxedSimdSupported } from '../src/backends/cpu/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { compareDevices, type OpCase, opCases } from '../src/backends/testing/op-harness.js';

const QUANT_MATMUL = /^MUL_MAT\((?!F32|F16|BF16)/;

function cases(): OpCase[] {
  return opCases().map((c) => (QUANT_MATMUL.test(c.name) ? { ...c, maxNmse: 5e-4 } : c));
}

const strict = new CpuReg('CPU-strict').addDevice({ name: 'CPU-strict', variant: 'strict' });
const odd = new CpuReg('CPU-3').addDevice({ name: 'CPU-3', threads: 3 });

after(async () => {
  await Promise.all([cpuDevice.close(), strict.close(), odd.close()]);
});

async function harness(dev: CpuDevice): Promise<void> {
  const failures: string[] = [];
  for (const c of cases()) {
    const op = /^[A-Z_]+/.exec(c.name)![0];
    const before = dev.opCounts.get(op) ?? 0;
    const [r] = await compareDevices(dev, referenceDevice, undefined, [c]);
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
