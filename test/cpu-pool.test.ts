// The worker pool: the main thread's event loop keeps running while kernels compute, the
// thread count is configurable, kernel errors surface as rejections, and an idle device
// never keeps a process alive.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { tensorSet } from '../src/backends/api.js';
import { CpuReg, cpuDevice } from '../src/backends/cpu/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { randomData } from '../src/backends/testing/op-harness.js';
import { allocTensors } from '../src/ggml/alloc.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const run = promisify(execFile);
after(() => cpuDevice.close());

test('cpu pool: the event loop stays free during a long compute', async () => {
  const a = newTensor(GGMLType.F32, [2048, 2048]);
  const bufs = allocTensors([a], cpuDevice.bufferType(), 'weights');
  tensorSet(a, randomData(a, 1));
  const b = newTensor(GGMLType.F32, [2048, 64]);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const t0 = performance.now();
  let outs = [ops.mulMat(a, b)];
  for (let i = 0; i < 6; i++) outs = [ops.mulMat(a, outs[0])];
  await computeOn(cpuDevice, outs, [[b, randomData(b, 2)]]);
  const ms = performance.now() - t0;
  clearInterval(timer);
  for (const x of bufs) x.free();
  assert.ok(ms > 20, `compute took ${ms} ms`);
  assert.ok(ticks >= ms / 10, `${ticks} timer ticks in ${ms.toFixed(1)} ms`);
});

test('cpu pool: thread count from initBackend("threads=N") and the device option', async () => {
  const dev = new CpuReg('CPU-1').addDevice({ name: 'CPU-1', threads: 1 });
  assert.equal(dev.defaultThreads, 1);
  const be = dev.initBackend('threads=3') as unknown as { threads: number };
  assert.equal(be.threads, 3);
  const x = newTensor(GGMLType.F32, [33, 7]);
  const r = await computeOn(dev, [ops.silu(x)], [[x, new Float32Array(33 * 7).fill(1)]]);
  assert.ok(Math.abs(r.values[0][0] - 1 / (1 + Math.exp(-1))) < 1e-6);
  assert.equal(dev.workers().size, 1);
  dev.workers(3);
  assert.equal(dev.workers().size, 3);
  await dev.close();
});

test('cpu pool: an out-of-range index fails the compute with an error', async () => {
  const a = newTensor(GGMLType.F32, [8, 4]);
  const idx = newTensor(GGMLType.I32, [1]);
  await assert.rejects(computeOn(cpuDevice, [ops.getRows(a, idx)], [[idx, new Int32Array([9])]]), /cpu kernel failed/);
  // the pool still works afterwards
  const r = await computeOn(
    cpuDevice,
    [ops.getRows(a, idx)],
    [
      [a, new Float32Array(32).fill(2)],
      [idx, new Int32Array([3])],
    ],
  );
  assert.equal(r.values[0][0], 2);
});

test('cpu pool: a process that used the device exits by itself', async () => {
  const script = `
    import { cpuDevice } from '${new URL('../src/backends/cpu/index.js', import.meta.url).href}';
    import { computeOn } from '${new URL('../src/backends/testing/compute.js', import.meta.url).href}';
    import * as ops from '${new URL('../src/ggml/ops.js', import.meta.url).href}';
    import { newTensor } from '${new URL('../src/ggml/tensor.js', import.meta.url).href}';
    const x = newTensor(0, [16]);
    const r = await computeOn(cpuDevice, [ops.scale(x, 2)], [[x, new Float32Array(16).fill(1.5)]]);
    console.log(r.values[0][0], cpuDevice.variant);
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 20000 });
  assert.match(stdout, /^3 (relaxed|strict)/);
  const strict = await run(process.execPath, ['--input-type=module', '-e', script], {
    timeout: 20000,
    env: { ...process.env, LLAMA_TS_CPU_SIMD: 'strict' },
  });
  assert.match(strict.stdout, /^3 strict/);
});
