// Reference backend ops against hand-computed values (and, for quantized weights,
// against an independent dequantize + float64 product).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn, type Inputs } from '../src/backends/testing/compute.js';
import { setBlockScales, WEIGHT_TYPES } from '../src/backends/testing/op-harness.js';
import { f16ToF32, f32ToF16 } from '../src/ggml/fp16.js';
import * as ops from '../src/ggml/ops.js';
import { canQuantize, dequantize, quantize } from '../src/ggml/quants/index.js';
import { newTensor, permute, reshape, type Tensor, transpose, view } from '../src/ggml/tensor.js';
import { GGMLType, rowSize } from '../src/ggml/types.js';

const { F32, F16, I32, I64 } = GGMLType;

async function run(out: Tensor, inputs: Inputs): Promise<number[]> {
  const r = await computeOn(referenceDevice, [out], inputs);
  return Array.from(r.values[0]);
}

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  assert.equal(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i];
    const e = expected[i];
    if (e === Number.NEGATIVE_INFINITY || e === Number.POSITIVE_INFINITY) assert.equal(a, e, `[${i}]`);
    else assert.ok(Math.abs(a - e) <= tol * Math.max(1, Math.abs(e)), `[${i}] = ${a}, expected ${e}`);
  }
}

const f32 = (...xs: number[]) => new Float32Array(xs);
const i32 = (...xs: number[]) => new Int32Array(xs);

test('MUL_MAT of small integer matrices', async () => {
  // a: M=3 rows of K=2; b: N=2 columns of K=2; result [M, N] = a·bᵀ
  const a = newTensor(F32, [2, 3]);
  const b = newTensor(F32, [2, 2]);
  const out = ops.mulMat(a, b);
  assert.deepEqual(out.ne, [3, 2, 1, 1]);
  const r = await run(out, [
    [a, f32(1, 2, 3, 4, 5, 6)],
    [b, f32(1, 0, 1, 1)],
  ]);
  assert.deepEqual(r, [1, 3, 5, 3, 7, 11]);
});

test('MUL_MAT broadcasts a over dims 2 and 3', async () => {
  // a has 2 matrices along dim 2 and 1 along dim 3; b has 4 along dim 2 and 2 along dim 3
  const a = newTensor(F32, [2, 1, 2, 1]);
  const b = newTensor(F32, [2, 1, 4, 2]);
  const out = ops.mulMat(a, b);
  assert.deepEqual(out.ne, [1, 1, 4, 2]);
  const bData = new Float32Array(16);
  for (let i = 0; i < 8; i++) bData.set([i, 1], 2 * i);
  const r = await run(out, [
    [a, f32(1, 0, 0, 1)], // a0 picks b[0], a1 picks b[1]
    [b, bData],
  ]);
  // batches (i2, i3): i2 = 0,1 use a0 (r2 = 2), i2 = 2,3 use a1
  assert.deepEqual(r, [0, 1, 1, 1, 4, 5, 1, 1]);
});

test('MUL_MAT with transposed and permuted (non-contiguous) operands', async () => {
  // c holds bᵀ: ne0 = N = 2, ne1 = K = 3; transpose(c) is b [K=3, N=2] with strided rows
  const a = newTensor(F32, [3, 2]);
  const c = newTensor(F32, [2, 3]);
  const out = ops.mulMat(a, transpose(c));
  const r = await run(out, [
    [a, f32(1, 2, 3, 4, 5, 6)],
    [c, f32(1, 0, 0, 1, 1, 1)], // b columns: n0 = [1, 0, 1], n1 = [0, 1, 1]
  ]);
  assert.deepEqual(r, [4, 10, 5, 11]);
  // a permuted view: x [K=2, heads=2, M=2] -> permute to [K, M, heads]
  const x = newTensor(F32, [2, 2, 2]);
  const y = newTensor(F32, [2, 1, 2]);
  const px = permute(x, [0, 2, 1, 3]);
  assert.deepEqual(px.ne, [2, 2, 2, 1]);
  const out2 = ops.mulMat(px, y);
  // x[k, h, m] = values 1..8 in memory order; head h, row m is x[:, h, m]
  const r2 = await run(out2, [
    [x, f32(1, 2, 3, 4, 5, 6, 7, 8)],
    [y, f32(1, 1, 1, -1)],
  ]);
  // head 0: rows m0 = [1,2] (x[:,0,0]), m1 = [5,6] (x[:,0,1]); y0 = [1,1] -> [3, 11]
  // head 1: rows m0 = [3,4], m1 = [7,8]; y1 = [1,-1] -> [-1, -1]
  assert.deepEqual(r2, [3, 11, -1, -1]);
});

