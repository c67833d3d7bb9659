// Models larger than one wasm memory: with small arenas (16 MiB here instead of 4 GiB),
// weights split over buffers in several arenas, and ops whose operands live in different
// arenas are staged into one and still match the reference.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { tensorSet } from '../src/backends/api.js';
import type { CpuBuffer } from '../src/backends/cpu/buffer.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { allocTensors } from '../src/ggml/alloc.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const small = new CpuReg('CPU-small').addDevice({ name: 'CPU-small', arenaPages: 256 });
after(() => small.close());

async function run(dev: Device) {
  const w1 = newTensor(GGMLType.Q4_0, [1024, 8192], 'w1');
  const w2 = newTensor(GGMLType.Q8_0, [1024, 4096], 'w2');
  const w3 = newTensor(GGMLType.F16, [1024, 3000], 'w3');
  const bufs = allocTensors([w1, w2, w3], dev.bufferType(), 'weights');
  [w1, w2, w3].forEach((w, i) => {
    tensorSet(w, randomData(w, 100 + i));
  });
  const idx = newTensor(GGMLType.I32, [3]);
  const x = ops.getRows(w1, idx);
  const y = ops.mulMat(w3, x);
  const z = ops.mulMat(w2, ops.scale(x, 0.5));
  const r = await computeOn(dev, [x, y, z], [[idx, new Int32Array([5, 8000, 4097])]]);
  return { bufs, values: r.values, free: () => r.allocator.free() };
}

test('cpu arenas: buffers over several memories, ops staged across them', async () => {
  assert.ok(small.bufferType().maxSize < 16 * 2 ** 20);
  const got = await run(small);
  const arenas = new Set(got.bufs.map((b) => (b as CpuBuffer).arena.index));
  assert.ok(got.bufs.length >= 2 && arenas.size >= 2, `${got.bufs.length} buffers in ${arenas.size} arenas`);
  const want = await run(referenceDevice);
  assert.ok(nmse(got.values[0], want.values[0]) === 0, 'get_rows');
  assert.ok(nmse(got.values[1], want.values[1]) < 1e-7, 'F16 matmul');
  assert.ok(nmse(got.values[2], want.values[2]) < 5e-4, 'Q8_0 matmul');
  got.free();
  for (const b of got.bufs) b.free();
});
