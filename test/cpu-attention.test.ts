// Flash attention on the CPU device at model sizes (head dim 64 and 128, GQA groups of 7
// and 8, several key blocks, causal masks with a past, K/V laid out as the KV cache), beyond
// the harness's: against the reference with ggml-cpu numerics (which describes both the
// tiled kernel, 64 query rows and more, and the row-by-row one) and the exact one; and batch
// independence below 64 rows: a query row gives the same bits alone (decoding) as in a
// batch, whatever the other rows and the number of KV cells, below 512 cells. From 512
// cells a token decoded alone takes ggml-cpu's split-KV case (key chunks merged, tiled
// arithmetic): the same bits at any thread count.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CpuReg, cpuDevice } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice, referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { f16ToF32, f32ToF16 } from '../src/ggml/fp16.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, permute } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const strict = new CpuReg('CPU-strict').addDevice({ name: 'CPU-strict', variant: 'strict' });
const three = new CpuReg('CPU-3').addDevice({ name: 'CPU-3', threads: 3 });
const one = new CpuReg('CPU-1').addDevice({ name: 'CPU-1', threads: 1 });
after(async () => {
  await Promise.all([cpuDevice.close(), strict.close(), three.close(), one.close()]);
});

interface Shape {
  D: number;
  nHead: number;
  nHeadKV: number;
  kvType: number;
}

/** Query rows `rows` (of `q`, [D, nHead, nQ] data) against the first nKV cells of the cache data; causal from `past`. */
async function attend(
  dev: Device,
  s: Shape,
  qData: Float32Array,
  kData: ArrayBufferView,
  vData: ArrayBufferView,
  rows: number[],
  nKV: number,
  past: number,
): Promise<Float32Array> {
  const { D, nHead, nHeadKV, kvType } = s;
  const nQ = rows.length;
  const q0 = newTensor(GGMLType.F32, [D, nHead, nQ]);
  const kc = newTensor(kvType, [D, nHeadKV, nKV]);
  const vc = newTensor(kvType, [D, nHeadKV, nKV]);
  const mask = newTensor(GGMLType.F16, [nKV, nQ]);
  const out = ops.flashAttnExt(
    permute(q0, [0, 2, 1, 3]),
    permute(kc, [0, 2, 1, 3]),
    permute(vc, [0, 2, 1, 3]),
    mask,
    1 / Math.sqrt(D),
  );
  const q = new Float32Array(D * nHead * nQ);
  rows.forEach((r, i) => {
    q.set(qData.subarray(r * D * nHead, (r + 1) * D * nHead), i * D * nHead);
  });
  const m = new Uint16Array(nKV * nQ);
  rows.forEach((r, i) => {
    for (let j = 0; j < nKV; j++) m[i * nKV + j] = f32ToF16(j <= past + r ? 0 : Number.NEGATIVE_INFINITY);
  });
  const bytes = (d: ArrayBufferView) => new Uint8Array(d.buffer, d.byteOffset, kc.nbytes);
  const res = await computeOn(
    dev,
    [out],
    [
      [q0, q],
      [kc, bytes(kData)],
      [vc, bytes(vData)],
      [mask, m],
    ],
  );
  res.allocator.free();
  return res.values[0];
}

function data(s: Shape, nQ: number, nKV: number) {
  const q = randomData(newTensor(GGMLType.F32, [s.D, s.nHead, nQ]), 31) as Float32Array;
  for (let i = 0; i < q.length; i++) q[i] *= 3; // sharper softmax
  const k = randomData(newTensor(s.kvType, [s.D, s.nHeadKV, nKV]), 32);
  const v = randomData(newTensor(s.kvType, [s.D, s.nHeadKV, nKV]), 33);
  return { q, k, v };
}

const SHAPES: [string, Shape][] = [
  ['qwen2.5-0.5b (64, 14/2, F16)', { D: 64, nHead: 14, nHeadKV: 2, kvType: GGMLType.F16 }],
  ['tinyllama (64, 32/4, F16)', { D: 64, nHead: 32, nHeadKV: 4, kvType: GGMLType.F16 }],
  ['head dim 128, 8/8, F32', { D: 128, nHead: 8, nHeadKV: 8, kvType: GGMLType.F32 }],
  ['head dim 64, 6/2, Q8_0', { D: 64, nHead: 6, nHeadKV: 2, kvType: GGMLType.Q8_0 }],
];

