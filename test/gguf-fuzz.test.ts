import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { type FuzzSeed, runFuzz, seedOf } from './helpers/gguf-fuzz.js';
import { sampleBytes } from './helpers/gguf-samples.js';
import { sharedPath } from './helpers/shared.js';

test('fuzz: 2,000 mutated files, only GGUFError comes out', (t) => {
  const seeds: FuzzSeed[] = [seedOf('sample', sampleBytes()), seedOf('sample-a64', sampleBytes(64))];
  for (const rel of ['models/stories260K.gguf', 'fixtures/rand-qwen2-Q4_K_M.gguf']) {
    const p = sharedPath(rel);
    if (p) seeds.push(seedOf(rel, new Uint8Array(readFileSync(p))));
    else t.diagnostic(`../shared/${rel} is absent: fuzzing our own samples only`);
  }
  const res = runFuzz(seeds, 2000, 20261129);
  t.diagnostic(`parsed ${res.parsed}, rejected ${res.rejected}, by mutation ${JSON.stringify(res.byMutation)}`);
  assert.deepEqual(res.unexpected.slice(0, 3), []);
  assert.equal(res.parsed + res.rejected, 2000);
  assert.ok(res.rejected > 500, 'mutations should mostly break files');
});
