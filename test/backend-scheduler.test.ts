// The scheduler over two devices: the reference device, and a second instance that runs
// only MUL_MAT and ADD and only reads its own buffers, so that the graph must be split
// and tensors copied between the two.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tensorGetF32, tensorSet } from '../src/backends/api.js';
import { ReferenceReg } from '../src/backends/reference/index.js';
import { Scheduler } from '../src/backends/scheduler.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { allocTensors } from '../src/ggml/alloc.js';
import { buildGraph } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, Op } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const { F32, F16, I32 } = GGMLType;

const reg = new ReferenceReg('SchedTest');
const full = reg.addDevice({ name: 'Full' });
const partial = reg.addDevice({
  name: 'Partial',
  opFilter: (t) => t.op === Op.MUL_MAT || t.op === Op.ADD,
  ownBuffersOnly: true,
});

const K = 4;
const wData = new Float32Array(K * 3).map((_, i) => (i % 5) - 2);
const w2Data = new Float32Array(3 * 2).map((_, i) => i * 0.5 - 1);
const biasData = new Float32Array([0.5, -0.5, 1]);
const xData = new Float32Array(K * 2).map((_, i) => i * 0.25);

/** x → W·x → + bias → silu → W2·(…) → softmax; W, W2 on `wDev`, bias on `bDev`. */
function build(wDev: typeof full, bDev: typeof full) {
  const w = newTensor(F32, [K, 3], 'w');
  const w2 = newTensor(F32, [3, 2], 'w2');
  const bias = newTensor(F32, [3], 'bias');
  allocTensors([w, w2], wDev.bufferType());
  allocTensors([bias], bDev.bufferType());
  tensorSet(w, wData);
  tensorSet(w2, w2Data);
  tensorSet(bias, biasData);
  const x = newTensor(F32, [K, 2], 'x');
  const mm = ops.mulMat(w, x).setName('mm');
  const a = ops.add(mm, bias).setName('a');
  const s = ops.silu(a).setName('s');
  const m2 = ops.mulMat(w2, s).setName('m2');
  const out = ops.softMax(m2).setName('out');
  return { x, mm, a, s, m2, out };
}

test('two devices: the graph is split, tensors copied, the result equals one device', async () => {
  const ref = build(full, full);
  const expected = (await computeOn(full, [ref.out], [[ref.x, xData]])).values[0];

  const g = build(partial, full);
  const bPartial = partial.initBackend();
  const bFull = full.initBackend();
  const sched = new Scheduler([bPartial, bFull]);
  const graph = buildGraph(g.out);
  sched.allocGraph(graph);
  tensorSet(g.x, xData);
  await sched.graphCompute(graph);
  const got = await tensorGetF32(g.out);
  assert.deepEqual(Array.from(got), Array.from(expected));

  // mm on Partial (weights there); add on Full (bias there); silu on Full; m2 on Partial; softmax on Full
  assert.deepEqual(
    sched.splits.map((s) => [sched.backends[s.backend].name, s.nodes.map((n) => n.name)]),
    [
      ['Partial', ['mm']],
      ['Full', ['a', 's']],
      ['Partial', ['m2']],
      ['Full', ['out']],
    ],
  );
  assert.equal(sched.nCopies, 3); // mm → Full, s → Partial, m2 → Full
  assert.equal(sched.tensorBackend(g.x), bPartial);
  assert.ok(sched.bufferSizes().every((n) => n > 0));
});

test('a pinned node runs where it is pinned; a KV write runs where the cache is', async () => {
  const bPartial = partial.initBackend();
  const bFull = full.initBackend();
  const cache = newTensor(F16, [2, 4], 'cache');
  allocTensors([cache], full.bufferType());
  const rows = newTensor(F32, [2, 1], 'rows');
  const idx = newTensor(I32, [1], 'idx');
  const a = newTensor(F32, [2, 1], 'a');
  const sum = ops.add(a, a).setName('sum'); // Partial supports ADD: it would take it
  const set = ops.setRows(cache, ops.add(rows, sum), idx).setName('set');
  const sched = new Scheduler([bPartial, bFull]);
  sched.setTensorBackend(sum, bFull);
  const graph = buildGraph(set);
  sched.allocGraph(graph);
  tensorSet(a, new Float32Array([1, 2]));
  tensorSet(rows, new Float32Array([10, 20]));
  tensorSet(idx, new Int32Array([2]));
  await sched.graphCompute(graph);
  assert.equal(sched.tensorBackend(sum), bFull);
  assert.equal(sched.tensorBackend(set), bFull);
  const f = ops.cpy(cache, newTensor(F32, [2, 4]));
  const r = await computeOn(full, [f], []);
  assert.deepEqual(Array.from(r.values[0]), [0, 0, 0, 0, 12, 24, 0, 0]);
});

