// llama-ts serve with --parallel 4: the same seeded /completion with n_probs gives the same
// content and probabilities on slot 0, 1, 2 and 3 (id_slot), after four requests ran at
// once, as llama-server's per-slot KV streams give (its test_completion.py consistency
// tests across slots). Before, the slots shared one pool of cells and the answer changed
// with the slot (a tiny model's top logprob: -3.845229 fresh or on slot 0, -3.841972 on
// slot 1, -3.845515 on slots 2-3).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LlamaServer } from '../src/server/index.js';
import { API_KEY, startServer } from './helpers/clients.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies
type Json = Record<string, any>;

let server: LlamaServer;
before(async () => {
  server = await startServer({ parallel: 4, nCtx: 4 * 512, embeddings: false });
});
after(async () => {
  await server?.close();
});

async function complete(body: Json): Promise<Json> {
  const r = await fetch(`${server.url}/completion`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const j = (await r.json()) as Json;
  assert.equal(r.status, 200, JSON.stringify(j));
  return j;
}

const SEEDED = {
  prompt: 'I believe the meaning of life is',
  n_predict: 16,
  seed: 42,
  temperature: 0.8,
  n_probs: 5,
  ignore_eos: true,
  cache_prompt: false,
};

test('the same seeded /completion on slots 0-3 after other traffic: the same content and probabilities', async () => {
  const fresh = await complete({ ...SEEDED, id_slot: 0 });
  assert.equal(fresh.completion_probabilities.length, 16);
  const prompts = ['Once upon a time', 'The cat sat on', 'In the beginning there was', 'Hello, my name is'];
  await Promise.all(
    prompts.map((prompt, i) =>
      complete({ prompt, n_predict: 200 + 10 * i, temperature: 0, ignore_eos: true, id_slot: i }),
    ),
  );
  for (let slot = 0; slot < 4; slot++) {
    const r = await complete({ ...SEEDED, id_slot: slot });
    assert.equal(r.id_slot, slot);
    assert.equal(r.content, fresh.content, `slot ${slot}`);
    assert.deepEqual(r.completion_probabilities, fresh.completion_probabilities, `slot ${slot}: probabilities`);
  }
});