/** Weights of `type` for M rows of K: quantized from floats when a quantizer exists, else random blocks. */
function weightBytes(type: number, K: number, M: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(rowSize(type, K) * M);
  if (canQuantize(type)) {
    const w = new Float32Array(K * M).map((_, i) => Math.sin(i * 0.37 + seed) * 2);
    for (let m = 0; m < M; m++) quantize(type, w.subarray(m * K), bytes.subarray(m * rowSize(type, K)), K);
    return bytes;
  }
  let s = seed * 7919 + 17;
  for (let i = 0; i < bytes.length; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    bytes[i] = s >>> 16;
  }
  setBlockScales(type, bytes, (b, j) => (j === 0 ? 0.01 : 0.005) * (1 + (b % 3)));
  return bytes;
}

for (const type of WEIGHT_TYPES) {
  test(`MUL_MAT and GET_ROWS with ${GGMLType[type]} weights equal dequantize + float64 product`, async () => {
    const K = 256;
    const M = 3;
    const N = 2;
    const x = new Float32Array(K * N).map((_, i) => Math.cos(i * 0.11));
    const bytes = weightBytes(type, K, M, type);
    const deq = new Float32Array(K * M);
    dequantize(type, bytes, deq, K * M);
    assert.ok(deq.every(Number.isFinite));
    const a = newTensor(type, [K, M]);
    const b = newTensor(F32, [K, N]);
    const r = await run(ops.mulMat(a, b), [
      [a, bytes],
      [b, x],
    ]);
    const want: number[] = [];
    for (let n = 0; n < N; n++) {
      for (let m = 0; m < M; m++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += deq[m * K + k] * x[n * K + k];
        want.push(s);
      }
    }
    close(r, want, 1e-5);
    const a2 = newTensor(type, [K, M]);
    const idx = newTensor(I32, [2]);
    const rows = await run(ops.getRows(a2, idx), [
      [a2, bytes],
      [idx, i32(2, 0)],
    ]);
    assert.deepEqual(rows, [...deq.subarray(2 * K, 3 * K), ...deq.subarray(0, K)]);
  });
}

test('ADD and MUL broadcast b over a', async () => {
  const a = newTensor(F32, [3, 2]);
  const b = newTensor(F32, [3, 1]);
  const data: Inputs = [
    [a, f32(1, 2, 3, 4, 5, 6)],
    [b, f32(10, 20, 30)],
  ];
  assert.deepEqual(await run(ops.add(a, b), data), [11, 22, 33, 14, 25, 36]);
  const a2 = newTensor(F32, [3, 2]);
  const b2 = newTensor(F32, [1, 2]);
  assert.deepEqual(
    await run(ops.mul(a2, b2), [
      [a2, f32(1, 2, 3, 4, 5, 6)],
      [b2, f32(2, -1)],
    ]),
    [2, 4, 6, -4, -5, -6],
  );
});

test('SCALE, SILU, GELU', async () => {
  const a = newTensor(F32, [3]);
  assert.deepEqual(await run(ops.scale(a, 2, 1), [[a, f32(1, -2, 0.5)]]), [3, -3, 2]);
  const b = newTensor(F32, [3]);
  close(await run(ops.silu(b), [[b, f32(1, 0, -1)]]), [0.7310585786300049, 0, -0.2689414213699951]);
  const c = newTensor(F32, [2]);
  close(await run(ops.gelu(c), [[c, f32(1, 0)]]), [0.8411919906082768, 0]);
});