test('inputs used on both devices are copied once per device', async () => {
  const bPartial = partial.initBackend();
  const bFull = full.initBackend();
  const x = newTensor(F32, [3], 'x');
  const y = ops.add(x, x).setName('y'); // Partial
  const z = ops.silu(x).setName('z'); // Full, needs x copied
  const out = ops.add(ops.mul(y, z), z).setName('out');
  const sched = new Scheduler([bPartial, bFull]);
  const graph = buildGraph(out);
  sched.allocGraph(graph);
  tensorSet(x, new Float32Array([1, -1, 0]));
  await sched.graphCompute(graph);
  const silu = (v: number) => v / (1 + Math.exp(-v));
  const want = [1, -1, 0].map((v) => 2 * v * silu(v) + silu(v));
  const got = Array.from(await tensorGetF32(out));
  for (let i = 0; i < 3; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-6);
  const xCopies = sched.splits.flatMap((s) => s.inputs).filter((i) => i.src === x);
  assert.equal(xCopies.length, 1);
});

test('offloadOp: a higher-priority device takes an op whose weights are elsewhere', async () => {
  const offloading = reg.addDevice({
    name: 'Offloading',
    opFilter: (t) => t.op === Op.MUL_MAT,
    ownBuffersOnly: true,
    offload: (t) => t.op === Op.MUL_MAT,
  });
  const bOff = offloading.initBackend();
  const bFull = full.initBackend();
  const w = newTensor(F32, [2, 2], 'w');
  allocTensors([w], full.bufferType());
  tensorSet(w, new Float32Array([1, 2, 3, 4]));
  const x = newTensor(F32, [2], 'x');
  const mm = ops.mulMat(w, x).setName('mm');
  const out = ops.scale(mm, 2).setName('out');
  const sched = new Scheduler([bOff, bFull]);
  const graph = buildGraph(out);
  sched.allocGraph(graph);
  tensorSet(x, new Float32Array([1, 1]));
  await sched.graphCompute(graph);
  assert.equal(sched.tensorBackend(mm), bOff);
  assert.equal(sched.tensorBackend(out), bFull);
  assert.ok(sched.splits[0].inputs.some((i) => i.src === w)); // the weight was copied over
  assert.deepEqual(Array.from(await tensorGetF32(out)), [6, 14]);
  // events: record on one backend, wait on the other
  const ev = full.eventNew!();
  bFull.eventRecord!(ev);
  await bOff.eventWait!(ev);
  await full.eventSynchronize!(ev);
  full.eventFree!(ev);
});

test("offloadOp: only weights on the host (last) backend are offered; another device's stay where they are", () => {
  const taker = reg.addDevice({ name: 'Taker', offload: (t) => t.op === Op.MUL_MAT });
  const [bTaker, bMid, bHost] = [taker.initBackend(), partial.initBackend(), full.initBackend()];
  const w = newTensor(F32, [2, 2], 'w');
  allocTensors([w], partial.bufferType());
  const mm = ops.mulMat(w, newTensor(F32, [2], 'x')).setName('mm');
  const sched = new Scheduler([bTaker, bMid, bHost]);
  sched.allocGraph(buildGraph(mm));
  assert.equal(sched.tensorBackend(mm), bMid);
  const w2 = newTensor(F32, [2, 2], 'w2');
  allocTensors([w2], full.bufferType());
  const mm2 = ops.mulMat(w2, newTensor(F32, [2], 'x2')).setName('mm2');
  const sched2 = new Scheduler([bTaker, bMid, bHost]);
  sched2.allocGraph(buildGraph(mm2));
  assert.equal(sched2.tensorBackend(mm2), bTaker);
});
