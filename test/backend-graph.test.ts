// Tensor descriptors, graph order and the graph allocator.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { GraphAllocator, planGraph } from '../src/ggml/alloc.js';
import { buildGraph } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, Op, permute, reshape, TensorFlag, transpose, view } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const { F32 } = GGMLType;

test('descriptors: strides, views, permute, transpose, reshape', () => {
  const a = newTensor(F32, [4, 3, 2], 'a');
  assert.deepEqual(a.nb, [4, 16, 48, 96]);
  assert.equal(a.nbytes, 96);
  const p = permute(a, [2, 0, 1, 3]); // dim0 -> 2, dim1 -> 0, dim2 -> 1
  assert.deepEqual(p.ne, [3, 2, 4, 1]);
  assert.deepEqual(p.nb, [16, 48, 4, 96]);
  assert.equal(p.viewSrc, a);
  assert.ok(!p.isContiguous());
  const t = transpose(a);
  assert.deepEqual(t.ne, [3, 4, 2, 1]);
  assert.equal(t.nbytes, 96);
  const v = view(a, [4, 2], [16], 16);
  const vv = view(v, [2], [], 4);
  assert.equal(vv.viewSrc, a);
  assert.equal(vv.viewOffset, 20);
  assert.throws(() => view(a, [4, 3], [16], 64), /past its end/);
  assert.throws(() => reshape(t, [24]), /non-contiguous/);
  assert.deepEqual(reshape(a, [12, 2]).nb, [4, 48, 96, 96]);
  const q = newTensor(GGMLType.Q4_0, [64, 2]);
  assert.deepEqual(q.nb, [18, 36, 72, 72]);
  assert.equal(q.nbytes, 72);
});

test('graph: topological order, leafs and nodes', () => {
  const x = newTensor(F32, [4], 'x');
  const w = newTensor(F32, [4], 'w');
  const a = ops.mul(x, w).setName('a');
  const b = ops.silu(a).setName('b');
  const c = ops.add(b, a).setName('c');
  const g = buildGraph(c);
  assert.deepEqual(
    g.leafs.map((t) => t.name),
    ['x', 'w'],
  );
  assert.deepEqual(
    g.nodes.map((t) => t.name),
    ['a', 'b', 'c'],
  );
  assert.equal(g.byName('b'), b);
  // a deep chain does not overflow the stack
  let t = ops.scale(x, 1);
  for (let i = 0; i < 20000; i++) t = ops.scale(t, 1);
  assert.equal(buildGraph(t).nodes.length, 20001);
});

test('allocator reuses dead intermediates and works in place; size < sum of sizes', async () => {
  const n = 256;
  const x = newTensor(F32, [n], 'x');
  let t = x;
  const chain = [];
  for (let i = 0; i < 8; i++) {
    t = ops.mulMat(newTensor(F32, [n, n], `w${i}`), t); // not in place
    chain.push(t);
    t = ops.silu(t); // in place over the matmul result
    chain.push(t);
  }
  const g = buildGraph(t);
  const buft = referenceDevice.bufferType();
  const plan = planGraph(g, [buft]);
  const leafBytes = g.leafs.reduce((s, l) => s + Math.ceil(l.nbytes / 64) * 64, 0);
  const nodeBytes = chain.length * n * 4;
  assert.equal(plan.inplace, 8);
  assert.ok(plan.sizes[0] < leafBytes + nodeBytes, `${plan.sizes[0]} ≥ ${leafBytes + nodeBytes}`);
  // intermediates ping-pong between two slots: leafs + 3 vectors at most
  assert.ok(plan.sizes[0] <= leafBytes + 3 * n * 4, `compute size ${plan.sizes[0]}`);
  const alloc = new GraphAllocator([buft]);
  assert.deepEqual(alloc.reserve(g), plan.sizes);
  assert.equal(alloc.bufferSize(), plan.sizes[0]);
});

test('allocator keeps memory alive for views and outputs, and results stay right', async () => {
  const x = newTensor(F32, [3, 2], 'x');
  const y = ops.scale(x, 2).setName('y');
  const yt = transpose(y); // view of y: y must live until yt's consumer ran
  const z = ops.cont(yt).setName('z');
  const w = ops.add(ops.scale(z, 1), ops.scale(z, 0)).setName('w');
  const r = await computeOn(referenceDevice, [w, y], [[x, new Float32Array([1, 2, 3, 4, 5, 6])]]);
  assert.deepEqual(Array.from(r.values[0]), [2, 8, 4, 10, 6, 12]);
  assert.deepEqual(Array.from(r.values[1]), [2, 4, 6, 8, 10, 12]);
  assert.equal(
    r.graph.nodes.find((t) => t.op === Op.TRANSPOSE),
    yt,
  );
});

test("allocator: a cast's destination (cpy into a new tensor) lives only as long as its copy's readers", async () => {
  // a chain of layers, each casting its input to F16 and back (as the encoders cast K and V
  // for flash attention): the compute buffer must not grow with the number of layers
  const n = 1024;
  const layers = (count: number) => {
    const x = newTensor(F32, [n], 'x').setFlag(TensorFlag.INPUT);
    let cur = x;
    for (let i = 0; i < count; i++) {
      const h = ops.cpy(ops.scale(cur, 0.5), newTensor(GGMLType.F16, [n]));
      cur = ops.add(ops.cpy(h, newTensor(F32, [n])), cur);
    }
    return { x, out: cur };
  };
  const size = (count: number) => planGraph(buildGraph(layers(count).out), [referenceDevice.bufferType()]).sizes[0]!;
  assert.equal(size(16), size(2));
  // and the values survive the reuse: each layer adds half of its input (exact in F16 here)
  const { x, out } = layers(6);
  const r = await computeOn(referenceDevice, [out], [[x, new Float32Array(n).fill(1)]]);
  assert.deepEqual(Array.from(new Set(r.values[0])), [1.5 ** 6]);
});
