// The CPU device's buffers: Q4_0/Q8_0 (and Q4_K, Q6_K, Q5_0, MXFP4, Q4_0 weights: k4) tensors are stored 4-row interleaved and every
// sub-range write and read must still see ggml's bytes (randomized offsets and sizes,
// memsets, views); the plain host buffer type keeps ggml's layout.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { tensorGet, tensorSet } from '../src/backends/api.js';
import type { CpuBuffer } from '../src/backends/cpu/buffer.js';
import { q4_0Layout } from '../src/backends/cpu/engine-flags.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { Rep4Layout } from '../src/backends/cpu/layout.js';
import { K4Layout } from '../src/backends/cpu/layout-k.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn, withQ4_0Layout } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { allocTensors } from '../src/ggml/alloc.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, view } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { mirroredSubranges, randomBytes, rngInt } from './helpers/buffer-property.js';

after(() => cpuDevice.close());

const SHAPES: [number, number[]][] = [
  [GGMLType.Q4_0, [64, 7]],
  [GGMLType.Q8_0, [96, 9]],
  [GGMLType.Q4_0, [32, 4, 3]],
  [GGMLType.Q8_0, [64, 6, 2, 2]],
  [GGMLType.Q4_0, [256, 13]],
  [GGMLType.Q8_0, [32, 3]],
  [GGMLType.F16, [10, 3]],
  [GGMLType.Q4_K, [256, 7]],
  [GGMLType.Q4_K, [512, 9]],
  [GGMLType.Q4_K, [256, 4, 3]],
  [GGMLType.Q5_0, [64, 7]],
  [GGMLType.Q5_0, [96, 9, 2]],
  [GGMLType.Q6_K, [256, 7]],
  [GGMLType.Q6_K, [512, 5, 2]],
  [GGMLType.MXFP4, [64, 7]],
  [GGMLType.MXFP4, [96, 9, 2]],
];

test('cpu buffer: Q8_0 (and Q4_0 outside the k4 layout) are stored rep4-interleaved, not in ggml layout', async () => {
  const t = newTensor(GGMLType.Q8_0, [64, 8]);
  const [buf] = allocTensors([t], cpuDevice.bufferType()) as CpuBuffer[];
  assert.equal(cpuDevice.bufferType().isHost, false);
  const q4 = newTensor(GGMLType.Q4_0, [64, 8]);
  const [qw] = await withQ4_0Layout('rep4', () => allocTensors([q4], cpuDevice.bufferType()) as CpuBuffer[]);
  assert.ok(qw.layoutOf(q4) instanceof Rep4Layout);
  qw.free();
  assert.ok(buf.layoutOf(t) instanceof Rep4Layout);
  const data = randomBytes(rngInt(7), t.nbytes);
  tensorSet(t, data);
  const raw = buf.arena.bytes().subarray(buf.base + t.offset, buf.base + t.offset + t.nbytes);
  assert.notDeepEqual(Uint8Array.from(raw), data);
  // row 1's first scale sits right after row 0's in the first block column
  assert.equal(raw[2], data[68]);
  assert.equal(raw[3], data[69]);
  buf.free();
  // Q4_0 that kernels may write (not weights) keeps rep4 in either build
  const q = newTensor(GGMLType.Q4_0, [64, 8]);
  const [qb] = allocTensors([q], cpuDevice.bufferType(), 'any') as CpuBuffer[];
  assert.ok(qb.layoutOf(q) instanceof Rep4Layout);
  qb.free();
});

test('cpu buffer: Q4_0 weights can take the k4 layout (relaxed-SIMD kernels; rep4 otherwise)', async () => {
  const t = newTensor(GGMLType.Q4_0, [64, 8]);
  const [buf] = await withQ4_0Layout('k4', () => allocTensors([t], cpuDevice.bufferType()) as CpuBuffer[]);
  if (cpuDevice.variant !== 'relaxed') {
    assert.ok(buf.layoutOf(t) instanceof Rep4Layout);
    buf.free();
    return;
  }
  assert.ok(buf.layoutOf(t) instanceof K4Layout);
  const data = randomBytes(rngInt(8), t.nbytes);
  tensorSet(t, data);
  const raw = buf.arena.bytes().subarray(buf.base + t.offset, buf.base + t.offset + t.nbytes);
  // row 1's d right after row 0's; then four quant bytes of each row in turn
  assert.equal(raw[2], data[36]);
  assert.equal(raw[3], data[37]);
  assert.deepEqual(Array.from(raw.subarray(8, 16)), [...data.subarray(2, 6), ...data.subarray(38, 42)]);
  assert.deepEqual(Array.from(raw.subarray(24, 28)), Array.from(data.subarray(6, 10)));
  buf.free();
});

for (const seed of [1, 2, 3]) {
  test(`cpu buffer: random sub-range writes, memsets and reads round-trip (seed ${seed})`, async () => {
    const r = rngInt(seed);
    // Q4_0 weights once more in the layout this engine does not choose by itself
    const other = q4_0Layout() === 'k4' ? 'rep4' : 'k4';
    const shapes = [
      ...SHAPES.map((s) => [...s, undefined] as const),
      ...SHAPES.filter(([t]) => t === GGMLType.Q4_0).map((s) => [...s, other] as const),
    ];
    for (const [type, ne, layout] of shapes) {
      const t = newTensor(type, ne, 't');
      const model = newTensor(type, ne, 'm');
      const alloc = () => allocTensors([newTensor(GGMLType.F32, [3], 'pad'), t], cpuDevice.bufferType());
      const bufs = layout ? await withQ4_0Layout(layout, alloc) : alloc();
      const hbufs = allocTensors([model], referenceDevice.bufferType());
      const full = randomBytes(r, t.nbytes);
      tensorSet(t, full);
      tensorSet(model, full);
      await mirroredSubranges(t, model, r, 80, `${type} [${ne}]`);
      assert.deepEqual(await tensorGet(t), await tensorGet(model));
      // a view of some rows reads and writes through the same mapping
      const rb = t.nb[1];
      const v = view(t, [ne[0], 2], [rb], rb);
      const vm = view(model, [ne[0], 2], [rb], rb);
      const data = randomBytes(r, v.nbytes);
      tensorSet(v, data, 0);
      tensorSet(vm, data, 0);
      assert.deepEqual(await tensorGet(v), await tensorGet(vm));
      assert.deepEqual(await tensorGet(t), await tensorGet(model));
      for (const b of [...bufs, ...hbufs]) b.free();
    }
  });
}

