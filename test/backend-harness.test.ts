// The op harness: the reference device against a second reference instance (all cases
// agree exactly), and a deliberately wrong device (caught).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Backend, bufferOf } from '../src/backends/impl.js';
import { ReferenceBackend, ReferenceDevice, ReferenceReg, referenceDevice } from '../src/backends/reference/index.js';
import { compareDevices, nmse, opCases } from '../src/backends/testing/op-harness.js';
import type { Graph } from '../src/ggml/graph.js';
import { Op } from '../src/ggml/tensor.js';

test('nmse', () => {
  assert.equal(nmse([1, 2], [1, 2]), 0);
  assert.equal(nmse([1, 0], [2, 0]), 0.25);
  assert.equal(nmse([0, 0], [0, 0]), 0);
  assert.equal(nmse([Number.NaN], [1]), Number.POSITIVE_INFINITY);
  assert.equal(nmse([Number.NEGATIVE_INFINITY], [Number.NEGATIVE_INFINITY]), 0);
});

test('op harness: every case runs on the reference device and agrees with another instance', async () => {
  const other = new ReferenceReg('Other').addDevice({ name: 'Other' });
  const results = await compareDevices(other, referenceDevice);
  assert.equal(results.length, opCases().length);
  assert.ok(results.length > 80, `${results.length} cases`);
  const bad = results.filter((r) => !r.ok || r.skipped);
  assert.deepEqual(bad, []);
  assert.ok(results.every((r) => r.nmse === 0));
});

/** A device whose SILU is slightly off, and which refuses GELU. */
class WrongDevice extends ReferenceDevice {
  override supportsOp(t: Parameters<ReferenceDevice['supportsOp']>[0]): boolean {
    return t.op !== Op.GELU && super.supportsOp(t);
  }
  override initBackend(): Backend {
    const inner = new ReferenceBackend(this);
    const compute = inner.graphCompute.bind(inner);
    inner.graphCompute = async (g: Graph) => {
      await compute(g);
      for (const n of g.nodes) {
        if (n.op !== Op.SILU) continue;
        const bytes = bufferOf(n)!.hostBytes()!;
        const f = new Float32Array(bytes.buffer, bytes.byteOffset + n.offset, n.nelements);
        for (let i = 0; i < f.length; i++) f[i] *= 1.01;
      }
    };
    return inner;
  }
}

test('op harness flags a wrong kernel and skips unsupported ops', async () => {
  const wrong = new WrongDevice(new ReferenceReg('Wrong'), { name: 'Wrong' });
  const results = await compareDevices(wrong, referenceDevice, /^(SILU|GELU) \[/);
  assert.equal(results.length, 2);
  const silu = results.find((r) => r.name.startsWith('SILU'))!;
  assert.equal(silu.ok, false);
  assert.ok(silu.nmse! > 1e-5 && silu.nmse! < 1e-3);
  const gelu = results.find((r) => r.name.startsWith('GELU'))!;
  assert.match(gelu.skipped ?? '', /does not support GELU/);
});
