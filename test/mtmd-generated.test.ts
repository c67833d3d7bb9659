// Generated multimodal pairs (test/helpers/mtmd-gen-pairs.ts: text model + mmproj of each
// projector type the generator writes, with the fixed, dynamic and tiled preprocessing paths)
// against llama.cpp's answers in test/refs/mtmd/*.ref.json (llama.node 1.7.15; remade by
// test/refs/mtmd/make-refs.mjs). Each pair is generated (SHA-256 checked against
// test/refs/mtmd/models.json), loaded through the library API (loadModel, initMultimodal,
// tokenize / completion with media_paths or messages), and every case compared: the prompt
// layout exactly, each top-10 log-probability relative to llama.cpp's top-1 within 0.05,
// llama.cpp's top-1 among our top-10, and the first 4 greedy tokens (llama.node's greedy
// run drifts from its own prompt evaluation after about 4 tokens: see mtmd-vision.test.ts).
// Each case is a test of its own, named with the preprocessing path it exercises (fixed,
// dynamic, tiled, audio).
// Every projector type the generator writes must run (an unknown one fails: initMultimodal refuses it).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type LlamaContext, loadModel } from '../src/api/index.js';
import { defaultCacheDir } from '../src/generator/index.js';
import { isAudioProjector } from '../src/generator/mmproj.js';
import { ensureReferencePair, genPairs, PAIR_MANIFEST, writeMedia } from './helpers/mtmd-gen-pairs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const REFS = fileURLToPath(new URL('../../test/refs/mtmd/', import.meta.url));
const VOCAB = sharedPath('models/stories260K.gguf');
const CACHE = join(defaultCacheDir(), 'mtmd-gen');
const TOL = 0.05;
const GREEDY_CHECKED = 4;

interface RefCase {
  name: string;
  path: string;
  oracle_error?: string;
  prompt?: string;
  messages?: { role: string; content: Record<string, unknown>[] }[];
  images: string[];
  n_tokens: number;
  prompt_tokens: number[];
  chunk_pos: number[];
  chunk_pos_media: number[];
  top10: [string, number][];
  top10_ids: (number | number[] | null)[];
  greedy_ids: (number | number[] | null)[];
}

const refNames = readdirSync(REFS)
  .filter((f) => f.endsWith('.ref.json'))
  .map((f) => f.slice(0, -'.ref.json'.length))
  .sort();
const pairs = VOCAB ? genPairs(VOCAB) : [];

test('every generated pair has references and a manifest entry', {
  skip: VOCAB ? false : missingShared('models/stories260K.gguf'),
}, () => {
  assert.deepEqual(pairs.map((p) => p.name).sort(), refNames);
  for (const p of pairs) assert.equal(PAIR_MANIFEST[p.name]?.projector, p.mmproj.projector, p.name);
});