test('RMS_NORM of [3, 4] and NORM of [1, 2, 3]', async () => {
  const a = newTensor(F32, [2]);
  close(await run(ops.rmsNorm(a, 0), [[a, f32(3, 4)]]), [3 / Math.sqrt(12.5), 4 / Math.sqrt(12.5)]);
  const b = newTensor(F32, [3, 2]);
  const s = Math.sqrt(1.5); // 1 / sqrt(2/3)
  close(await run(ops.norm(b, 1e-12), [[b, f32(1, 2, 3, 5, 5, 5)]]), [-s, 0, s, 0, 0, 0]);
});

test('ROPE rotates a 2-vector by pos · base^0', async () => {
  const x = newTensor(F32, [2, 1, 1]);
  const pos = newTensor(I32, [1]);
  const out = ops.rope(x, pos, { nDims: 2, mode: ops.RopeMode.NORMAL, freqBase: 10000 });
  close(
    await run(out, [
      [x, f32(1, 0)],
      [pos, i32(1)],
    ]),
    [Math.cos(1), Math.sin(1)],
  );
});

test('ROPE normal vs NeoX pairing, freq scale, rotary dims < head dim', async () => {
  // head dim 6, nDims 4, base 100, position 2: pair 0 angle 2, pair 1 angle 2·100^(-1/2) = 0.2
  const rot = (x0: number, x1: number, th: number) => [
    x0 * Math.cos(th) - x1 * Math.sin(th),
    x0 * Math.sin(th) + x1 * Math.cos(th),
  ];
  const data = f32(1, 2, 3, 4, 5, 6);
  for (const [mode, scaleF] of [
    [ops.RopeMode.NORMAL, 1],
    [ops.RopeMode.NEOX, 1],
    [ops.RopeMode.NEOX, 0.5],
  ]) {
    const x = newTensor(F32, [6, 1, 1]);
    const pos = newTensor(I32, [1]);
    const out = ops.rope(x, pos, { nDims: 4, mode, freqBase: 100, freqScale: scaleF });
    const r = await run(out, [
      [x, data],
      [pos, i32(2)],
    ]);
    const t0 = 2 * scaleF;
    const t1 = 0.2 * scaleF;
    let want: number[];
    if (mode === ops.RopeMode.NORMAL) {
      want = [...rot(1, 2, t0), ...rot(3, 4, t1), 5, 6];
    } else {
      const [a0, a1] = rot(1, 3, t0);
      const [b0, b1] = rot(2, 4, t1);
      want = [a0, b0, a1, b1, 5, 6];
    }
    close(r, want);
  }
});

test('ROPE: one position per token, every head rotated alike', async () => {
  const x = newTensor(F32, [2, 2, 2]); // 2 heads, 2 tokens
  const pos = newTensor(I32, [2]);
  const r = await run(ops.rope(x, pos, { nDims: 2, mode: 0, freqBase: 10000 }), [
    [x, f32(1, 0, 0, 1, 1, 0, 0, 1)],
    [pos, i32(0, 3)],
  ]);
  const c = Math.cos(3);
  const s = Math.sin(3);
  close(r, [1, 0, 0, 1, c, s, -s, c]);
});

test('SOFT_MAX with scale and a broadcast mask', async () => {
  const a = newTensor(F32, [3, 2, 2]); // 2 rows, 2 "heads"
  const mask = newTensor(F16, [3, 2]); // broadcast over dim 2
  const ninf = f32ToF16(Number.NEGATIVE_INFINITY);
  const out = ops.softMax(a, mask, 2);
  const r = await run(out, [
    [a, f32(0.5, 1, 1.5, 0, 0, 0, 0.5, 1, 1.5, 1, 1, 1)],
    [mask, new Uint16Array([0, 0, ninf, ninf, 0, 0])],
  ]);
  const e1 = Math.exp(1);
  const e2 = Math.exp(2);
  const row0 = [e1 / (e1 + e2), e2 / (e1 + e2), 0];
  const row1 = [0, 0.5, 0.5];
  close(r, [...row0, ...row1, ...row0, ...row1]);
});

