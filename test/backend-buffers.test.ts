// Buffers: the transforming buffer type double (sub-range round trips, property tests),
// host buffers, the preferred-host-memory fallback, and weights split across buffers.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { tensorCopy, tensorGet, tensorGetInto, tensorMemset, tensorSet } from '../src/backends/api.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { PreferredHostBufferType } from '../src/backends/host.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { type TransformBuffer, transformReg } from '../src/backends/testing/transform.js';
import { allocTensors } from '../src/ggml/alloc.js';
import * as ops from '../src/ggml/ops.js';
import { quantize } from '../src/ggml/quants/index.js';
import { newTensor, type Tensor, transpose, view } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { type LogLevel, setLogCallback } from '../src/log.js';
import { randomBytes, rngInt, subrangeProperty } from './helpers/buffer-property.js';

after(() => cpuDevice.close());

/** Random sub-range writes, mirrored in a plain host model; every read must agree. */
async function property(ignoreOffset: boolean, seed: number): Promise<void> {
  await subrangeProperty(transformReg('T', { ignoreOffset }).devices()[0].bufferType(), seed);
}

const rng = rngInt;

test('transforming buffer: any sub-range write then read round-trips byte-exactly', async () => {
  for (let seed = 1; seed <= 5; seed++) await property(false, seed);
});

test('transforming buffer: the ignore-offset bug is caught by the same property', async () => {
  await assert.rejects(property(true, 1), assert.AssertionError);
});

test('transforming buffer stores Q4_0 in its own layout, reads back ggml layout', async () => {
  const dev = transformReg('T2').devices()[0];
  const K = 64;
  const src = new Float32Array(K).map((_, i) => Math.sin(i));
  const bytes = new Uint8Array(36);
  quantize(GGMLType.Q4_0, src, bytes, K);
  const t = newTensor(GGMLType.Q4_0, [K], 'w');
  const [buf] = allocTensors([t], dev.bufferType());
  tensorSet(t, bytes);
  const raw = (buf as TransformBuffer).rawBytes().subarray(t.offset, t.offset + 36);
  assert.notDeepEqual(Array.from(raw), Array.from(bytes));
  assert.deepEqual(await tensorGet(t), bytes);
  // a partial block in the middle, across a scale/quant boundary of block 1
  tensorSet(t, new Uint8Array([1, 2, 3, 4]), 16);
  const want = bytes.slice();
  want.set([1, 2, 3, 4], 16);
  assert.deepEqual(await tensorGet(t, 10, 20), want.subarray(10, 30));
  // copy out to host memory and compute with it: results equal the untransformed weights
  const host = newTensor(GGMLType.Q4_0, [K], 'host');
  allocTensors([host], referenceDevice.bufferType());
  await tensorCopy(t, host);
  assert.deepEqual(await tensorGet(host), want);
});

test('views of a transformed tensor read and write through the transform', async () => {
  const dev = transformReg('T3').devices()[0];
  const t = newTensor(GGMLType.Q8_0, [32, 4], 'w');
  allocTensors([t], dev.bufferType());
  const r = rng(9);
  const all = randomBytes(r, t.nbytes);
  tensorSet(t, all);
  const row2 = view(t, [32], [], 2 * t.nb[1]);
  assert.deepEqual(await tensorGet(row2), all.subarray(68, 102));
  tensorSet(row2, new Uint8Array([7, 7, 7]), 1);
  all.set([7, 7, 7], 69);
  assert.deepEqual(await tensorGet(t), all);
});

test('preferred host memory falls back to plain host memory with one warning', () => {
  const msgs: [LogLevel, string][] = [];
  setLogCallback((level, message) => msgs.push([level, message]));
  try {
    const refuse = new PreferredHostBufferType({ name: 'Pinned', device: referenceDevice }, () => null);
    const b1 = refuse.alloc(100);
    const b2 = refuse.alloc(50);
    assert.ok(b1.size >= 100 && b2.size >= 50);
    assert.ok(b1.hostBytes());
    assert.equal(msgs.filter(([l]) => l === 'warn').length, 1);
    assert.match(msgs[0][1], /preferred host memory/);
    const throws = new PreferredHostBufferType({ name: 'Pinned2', device: referenceDevice }, () => {
      throw new Error('no pinning here');
    });
    throws.alloc(10);
    assert.match(msgs[1][1], /no pinning here/);
    let used = 0;
    const ok = new PreferredHostBufferType({ name: 'Pinned3', device: referenceDevice }, (n) => {
      used++;
      return new Uint8Array(new SharedArrayBuffer(n));
    });
    const b3 = ok.alloc(64);
    assert.equal(used, 1);
    assert.ok(b3.hostBytes()!.buffer instanceof SharedArrayBuffer);
    assert.equal(msgs.length, 2);
  } finally {
    setLogCallback(null);
  }
});

