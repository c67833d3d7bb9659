// Split models (gguf-split's shards: PREFIX-0000k-of-0000N.gguf, split.no / split.count /
// split.tensors.count): the first shard opens the whole model, whose tensors read as from
// the one file, so a split model generates what the whole file generates; a shard given
// first, a missing shard or a tensor in two shards is a clear error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openGGUF } from '../src/gguf/index.js';
import { loadModel } from '../src/index.js';
import { tinyLlama } from './helpers/models.js';
import { splitModel } from './helpers/split.js';

describe('split GGUF models', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-split-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the first of 3 shards loads the model: the same tensors and the same greedy tokens as the whole file', async () => {
    const whole = tinyLlama();
    const shards = splitModel(whole, dir, 3);
    const a = openGGUF(whole);
    const b = openGGUF(shards[0]!);
    try {
      assert.deepEqual(
        b.tensors.map((t) => t.name),
        a.tensors.map((t) => t.name),
      );
      for (const t of a.tensors) assert.deepEqual(b.readTensorData(b.tensor(t.name)!), a.readTensorData(t), t.name);
    } finally {
      a.close();
      b.close();
    }
    const run = async (model: string) => {
      const ctx = await loadModel({ model, n_threads: 1, n_ctx: 128 });
      try {
        return (
          await ctx.completion({ prompt: 'Once upon a time', n_predict: 12, temperature: 0, return_tokens: true })
        ).tokens;
      } finally {
        await ctx.release();
      }
    };
    assert.deepEqual(await run(shards[0]!), await run(whole));
  });

  test('a later shard given first, a missing shard, a tensor in two shards: GGUF errors naming the file', () => {
    const shards = splitModel(tinyLlama(), dir, 2, 'two');
    assert.throws(() => openGGUF(shards[1]!), /give the first shard, named as gguf-split names it/);
    rmSync(shards[1]!);
    assert.throws(() => openGGUF(shards[0]!), /two-00002-of-00002\.gguf.*cannot open/);
    const dup = splitModel(tinyLlama(), dir, 2, 'dup', true);
    assert.throws(() => openGGUF(dup[0]!), /dup-00002-of-00002\.gguf.*tensor '.*' is in an earlier shard too/);
  });
});