for (const name of refNames) {
  const ref = JSON.parse(readFileSync(join(REFS, `${name}.ref.json`), 'utf8')) as {
    projector: string;
    cases: RefCase[];
  };
  const skip = VOCAB ? false : missingShared('models/stories260K.gguf');
  describe(`mtmd generated ${name} (${ref.projector})`, { skip }, () => {
    let ctx: LlamaContext;
    const media = join(CACHE, 'media');
    before(async () => {
      const pair = pairs.find((p) => p.name === name)!;
      const files = ensureReferencePair(pair, join(CACHE, 'models'));
      writeMedia(media);
      // the oracle ran at 4096; llama-ts refuses more than the tiny Gemma 4's 2048 trained
      // positions (every case fits in either)
      const nCtx = pair.text.arch === 'gemma4' ? 2048 : 4096;
      ctx = await loadModel({ model: files.model, n_ctx: nCtx, n_batch: 2048, n_ubatch: 512, n_threads: 1 });
      assert.equal(await ctx.initMultimodal({ path: files.mmproj, use_gpu: false }), true);
      // a file with a vision and an audio encoder takes both (mtmd_support_vision / _audio)
      const audio = isAudioProjector(pair.mmproj.projector);
      assert.deepEqual(await ctx.getMultimodalSupport(), { vision: !audio, audio: audio || !!pair.mmproj.audio });
    });
    after(async () => {
      await ctx?.release();
    });

    for (const c of ref.cases) {
      const what = `${name}/${c.name} (${c.path})`;
      test(what, { skip: c.oracle_error ? `llama.node failed on this case: ${c.oracle_error}` : false }, async () => {
        const paths = c.images.map((f) => join(media, f));
        if (c.prompt !== undefined) {
          const tk = await ctx.tokenize(c.prompt, paths);
          assert.deepEqual(Array.from(tk.tokens), c.prompt_tokens, `${what}: prompt tokens`);
          assert.deepEqual(tk.chunk_pos, c.chunk_pos, `${what}: chunk_pos`);
          assert.deepEqual(tk.chunk_pos_media, c.chunk_pos_media, `${what}: chunk_pos_media`);
        }
        const input =
          c.prompt !== undefined
            ? { prompt: c.prompt, media_paths: paths }
            : { messages: withPaths(c, media) as Parameters<LlamaContext['completion']>[0]['messages'] };
        const r = await ctx.completion({ ...input, n_predict: 1, top_logits: 1000, return_tokens: true });
        assert.equal(r.tokens_evaluated, c.n_tokens, `${what}: positions after the prompt`);
        assert.deepEqual(r.prompt_tokens, c.prompt_tokens, `${what}: prompt tokens of the completion`);
        const logits = new Map(r.top_logits!);
        const max = Math.max(...logits.values());
        let z = 0;
        for (const l of logits.values()) z += Math.exp(l - max);
        // a rendering several tokens give (a byte token and a piece): the k-th time it is listed,
        // the k-th most probable of them
        const prob = (ids: number | number[] | null, k = 0) =>
          [ids ?? []]
            .flat()
            .map((id) => Math.exp((logits.get(id) ?? Number.NEGATIVE_INFINITY) - max) / z)
            .sort((a, b) => b - a)[k] ?? 0;
        const ranked = [...logits.keys()].sort((x, y) => logits.get(y)! - logits.get(x)!).slice(0, 10);
        const top1 = [c.top10_ids[0] ?? []].flat();
        assert.ok(
          top1.some((id) => ranked.includes(id)),
          `${what}: llama.cpp's top-1 ${top1} not among ours (${ranked})`,
        );
        const p0 = prob(c.top10_ids[0]!);
        let worst = 0;
        const seen = new Map<string, number>();
        c.top10.forEach(([tok, pRef], i) => {
          if (c.top10_ids[i] === null) return; // a rendering no token of the vocabulary gives
          const k = seen.get(tok) ?? 0;
          seen.set(tok, k + 1);
          const p = prob(c.top10_ids[i]!, k);
          const d = Math.abs(Math.log(p) - Math.log(p0) - (Math.log(pRef) - Math.log(c.top10[0]![1])));
          worst = Math.max(worst, d);
          assert.ok(
            d <= TOL,
            `${what}: ${JSON.stringify(tok)} log-prob differs by ${d.toFixed(4)} (ours ${p}, llama.cpp ${pRef})`,
          );
        });
        // evaluated afresh and without ignore_eos, as mtmd-vision.test.ts does (a one-token decode
        // after many media cells takes the CPU device's split flash attention; llama.node's
        // ignore_eos does not mask the end-of-generation tokens it finds by name)
        const g = await ctx.completion({
          ...input,
          n_predict: 8,
          temperature: 0,
          cache_prompt: false,
          return_tokens: true,
        });
        c.greedy_ids.slice(0, GREEDY_CHECKED).forEach((w, i) => {
          const t = g.tokens![i]!;
          assert.ok([w ?? []].flat().includes(t), `${what}: greedy token ${i}: ${t}, llama.cpp ${w}`);
        });
        console.log(`# ${what}: max |d log-prob| ${worst.toFixed(4)}`);
      });
    }
  });
}

function withPaths(c: RefCase, dir: string) {
  return c.messages!.map((m) => ({
    ...m,
    content: m.content.map((p) =>
      p.type === 'image_url'
        ? { type: 'image_url', image_url: { url: join(dir, (p.image_url as { url: string }).url) } }
        : p,
    ),
  }));
}
