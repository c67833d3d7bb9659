// ctx.parallel on a generated llama: the same seeded request gives the same text and the
// same probabilities (to the bit) on every slot, after other requests filled the slots,
// as llama-server's per-slot KV streams give (kv_unified off). Before, the slots shared
// one pool of cells: a request's keys sat at other offsets on another slot and, once the
// cache's extent passed 256 cells, its decode steps took the split-KV kernel.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type LlamaContext, loadModel } from '../src/index.js';
import { tinyLlama } from './helpers/models.js';

let ctx: LlamaContext;
before(async () => {
  ctx = await loadModel({ model: tinyLlama(), n_ctx: 1024, n_threads: 2, n_parallel: 4 });
  assert.equal(await ctx.parallel.enable({ n_parallel: 4, n_batch: 512 }), true);
});
after(async () => {
  await ctx?.release();
});

const SEEDED = {
  prompt: 'The quick brown fox',
  n_predict: 12,
  seed: 42,
  temperature: 0.9,
  n_probs: 3,
  ignore_eos: true,
  cache_prompt: false,
};

async function seededOn(slot: number): Promise<{ text: string; probs: unknown }> {
  const r = await (await ctx.parallel.completion({ ...SEEDED, id_slot: slot })).promise;
  return { text: r.text, probs: r.completion_probabilities };
}

test('the same seeded request on each of 4 slots after other traffic: the same text and probabilities', async () => {
  const fresh = await seededOn(0);
  assert.ok(Array.isArray(fresh.probs) && fresh.probs.length === 12);
  // four conversations at once fill every slot's cells (200+ tokens each)
  const traffic = ['Once upon a time', 'The cat sat on', 'In the beginning there was', 'Hello, my name is'];
  const reqs = await Promise.all(
    traffic.map((prompt, i) =>
      ctx.parallel.completion({ prompt, n_predict: 180 + 10 * i, temperature: 0, ignore_eos: true, id_slot: i }),
    ),
  );
  await Promise.all(reqs.map((r) => r.promise));
  for (let slot = 0; slot < 4; slot++) {
    const got = await seededOn(slot);
    assert.equal(got.text, fresh.text, `slot ${slot}`);
    assert.deepEqual(got.probs, fresh.probs, `slot ${slot}: completion_probabilities`);
  }
  // and while the other slots generate beside it
  const busy = [1, 2, 3].map((i) =>
    ctx.parallel.completion({ prompt: traffic[i]!, n_predict: 40, temperature: 0, ignore_eos: true, id_slot: i }),
  );
  const beside = await seededOn(0);
  await Promise.all((await Promise.all(busy)).map((r) => r.promise));
  assert.equal(beside.text, fresh.text);
  assert.deepEqual(beside.probs, fresh.probs);
});
