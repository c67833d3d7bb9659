// levelNodes: independent nodes become adjacent, every dependency (data, or memory written
// in place) keeps its order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildGraph, levelNodes } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, view } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

test('levelNodes groups the independent products of one input, keeps data order', () => {
  const x = newTensor(GGMLType.F32, [8, 2], 'x');
  const [wq, wk, wv] = ['wq', 'wk', 'wv'].map((n) => newTensor(GGMLType.F32, [8, 8], n));
  const [bq, bk, bv] = ['bq', 'bk', 'bv'].map((n) => newTensor(GGMLType.F32, [8], n));
  // built as a layer is: each product followed by its bias
  const q = ops.add(ops.mulMat(wq, x).setName('mq'), bq).setName('q');
  const k = ops.add(ops.mulMat(wk, x).setName('mk'), bk).setName('k');
  const v = ops.add(ops.mulMat(wv, x).setName('mv'), bv).setName('v');
  const out = ops.add(ops.add(q, k).setName('qk'), v).setName('out');
  const g = buildGraph(out);
  assert.deepEqual(
    g.nodes.map((t) => t.name),
    ['mq', 'q', 'mk', 'k', 'qk', 'mv', 'v', 'out'],
  );
  levelNodes(g);
  assert.deepEqual(
    g.nodes.map((t) => t.name),
    ['mq', 'mk', 'mv', 'q', 'k', 'v', 'qk', 'out'],
  );
});

test('levelNodes keeps a write into shared memory after earlier readers and before later ones', () => {
  const cache = newTensor(GGMLType.F32, [4, 8], 'cache');
  const idx = newTensor(GGMLType.I32, [2], 'idx');
  const a = newTensor(GGMLType.F32, [4, 2], 'a');
  const early = ops.add(ops.scale(view(cache, [4, 2], [16, 16], 0), 2).setName('readEarly'), a).setName('sum');
  const store = ops.setRows(cache, ops.scale(a, 3).setName('a3'), idx).setName('store');
  // a reader of the cache through a view of the original tensor, not of the store: memory order only
  const late = ops.scale(view(cache, [4, 2], [16, 16], 0), 5).setName('readLate');
  const g = buildGraph(ops.add(ops.add(early, late).setName('t'), view(store, [4, 2], [16, 16], 0)).setName('out'));
  levelNodes(g);
  const at = (n: string) => g.nodes.findIndex((t) => t.name === n);
  assert.ok(at('readEarly') < at('store'), 'an earlier read of the cache stays before the write');
  assert.ok(at('readLate') < at('store'), 'so does a later-built read that came first in the graph');
  assert.ok(at('a3') < at('store'));
  for (const n of ['out', 't', 'sum']) assert.ok(at(n) >= 0);
});