test('CPY F32 -> F16 -> F32 and into a KV-cache view', async () => {
  const a = newTensor(F32, [4]);
  const h = newTensor(F16, [4]);
  const back = ops.cpy(ops.cpy(a, h), newTensor(F32, [4]));
  const vals = [1, 0.1, 65504, -2.5];
  const r = await run(back, [[a, f32(...vals)]]);
  close(
    r,
    vals.map((v) => f16ToF32(f32ToF16(v))),
    0,
  );
  assert.equal(r[1], 0.0999755859375);
  // write a row into row 1 of an F16 cache [3, 3] through a view
  const cache = newTensor(F16, [3, 3]);
  const row = newTensor(F32, [3]);
  const dst = view(cache, [3], [], 1 * cache.nb[1]);
  const w = ops.cpy(row, dst);
  const asF32 = ops.cpy(cache, newTensor(F32, [3, 3]));
  // graph order is output order: the write comes first, then the read of the whole cache
  const r2 = await computeOn(referenceDevice, [w, asF32], [[row, f32(7, 8, 9)]]);
  assert.deepEqual(Array.from(r2.values[0]), [7, 8, 9]);
  assert.deepEqual(Array.from(r2.values[1]), [0, 0, 0, 7, 8, 9, 0, 0, 0]);
});

test('CONT of a transposed tensor, and reshape', async () => {
  const a = newTensor(F32, [3, 2]);
  const c = ops.cont(transpose(a));
  assert.deepEqual(c.ne, [2, 3, 1, 1]);
  assert.deepEqual(await run(c, [[a, f32(1, 2, 3, 4, 5, 6)]]), [1, 4, 2, 5, 3, 6]);
  const b = newTensor(F32, [6]);
  const r = reshape(b, [2, 3]);
  assert.deepEqual(await run(ops.cont(transpose(r)), [[b, f32(1, 2, 3, 4, 5, 6)]]), [1, 3, 5, 2, 4, 6]);
});

test('GET_ROWS from F32, F16 and Q8_0 tables', async () => {
  const a = newTensor(F32, [2, 3]);
  const idx = newTensor(I32, [2]);
  assert.deepEqual(
    await run(ops.getRows(a, idx), [
      [a, f32(1, 2, 3, 4, 5, 6)],
      [idx, i32(2, 0)],
    ]),
    [5, 6, 1, 2],
  );
  const h = newTensor(F16, [2, 2]);
  const idx2 = newTensor(I32, [3]);
  assert.deepEqual(
    await run(ops.getRows(h, idx2), [
      [h, new Uint16Array([f32ToF16(1), f32ToF16(-1), f32ToF16(0.5), f32ToF16(3)])],
      [idx2, i32(1, 1, 0)],
    ]),
    [0.5, 3, 0.5, 3, 1, -1],
  );
  const K = 32;
  const rows = new Float32Array(2 * K).map((_, i) => i - 20);
  const q = new Uint8Array(2 * 34);
  quantize(GGMLType.Q8_0, rows.subarray(0, K), q.subarray(0, 34), K);
  quantize(GGMLType.Q8_0, rows.subarray(K), q.subarray(34), K);
  const deq = new Float32Array(2 * K);
  dequantize(GGMLType.Q8_0, q, deq, 2 * K);
  const tq = newTensor(GGMLType.Q8_0, [K, 2]);
  const idx3 = newTensor(I32, [1]);
  const r = await run(ops.getRows(tq, idx3), [
    [tq, q],
    [idx3, i32(1)],
  ]);
  assert.deepEqual(r, Array.from(deq.subarray(K)));
});