for (const [name, s] of SHAPES) {
  test(`cpu flash attention ${name}: 70 queries x 300 cells and 1 x 300, against the reference`, async () => {
    const nKV = 300;
    const d = data(s, 70, nKV);
    for (const [rows, past] of [
      [Array.from({ length: 70 }, (_, i) => i), 200],
      [[0], 261],
    ] as [number[], number][]) {
      const ggml = await attend(referenceGgmlCpuDevice(), s, d.q, d.k, d.v, rows, nKV, past);
      const exact = await attend(referenceDevice, s, d.q, d.k, d.v, rows, nKV, past);
      for (const dev of [cpuDevice, strict, three]) {
        const got = await attend(dev, s, d.q, d.k, d.v, rows, nKV, past);
        const e = nmse(got, ggml);
        assert.ok(e <= 1e-7, `${dev.name} ${rows.length} rows vs ggml-cpu numerics: NMSE ${e}`);
        // the exact reference does not round the query rows to K's type
        const x = nmse(got, exact);
        assert.ok(x <= 5e-4, `${dev.name} ${rows.length} rows vs exact: NMSE ${x}`);
      }
    }
  });
}

test('cpu flash attention: a query row gives the same bits alone as in a batch', async () => {
  for (const [name, s] of SHAPES.slice(0, 2)) {
    const nQ = 45;
    const past = 200;
    const d = data(s, nQ, 511);
    for (const dev of [cpuDevice, strict, three]) {
      const batch = await attend(
        dev,
        s,
        d.q,
        d.k,
        d.v,
        Array.from({ length: nQ }, (_, i) => i),
        511,
        past,
      );
      const width = s.D * s.nHead;
      for (const r of [0, 1, 6, 7, 31, 44]) {
        const want = batch.subarray(r * width, (r + 1) * width);
        // alone, with the same cells and with only the first 256 (the mask hides the rest)
        for (const nKV of [511, 256]) {
          const one = await attend(dev, s, d.q, d.k, d.v, [r], nKV, past);
          assert.deepEqual(one, want, `${name} ${dev.name} row ${r} alone, ${nKV} cells`);
        }
        // in another batch, with other neighbours
        const pair = await attend(dev, s, d.q, d.k, d.v, [r, (r + 17) % nQ], 511, past);
        assert.deepEqual(pair.subarray(0, width), want, `${name} ${dev.name} row ${r} with another row`);
      }
    }
  }
});

test('cpu flash attention: one token against 1000 cells (split case), against the reference, same bits at 1, 2 and 3 threads', async () => {
  for (const [name, s] of SHAPES) {
    const nKV = 1000;
    const d = data(s, 1, nKV);
    for (const past of [999, 600, 100]) {
      const ggml = await attend(referenceGgmlCpuDevice(), s, d.q, d.k, d.v, [0], nKV, past);
      const exact = await attend(referenceDevice, s, d.q, d.k, d.v, [0], nKV, past);
      let first: Float32Array | null = null;
      for (const dev of [one, cpuDevice, three, strict]) {
        const got = await attend(dev, s, d.q, d.k, d.v, [0], nKV, past);
        const e = nmse(got, ggml);
        assert.ok(e <= 1e-7, `${name} ${dev.name} past ${past} vs ggml-cpu numerics: NMSE ${e}`);
        const x = nmse(got, exact);
        assert.ok(x <= 5e-4, `${name} ${dev.name} past ${past} vs exact: NMSE ${x}`);
        if (dev !== strict) {
          if (first) assert.deepEqual(got, first, `${name} ${dev.name} past ${past}: same bits as 1 thread`);
          else first = got;
        }
      }
    }
  }
});

// The kernels widen each F16 K and V row of the cache eight halves at a time, with one
// test for a zero, subnormal, infinite or NaN half among them (those go the long way).
// With one visible key the output is that key's V row itself: every zero, subnormal and
// a spread of normal halves, in groups of eight with and without such a half, come back
// exact, by the row kernel (300 cells) and by the split one (1000 cells).
test('cpu flash attention: F16 V rows of zeros, subnormals and normals come back exact', async () => {
  const D = 256;
  const nHead = 32;
  const halves: number[] = [];
  for (let h = 0; h < 0x800; h++) halves.push(h, h | 0x8000); // zeros and subnormals
  for (let i = 0; halves.length < D * nHead; i++) halves.push(((0x0400 + i * 7919) % 0x7800) + 0x0400 * (i % 2)); // normals
  // groups of eight: first the special ones packed, then mixed with normals
  const v0 = Uint16Array.from(halves.slice(0, D * nHead));
  for (let i = 0; i < v0.length / 2; i += 16) [v0[i + 3], v0[v0.length - 1 - i]] = [v0[v0.length - 1 - i], v0[i + 3]];
  const s: Shape = { D, nHead, nHeadKV: nHead, kvType: GGMLType.F16 };
  for (const nKV of [300, 1000]) {
    const d = data(s, 1, nKV);
    const v = new Uint16Array((d.v as Uint16Array).buffer.slice(0));
    v.set(v0, 0); // cell 0, every head
    const got = await attend(cpuDevice, s, d.q, d.k, v, [0], nKV, 0);
    for (let i = 0; i < D * nHead; i++) {
      const want = f16ToF32(v0[i]);
      assert.ok(got[i] === want, `${nKV} cells: half 0x${v0[i].toString(16)} gave ${got[i]}, want ${want}`);
    }
  }
});
