// The reference device's mixture-of-experts ops against independent computations: each
// MUL_MAT_ID slot equals a MUL_MAT with the chosen expert, ARGSORT orders ties exactly as
// libstdc++'s std::sort (ggml-cpu's), sinks join the softmax as one more logit per head,
// and the small ops against their formulas.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice, referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { stdSort } from '../src/backends/reference/ops/sort.js';
import { computeOn, type Inputs } from '../src/backends/testing/compute.js';
import { randomData, WEIGHT_TYPES } from '../src/backends/testing/op-harness.js';
import { f16ToF32, f32ToF16 } from '../src/ggml/fp16.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, permute, type Tensor, view } from '../src/ggml/tensor.js';
import { GGMLType, traitsOf } from '../src/ggml/types.js';

const { F32, F16, I32 } = GGMLType;

async function run(out: Tensor, inputs: Inputs, dev = referenceDevice): Promise<Float32Array> {
  return (await computeOn(dev, [out], inputs)).values[0];
}

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-6): void {
  assert.equal(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    assert.ok(
      Math.abs(actual[i] - expected[i]) <= tol * Math.max(1, Math.abs(expected[i])),
      `[${i}] = ${actual[i]}, expected ${expected[i]}`,
    );
  }
}

/** Orders of std::sort (descending, comparator a > b) from libstdc++ (g++ 11), ties included. */
const LIBSTDCXX_ORDERS: { values: number[]; order: number[] }[] = [
  {
    values: [2, 2, 0, 2, 1, 1, 0, 2, 2, 2, 2, 1, 1, 2, 2, 1, 1, 2, 0, 2],
    order: [10, 19, 17, 14, 13, 0, 9, 8, 7, 3, 1, 5, 11, 12, 4, 15, 16, 6, 2, 18],
  },
  {
    values: [
      0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 0,
      0, 1,
    ],
    order: [
      20, 39, 36, 35, 33, 32, 31, 30, 29, 27, 25, 24, 19, 15, 13, 1, 2, 3, 7, 10, 14, 18, 38, 37, 16, 17, 34, 4, 5, 6,
      0, 8, 28, 9, 26, 12, 11, 23, 22, 21,
    ],
  },
  {
    values: [
      4, 4, 0, 1, 4, 1, 0, 2, 2, 2, 0, 2, 3, 1, 1, 2, 3, 0, 0, 0, 4, 2, 4, 3, 0, 1, 4, 2, 0, 0, 4, 2, 2, 1, 2, 2, 1, 1,
      3, 3, 2, 4, 3, 0, 4, 3, 4, 3, 3, 1, 2, 3, 3, 1, 3, 0, 2, 4, 4, 4, 2, 3, 2, 0, 0, 0, 3, 0, 2, 3, 2, 0, 1, 0, 0, 0,
      2, 0, 4, 3, 4, 0, 2, 0, 4, 1, 0, 0, 0, 2, 2, 4, 0, 2, 2, 3, 2, 3, 0, 3, 2, 2, 1, 4, 1, 0, 4, 4, 2, 1, 2, 2, 0, 0,
      4, 4, 2, 3, 1, 3, 3, 4, 3, 4, 0, 0, 4, 4,
    ],
    order: [
      84, 26, 30, 41, 44, 46, 57, 58, 59, 78, 80, 1, 91, 103, 106, 107, 114, 115, 121, 123, 126, 127, 22, 0, 4, 20, 47,
      23, 48, 51, 52, 54, 16, 61, 66, 69, 79, 12, 95, 97, 99, 117, 119, 120, 122, 45, 42, 38, 39, 76, 96, 68, 94, 70,
      93, 108, 116, 90, 27, 89, 110, 35, 34, 111, 82, 11, 56, 8, 9, 50, 101, 100, 40, 31, 15, 7, 60, 62, 32, 21, 5, 109,
      102, 104, 33, 13, 49, 72, 118, 36, 85, 37, 25, 14, 3, 53, 28, 24, 2, 125, 124, 29, 86, 6, 113, 112, 73, 17, 18,
      43, 19, 55, 63, 64, 65, 67, 71, 105, 74, 75, 77, 81, 83, 87, 88, 10, 92, 98,
    ],
  },
  {
    values: [
      16, 29, 3, 8, 5, 15, 29, 10, 17, 22, 1, 23, 39, 21, 23, 17, 35, 2, 0, 6, 19, 7, 15, 38, 14, 6, 19, 10, 22, 11, 35,
      32, 30, 36, 18, 31, 28, 18, 13, 31, 23, 25, 32, 5, 21, 11, 2, 25, 37, 5, 4, 9, 33, 17, 35, 27, 22, 38, 35, 17, 18,
      23, 7, 14, 5, 28, 32, 5, 12, 15, 34, 15, 5, 1, 5, 33, 35, 2, 23, 29, 18, 31, 27, 32, 38, 1, 14, 39, 11, 11, 17,
      28, 31, 19, 12, 18, 10, 14, 32, 15, 30, 13, 10, 39, 26, 25, 15, 8, 35, 18, 26, 24, 9, 12, 18, 27, 21, 6, 15, 0,
      37, 9, 20, 28, 5, 17, 12, 30,
    ],
    order: [
      103, 87, 12, 57, 84, 23, 120, 48, 33, 58, 16, 76, 54, 108, 30, 70, 52, 75, 42, 31, 66, 83, 98, 81, 92, 39, 35,
      100, 32, 127, 79, 1, 6, 65, 123, 36, 91, 82, 55, 115, 104, 110, 105, 47, 41, 111, 14, 78, 61, 40, 11, 28, 56, 9,
      116, 13, 44, 122, 26, 93, 20, 95, 80, 114, 109, 34, 37, 60, 53, 125, 90, 8, 15, 59, 0, 99, 5, 22, 106, 118, 71,
      69, 63, 97, 24, 86, 38, 101, 113, 126, 94, 68, 29, 89, 88, 45, 102, 27, 96, 7, 51, 121, 112, 107, 3, 21, 62, 117,
      19, 25, 64, 67, 124, 72, 74, 43, 49, 4, 50, 2, 77, 46, 17, 10, 85, 73, 119, 18,
    ],
  },
];