test('cpu buffer: MXFP4 is stored interleaved (relaxed-SIMD kernels only)', () => {
  const t = newTensor(GGMLType.MXFP4, [64, 8]);
  const [buf] = allocTensors([t], cpuDevice.bufferType()) as CpuBuffer[];
  if (cpuDevice.variant !== 'relaxed') {
    assert.equal(buf.layoutOf(t), undefined);
    buf.free();
    return;
  }
  assert.ok(buf.layoutOf(t) instanceof K4Layout);
  const data = randomBytes(rngInt(10), t.nbytes);
  tensorSet(t, data);
  const raw = buf.arena.bytes().subarray(buf.base + t.offset, buf.base + t.offset + t.nbytes);
  // the four rows' exponent bytes, then four quant bytes of each row in turn (rows 34 bytes)
  assert.deepEqual(Array.from(raw.subarray(0, 4)), [data[0], data[34], data[68], data[102]]);
  assert.deepEqual(Array.from(raw.subarray(4, 12)), [...data.subarray(1, 5), ...data.subarray(35, 39)]);
  assert.deepEqual(Array.from(raw.subarray(20, 24)), Array.from(data.subarray(5, 9)));
  // the second block column
  assert.equal(raw[68 + 1], data[34 + 17]);
  buf.free();
});

test('cpu buffer: Q4_K is stored interleaved (relaxed-SIMD kernels only)', () => {
  const t = newTensor(GGMLType.Q4_K, [512, 8]);
  const [buf] = allocTensors([t], cpuDevice.bufferType()) as CpuBuffer[];
  if (cpuDevice.variant !== 'relaxed') {
    assert.equal(buf.layoutOf(t), undefined);
    buf.free();
    return;
  }
  assert.ok(buf.layoutOf(t) instanceof K4Layout);
  const data = randomBytes(rngInt(9), t.nbytes);
  tensorSet(t, data);
  const raw = buf.arena.bytes().subarray(buf.base + t.offset, buf.base + t.offset + t.nbytes);
  assert.notDeepEqual(Uint8Array.from(raw), data);
  // row 1's d sits right after row 0's in the first super-block column
  assert.equal(raw[2], data[288]);
  assert.equal(raw[3], data[289]);
  buf.free();
});

for (const name of ['Q4_K', 'Q5_0', 'Q6_K', 'Q4_0', 'MXFP4'] as const) {
  test(`cpu buffer: GET_ROWS and products with row views of interleaved ${name} weights match the reference`, async () => {
    // 11 rows: two interleaved groups and three plain rows; views start inside a group
    const run = async (dev: typeof cpuDevice | typeof referenceDevice) => {
      const a = newTensor(GGMLType[name], [512, 11], 'a');
      // (Q4_0 in the k4 layout whatever this engine would choose)
      const bufs = await withQ4_0Layout('k4', () => allocTensors([a], dev.bufferType(), 'weights'));
      tensorSet(a, randomData(a, 31));
      const idx = newTensor(GGMLType.I32, [6], 'idx');
      const x = newTensor(GGMLType.F32, [512, 3], 'x');
      const rb = a.nb[1];
      const v = view(a, [512, 5], [rb], 3 * rb);
      const outs = [ops.getRows(a, idx), ops.mulMat(v, x), ops.mulMat(a, x)];
      const r = await computeOn(dev, outs, [
        [idx, Int32Array.from([0, 5, 3, 10, 7, 8])],
        [x, randomData(x, 32)],
      ]);
      for (const b of bufs) b.free();
      r.allocator.free();
      return r.values;
    };
    const got = await run(cpuDevice);
    const want = await run(referenceDevice);
    assert.deepEqual(got[0], want[0]);
    assert.ok(nmse(got[1], want[1]) < 5e-4, `view product: NMSE ${nmse(got[1], want[1])}`);
    assert.ok(nmse(got[2], want[2]) < 5e-4, `product: NMSE ${nmse(got[2], want[2])}`);
  });
}

test('cpu host buffer type keeps ggml layout and exposes its bytes', async () => {
  const host = cpuDevice.hostBufferType();
  assert.equal(host.isHost, true);
  const t = newTensor(GGMLType.Q4_0, [64, 8]);
  const [buf] = allocTensors([t], host);
  const data = randomBytes(rngInt(5), t.nbytes);
  tensorSet(t, data);
  assert.deepEqual(Uint8Array.from(buf.hostBytes()!.subarray(t.offset, t.offset + t.nbytes)), data);
  assert.deepEqual(await tensorGet(t), data);
  buf.free();
});

test('cpu buffer types report a 4 GiB-bounded maxSize', () => {
  const m = cpuDevice.bufferType().maxSize;
  assert.ok(m > 3 * 2 ** 30 && m < 2 ** 32, `${m}`);
});
