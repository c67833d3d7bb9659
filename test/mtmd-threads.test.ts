// Multimodal encoders give the same bits at any thread count, as the text graphs do: for
// generated pairs covering each encoder shape (fixed-size SigLIP, Qwen2.5-VL's windowed
// attention, Qwen3-VL's deepstack mergers, LLaVA 1.6 tiles, an audio encoder), the first
// token's top-1000 logits after a media prompt are compared exactly at 1, 2 and 3 threads.
// The CPU device splits the encoder's matrix products across its workers by rows, so a
// reduction that depended on the split would show here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../src/api/index.js';
import { defaultCacheDir } from '../src/generator/index.js';
import { ensurePair, genPairs, writeMedia } from './helpers/mtmd-gen-pairs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const REFS = fileURLToPath(new URL('../../test/refs/mtmd/', import.meta.url));
const VOCAB = sharedPath('models/stories260K.gguf');
const CACHE = join(defaultCacheDir(), 'mtmd-gen');
const PAIRS = ['gemma3', 'qwen25vl', 'qwen3vl', 'llava16', 'voxtral'];

describe('multimodal encoders: the same logits at 1, 2 and 3 threads', {
  skip: VOCAB ? false : missingShared('models/stories260K.gguf'),
}, () => {
  const pairs = VOCAB ? genPairs(VOCAB) : [];
  for (const name of PAIRS) {
    test(name, async () => {
      const pair = pairs.find((p) => p.name === name);
      assert.ok(pair, `no generated pair ${name}`);
      const ref = JSON.parse(readFileSync(join(REFS, `${name}.ref.json`), 'utf8')) as {
        cases: { prompt?: string; images: string[] }[];
      };
      // the prompt case with the most media
      const c = ref.cases.filter((x) => x.prompt !== undefined).sort((a, b) => b.images.length - a.images.length)[0]!;
      const files = ensurePair(pair, join(CACHE, 'models'));
      const media = join(CACHE, 'media');
      writeMedia(media);
      let first: [number, number][] | undefined;
      for (const n_threads of [1, 2, 3]) {
        const ctx = await loadModel({ model: files.model, n_ctx: 2048, n_batch: 2048, n_ubatch: 512, n_threads });
        try {
          assert.equal(await ctx.initMultimodal({ path: files.mmproj, use_gpu: false }), true);
          const r = await ctx.completion({
            prompt: c.prompt!,
            media_paths: c.images.map((f) => join(media, f)),
            n_predict: 1,
            top_logits: 1000,
          });
          const got = r.top_logits!;
          if (!first) first = got;
          else assert.deepEqual(got, first, `${name}: ${n_threads} threads differ from 1`);
        } finally {
          await ctx.release();
        }
      }
    });
  }
});