test('SET_ROWS writes rows into an F16 cache with I64 and I32 indices', async () => {
  for (const it of [I64, I32]) {
    const cache = newTensor(F16, [2, 4]);
    const src = newTensor(F32, [2, 2]);
    const idx = newTensor(it, [2]);
    const set = ops.setRows(cache, src, idx);
    const read = ops.cpy(set, newTensor(F32, [2, 4]));
    const r = await run(read, [
      [src, f32(1, 2, 3, 4)],
      [idx, it === I64 ? new BigInt64Array([3n, 1n]) : i32(3, 1)],
    ]);
    assert.deepEqual(r, [0, 0, 3, 4, 0, 0, 1, 2]);
  }
});

test('FLASH_ATTN_EXT by hand, with GQA and a mask; equals MUL_MAT + SOFT_MAX', async () => {
  // D = 2, 2 KV positions, 1 KV head shared by 2 query heads, 1 query token
  const q = newTensor(F32, [2, 1, 2]);
  const k = newTensor(F16, [2, 2, 1]);
  const v = newTensor(F16, [2, 2, 1]);
  const h = (...xs: number[]) => new Uint16Array(xs.map(f32ToF16));
  const inputs: Inputs = [
    [q, f32(1, 0, 0, 1)],
    [k, h(1, 0, 0, 1)],
    [v, h(1, 2, 3, 4)],
  ];
  const out = ops.flashAttnExt(q, k, v, null, 1);
  assert.deepEqual(out.ne, [2, 2, 1, 1]);
  const r = await run(out, inputs);
  const p = Math.E / (Math.E + 1);
  // head 0 scores [1, 0]; head 1 scores [0, 1]
  close(r, [p * 1 + (1 - p) * 3, p * 2 + (1 - p) * 4, (1 - p) * 1 + p * 3, (1 - p) * 2 + p * 4]);

  // masked: KV position 1 hidden -> output is V row 0 for both heads
  const mask = newTensor(F16, [2, 1]);
  const q2 = newTensor(F32, [2, 1, 2]);
  const k2 = newTensor(F16, [2, 2, 1]);
  const v2 = newTensor(F16, [2, 2, 1]);
  const r2 = await run(ops.flashAttnExt(q2, k2, v2, mask, 0.5), [
    [q2, f32(1, 0, 0, 1)],
    [k2, h(1, 0, 0, 1)],
    [v2, h(1, 2, 3, 4)],
    [mask, h(0, Number.NEGATIVE_INFINITY)],
  ]);
  close(r2, [1, 2, 1, 2]);

  // the unfused path: kq = mul_mat(k, q); softmax; kqv = mul_mat(vᵀ, kq)
  const q3 = newTensor(F32, [2, 3, 2]); // 3 tokens, 2 heads
  const k3 = newTensor(F32, [2, 4, 2]); // 4 positions, 2 heads
  const v3 = newTensor(F32, [2, 4, 2]);
  const qd = new Float32Array(12).map((_, i) => Math.sin(i));
  const kd = new Float32Array(16).map((_, i) => Math.cos(i * 0.7));
  const vd = new Float32Array(16).map((_, i) => i * 0.25 - 1);
  const fa = ops.flashAttnExt(q3, k3, v3, null, 0.7);
  const rf = await run(fa, [
    [q3, qd],
    [k3, kd],
    [v3, vd],
  ]);
  const q4 = newTensor(F32, [2, 3, 2]);
  const k4 = newTensor(F32, [2, 4, 2]);
  const v4 = newTensor(F32, [2, 4, 2]);
  const kq = ops.softMax(ops.mulMat(k4, q4), null, 0.7); // [4, 3, 2]
  const vt = ops.cont(transpose(v4)); // [4, 2, 2]
  const kqv = ops.mulMat(vt, kq); // [2, 3, 2]: Dv, tokens, heads
  const merged = ops.cont(permute(kqv, [0, 2, 1, 3])); // [2, 2, 3]: Dv, heads, tokens
  const ru = await run(merged, [
    [q4, qd],
    [k4, kd],
    [v4, vd],
  ]);
  close(rf, ru, 1e-6);
});
