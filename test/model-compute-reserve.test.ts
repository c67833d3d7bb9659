// A context sizes its compute buffers for a full ubatch when it is made (llama.cpp's
// reserve, with one output), so that a short batch followed by a full one does not free
// and re-place them: the device's arena never shrinks, and a freed range stays resident.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const cpu = new CpuReg('CPU-reserve').addDevice({ name: 'CPU-reserve', threads: 2 });
after(() => cpu.close());

for (const arch of ['qwen35', 'lfm2']) {
  const rel = `fixtures/archs/${arch}-F32.gguf`;
  test(`${arch}: compute buffers sized at creation do not grow for a short batch then a full ubatch`, {
    skip: sharedPath(rel) ? false : missingShared(rel),
  }, async () => {
    setLogCallback(() => {});
    let model: Model;
    try {
      model = await Model.load(sharedPath(rel)!, { devices: [cpu] });
    } finally {
      setLogCallback(null);
    }
    const ctx = new Context(model, { nCtx: 256, nBatch: 64, nUbatch: 64 });
    try {
      const reserved = ctx.computeBytes;
      assert.ok(reserved > 0, 'no compute buffer reserved at creation');
      const nVocab = model.hp.nVocab;
      const tokens = (n: number, seed: number) =>
        Array.from({ length: n }, (_, i) => (seed * 7919 + i * 104729) % nVocab);
      await ctx.decode({ tokens: tokens(4, 1) });
      await ctx.decode({ tokens: tokens(1, 2) });
      ctx.clearMemory();
      await ctx.decode({ tokens: tokens(64, 3) });
      assert.equal(ctx.computeBytes, reserved);
    } finally {
      ctx.free();
    }
  });
}