test('stdSort orders ties exactly as libstdc++ std::sort', () => {
  for (const c of LIBSTDCXX_ORDERS) {
    const idx = Int32Array.from(c.values.keys());
    stdSort(idx, (a, b) => c.values[a] > c.values[b]);
    assert.deepEqual(Array.from(idx), c.order);
  }
});

test('ARGSORT desc and asc, and argsortTopK keeps the first k', async () => {
  const c = LIBSTDCXX_ORDERS[2];
  const a = newTensor(F32, [128, 1]);
  const desc = await run(ops.argsort(a, ops.SortOrder.DESC), [[a, Float32Array.from(c.values)]]);
  assert.deepEqual(Array.from(desc), c.order);
  const top = await run(ops.argsortTopK(a, 8), [[a, Float32Array.from(c.values)]]);
  assert.deepEqual(Array.from(top), c.order.slice(0, 8));
  const asc = await run(ops.argsort(a, ops.SortOrder.ASC), [[a, Float32Array.from(c.values)]]);
  for (let i = 1; i < 128; i++) assert.ok(c.values[asc[i - 1]] <= c.values[asc[i]]);
});

test('MUL_MAT_ID: every slot is a MUL_MAT with the chosen expert, for every weight type', async () => {
  for (const wt of WEIGHT_TYPES) {
    const K = traitsOf(wt).blockSize === 256 ? 256 : 64;
    const nE = 3;
    const M = 5;
    const nT = 4;
    const as = newTensor(wt, [K, M, nE]);
    const b = newTensor(F32, [K, 2, nT]);
    const ids = newTensor(I32, [2, nT]);
    const idData = new Int32Array([2, 0, 1, 1, 0, 2, 2, 2]);
    const asData = randomData(as, 11);
    const bData = randomData(b, 12) as Float32Array;
    for (const dev of [referenceDevice, referenceGgmlCpuDevice()]) {
      const got = await run(
        ops.mulMatId(as, b, ids),
        [
          [as, asData],
          [b, bData],
          [ids, idData],
        ],
        dev,
      );
      for (let t = 0; t < nT; t++) {
        for (let i = 0; i < 2; i++) {
          const e = idData[i + 2 * t];
          const a1 = newTensor(wt, [K, M, nE]);
          const one = view(a1, [K, M], [a1.nb[1]], e * a1.nb[2]);
          const col = newTensor(F32, [K, 1]);
          const colData = bData.slice((i + 2 * t) * K, (i + 2 * t + 1) * K);
          const want = await run(
            ops.mulMat(one, col),
            [
              [a1, asData],
              [col, colData],
            ],
            dev,
          );
          const slot = got.slice((i + 2 * t) * M, (i + 2 * t + 1) * M);
          assert.deepEqual(Array.from(slot), Array.from(want), `${traitsOf(wt).name} token ${t} slot ${i}`);
        }
      }
    }
  }
});

test('MUL_MAT_ID with one row per token reads it for every slot; bad ids are errors', async () => {
  const as = newTensor(F32, [4, 2, 3]);
  const b = newTensor(F32, [4, 1, 2]);
  const ids = newTensor(I32, [2, 2]);
  const asData = new Float32Array(24).map((_, i) => i);
  const bData = new Float32Array([1, 0, 0, 0, 0, 0, 0, 1]);
  const r = await run(ops.mulMatId(as, b, ids), [
    [as, asData],
    [b, bData],
    [ids, new Int32Array([1, 2, 0, 1])],
  ]);
  // token 0 reads element 0 of rows; token 1 element 3
  assert.deepEqual(Array.from(r), [8, 12, 16, 20, 3, 7, 11, 15]);
  await assert.rejects(
    run(ops.mulMatId(as, b, ids), [
      [as, asData],
      [b, bData],
      [ids, new Int32Array([1, 3, 0, 1])],
    ]),
    /expert id 3/,
  );
});