test('weights larger than maxSize are split over several buffers and stay usable', async () => {
  const dev = transformReg('Small', { maxSize: 1024 }).devices()[0];
  const ts: Tensor[] = [];
  for (let i = 0; i < 5; i++) ts.push(newTensor(GGMLType.F32, [100], `w${i}`)); // 400 bytes each (512 aligned)
  const bufs = allocTensors(ts, dev.bufferType());
  assert.equal(bufs.length, 3);
  assert.ok(bufs.every((b) => b.size <= 1024 && b.usage === 'weights'));
  assert.throws(() => allocTensors([newTensor(GGMLType.F32, [300])], dev.bufferType()), /buffer limit/);
  // the same on host memory, then compute across the split tensors
  const a = newTensor(GGMLType.F32, [4], 'a');
  const b = newTensor(GGMLType.F32, [4], 'b');
  const hb = referenceDevice.bufferType();
  const limited = Object.create(hb, { maxSize: { value: 64 } });
  const hbufs = allocTensors([a, b], limited);
  assert.equal(hbufs.length, 2);
  tensorSet(a, new Float32Array([1, 2, 3, 4]));
  tensorSet(b, new Float32Array([10, 20, 30, 40]));
  const r = await computeOn(referenceDevice, [ops.add(a, b)], []);
  assert.deepEqual(Array.from(r.values[0]), [11, 22, 33, 44]);
});

test('tensor data transfers check their byte range in one place, for every buffer type', async () => {
  const bufts = [
    referenceDevice.bufferType(),
    cpuDevice.bufferType(),
    cpuDevice.hostBufferType(),
    transformReg('T4').devices()[0]!.bufferType(),
  ];
  for (const buft of bufts) {
    // a view: its range is its own, not its source's
    const root = newTensor(GGMLType.Q8_0, [64, 3]).setName('w');
    const [buf] = allocTensors([root], buft);
    const row = view(root, [64], [], 34 * 2).setName('row');
    const n = root.nbytes;
    const outside = (what: string, range: string, name = 'w', size = n) =>
      new RegExp(`${what}: bytes \\[${range}\\) of tensor '${name}' are outside its ${size}$`);
    assert.throws(
      () => tensorSet(root, new Uint8Array(4), n - 2),
      outside('tensorSet', `${n - 2}, ${n + 2}`),
      buft.name,
    );
    assert.throws(() => tensorSet(root, new Uint8Array(1), -1), outside('tensorSet', '-1, 0'), buft.name);
    assert.throws(() => tensorSet(row, new Uint8Array(35), 34), outside('tensorSet', '34, 69', 'row', 68), buft.name);
    await assert.rejects(tensorGet(root, 1, n), outside('tensorGet', `1, ${n + 1}`), buft.name);
    await assert.rejects(tensorGetInto(root, new Uint8Array(8), n - 4), outside('tensorGet', `${n - 4}, ${n + 4}`));
    assert.throws(() => tensorMemset(root, 0, 0.5, 1), outside('tensorMemset', '0.5, 1.5'), buft.name);
    // nothing was written by the refused calls; a range at the very end is fine
    const bytes = randomBytes(rng(3), n);
    tensorSet(root, bytes);
    tensorSet(row, bytes.subarray(0, 2), 66);
    assert.deepEqual(await tensorGet(root, n - 34, 34), bytes.subarray(n - 34));
    assert.deepEqual(await tensorGet(row, 66, 2), bytes.subarray(0, 2));
    buf!.free();
  }
  assert.throws(
    () => tensorSet(newTensor(GGMLType.F32, [4]), new Uint8Array(4)),
    /tensorSet: tensor .* is not allocated/,
  );
});

test('tensorCopy: a view with strided rows (transposed) crosses buffer types into contiguous memory and back', async () => {
  const dev = transformReg('T-strided').devices()[0];
  const a = newTensor(GGMLType.F32, [3, 5], 'a');
  allocTensors([a], dev.bufferType());
  const values = new Float32Array(15).map((_, i) => i * 1.5 - 4);
  tensorSet(a, values);
  // aᵀ: [5, 3], element (i0, i1) = a[i1, i0]
  const at = transpose(a);
  const host = newTensor(GGMLType.F32, [5, 3], 'host');
  allocTensors([host], referenceDevice.bufferType());
  await tensorCopy(at, host);
  const got = new Float32Array((await tensorGet(host)).buffer.slice(0));
  for (let i1 = 0; i1 < 3; i1++) {
    for (let i0 = 0; i0 < 5; i0++) assert.equal(got[i1 * 5 + i0], values[i0 * 3 + i1]);
  }
  // and back into the strided view, scaled
  tensorSet(
    host,
    got.map((x) => x * 2),
  );
  await tensorCopy(host, at);
  assert.deepEqual(
    new Float32Array((await tensorGet(a)).buffer.slice(0)),
    values.map((x) => x * 2),
  );
});