test('ADD_ID adds each slot its expert bias row', async () => {
  const a = newTensor(F32, [2, 2, 2]);
  const b = newTensor(F32, [2, 3]);
  const ids = newTensor(I32, [2, 2]);
  const r = await run(ops.addId(a, b, ids), [
    [a, new Float32Array([1, 2, 3, 4, 5, 6, 7, 8])],
    [b, new Float32Array([10, 20, 30, 40, 50, 60])],
    [ids, new Int32Array([2, 0, 1, 1])],
  ]);
  assert.deepEqual(Array.from(r), [51, 62, 13, 24, 35, 46, 37, 48]);
});

test('SUM_ROWS, DIV, SIGMOID, CLAMP, SWIGLU_OAI, CONCAT', async () => {
  const a = newTensor(F32, [3, 2]);
  const x = new Float32Array([1, 2, 3, -4, 5, 0.5]);
  close(await run(ops.sumRows(a), [[a, x]]), [6, 1.5]);
  const d = newTensor(F32, [1, 2]);
  close(
    await run(ops.div(a, d), [
      [a, x],
      [d, new Float32Array([2, -0.5])],
    ]),
    [0.5, 1, 1.5, 8, -10, -1],
  );
  close(
    await run(ops.sigmoid(a), [[a, x]]),
    Array.from(x, (v) => 1 / (1 + Math.exp(-v))),
  );
  close(await run(ops.clamp(a, -1, 2.5), [[a, x]]), [1, 2, 2.5, -1, 2.5, 0.5]);
  const u = newTensor(F32, [3, 2]);
  const ux = new Float32Array([0.5, -9, 9, 1, 2, 3]);
  const sw = (g: number, v: number) => {
    const gx = Math.min(g, 4);
    return (gx / (1 + Math.exp(-1.702 * gx))) * (Math.min(Math.max(v, -4), 4) + 1);
  };
  close(
    await run(ops.swigluOai(a, u, 1.702, 4), [
      [a, x],
      [u, ux],
    ]),
    Array.from(x, (g, i) => sw(g, ux[i])),
  );
  const p0 = newTensor(F32, [2, 3]); // permuted to [3, 2]
  const c = await run(ops.concat(permute(p0, [1, 0, 2, 3]), a, 1), [
    [p0, new Float32Array([1, 2, 3, 4, 5, 6])],
    [a, x],
  ]);
  assert.deepEqual(Array.from(c), [1, 3, 5, 2, 4, 6, 1, 2, 3, -4, 5, 0.5]);
  const c0 = await run(ops.concat(a, a, 0), [[a, x]]);
  assert.deepEqual(Array.from(c0), [1, 2, 3, 1, 2, 3, -4, 5, 0.5, -4, 5, 0.5]);
});

test('FLASH_ATTN_EXT sinks: one more logit per head in the softmax, without a value', async () => {
  const D = 4;
  const nKV = 3;
  const q = newTensor(F32, [D, 1, 2]);
  const k = newTensor(F16, [D, nKV, 1]);
  const v = newTensor(F16, [D, nKV, 1]);
  const mask = newTensor(F16, [nKV, 1]);
  const sinks = newTensor(F32, [2]);
  const qd = new Float32Array([1, 0, 0.5, 0, -1, 2, 0, 1]);
  const kd = new Float32Array([1, 1, 0, 0, 0, 1, 1, 0, 0.5, 0, 0, 1]);
  const vd = new Float32Array([1, 2, 3, 4, -1, 0, 1, 0, 2, 2, 2, 2]);
  const f16 = (a: Float32Array) => Uint16Array.from(a, f32ToF16);
  const sinkV = new Float32Array([0.7, 3]);
  const out = ops.flashAttnExtAddSinks(ops.flashAttnExt(q, k, v, mask, 0.5), sinks);
  for (const dev of [referenceDevice, referenceGgmlCpuDevice()]) {
    const r = await run(
      out,
      [
        [q, qd],
        [k, f16(kd)],
        [v, f16(vd)],
        [mask, new Uint16Array(3)],
        [sinks, sinkV],
      ],
      dev,
    );
    const want: number[] = [];
    for (let h = 0; h < 2; h++) {
      const s = [0, 1, 2].map(
        (j) => 0.5 * [0, 1, 2, 3].reduce((acc, d) => acc + qd[h * D + d] * f16ToF32(f32ToF16(kd[j * D + d])), 0),
      );
      const m = Math.max(...s, sinkV[h]);
      const w = s.map((x) => Math.exp(x - m));
      const z = w.reduce((a1, b1) => a1 + b1, 0) + Math.exp(sinkV[h] - m);
      for (let d = 0; d < D; d++) want.push(w.reduce((acc, wj, j) => acc + wj * vd[j * D + d], 0) / z);
    }
    close(r, want, 2e-3);
  }
});
