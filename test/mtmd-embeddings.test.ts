// Image and audio embeddings against llama.cpp's own: test/refs/mtmd/<pair>.embd.json holds
// rows the oracle binary's mtmd_encode_chunk computed for each media file of a generated pair
// (made by test/refs/mtmd/make-embd-refs.mjs). Each file goes through Multimodal as a
// prompt's media does (decoded, preprocessed or log-mel, cut into chunks, encoded) and the
// stored rows are compared: a far finer check than mtmd-generated.test.ts's log-probabilities
// (the patch embedding's F32 instead of F16 im2col moved image rows by 2e-4..6e-4 rms and
// gemma4a's audio rows by 2.5e-4, and passed there).
//
// Bounds per pair, from the measured worst chunk with some room. What is left is ggml-cpu's
// F32 and F16 dot products (llama.node's x64 build is scalar: f32 products summed in double;
// ours sum in f32 lanes), about 1e-7 relative, which the encoders' F16 roundings amplify:
// each F16 rounding that goes the other way is an F16 ulp (5e-4 relative). Least where the
// attention is the tiled kernel (64+ patches: f32 sums); most in ggml-cpu's one-chunk kernel
// (fewer than 64 patches: qwen2vl, qwen2.5vl, qwen3vl's small images, whose V sums are kept in
// F16) and after GELU's F16 tables.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultCacheDir } from '../src/generator/index.js';
import { decodeAudio, decodeImage } from '../src/media/index.js';
import { Model } from '../src/model/index.js';
import { MEDIA_MARKER, Multimodal } from '../src/multimodal/mtmd.js';
import { ensureReferencePair, genPairs, writeMedia } from './helpers/mtmd-gen-pairs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const REFS = fileURLToPath(new URL('../../test/refs/mtmd/', import.meta.url));
const VOCAB = sharedPath('models/stories260K.gguf');
const CACHE = join(defaultCacheDir(), 'mtmd-gen');
/** Per pair, over the stored rows of a chunk: largest |difference|, and rms difference / rms value. */
const BOUNDS: Record<string, { maxAbs: number; rmsRel: number }> = {
  gemma3: { maxAbs: 8e-5, rmsRel: 2e-5 },
  gemma4a: { maxAbs: 5e-4, rmsRel: 5e-5 },
  'gemma4-omni': { maxAbs: 3e-4, rmsRel: 5e-5 },
  qwen25omni: { maxAbs: 1e-3, rmsRel: 3e-4 },
  gemma4v: { maxAbs: 1.5e-4, rmsRel: 3e-5 },
  'gemma4v-clamp': { maxAbs: 2e-4, rmsRel: 4e-5 },
  internvl: { maxAbs: 1e-3, rmsRel: 4e-4 },
  ldp: { maxAbs: 1.2e-3, rmsRel: 2e-4 },
  ldpv2: { maxAbs: 8e-4, rmsRel: 8e-5 },
  llava: { maxAbs: 6e-4, rmsRel: 1.4e-4 },
  llava16: { maxAbs: 7e-4, rmsRel: 1.4e-4 },
  pixtral: { maxAbs: 7e-4, rmsRel: 2e-4 },
  'pixtral-merger': { maxAbs: 6e-4, rmsRel: 2e-4 },
  qwen25vl: { maxAbs: 9e-4, rmsRel: 3e-4 },
  qwen2vl: { maxAbs: 1.5e-3, rmsRel: 6e-4 },
  qwen3vl: { maxAbs: 2e-3, rmsRel: 5e-4 },
};

interface EmbdRef {
  projector: string;
  media: { media: string; chunks: { n_tokens: number; width: number; rows: Record<string, string> }[] }[];
}

const names = readdirSync(REFS)
  .filter((f) => f.endsWith('.embd.json'))
  .map((f) => f.slice(0, -'.embd.json'.length))
  .sort();

for (const name of names) {
  const ref = JSON.parse(readFileSync(join(REFS, `${name}.embd.json`), 'utf8')) as EmbdRef;
  describe(`mtmd embeddings ${name} (${ref.projector})`, {
    skip: VOCAB ? false : missingShared('models/stories260K.gguf'),
  }, () => {
    let model: Model;
    let mtmd: Multimodal;
    const media = join(CACHE, 'media');
    before(async () => {
      const pair = genPairs(VOCAB!).find((p) => p.name === name);
      assert.ok(pair, `${name}: no generated pair of that name`);
      const files = ensureReferencePair(pair, join(CACHE, 'models'));
      writeMedia(media);
      model = await Model.load(files.model);
      mtmd = await Multimodal.load(files.mmproj, model, { nThreads: 1 });
    });
    after(() => {
      mtmd?.free();
      model?.free();
    });

    const bound = BOUNDS[name];
    test(`${name}: has bounds`, () => assert.ok(bound, `${name}: no entry in BOUNDS`));
    for (const clip of ref.media) {
      test(`${name}: ${clip.media}: ${clip.chunks.map((c) => c.n_tokens).join(' + ')} rows`, async () => {
        const bytes = readFileSync(join(media, clip.media));
        const input = clip.media.endsWith('.wav')
          ? { samples: (await decodeAudio(bytes)).samples }
          : await decodeImage(bytes);
        const chunks = mtmd.tokenize(MEDIA_MARKER, [input]).filter((c) => c.type === 'image');
        assert.deepEqual(
          chunks.map((c) => c.nTokens),
          clip.chunks.map((c) => c.n_tokens),
          `${clip.media}: rows per chunk`,
        );
        for (const [k, want] of clip.chunks.entries()) {
          const got = await chunks[k]!.encode();
          assert.equal(got.width, want.width, `${clip.media} chunk ${k}: width`);
          let maxAbs = 0;
          let d2 = 0;
          let v2 = 0;
          for (const [row, b64] of Object.entries(want.rows)) {
            const bytes = Buffer.from(b64, 'base64');
            const r = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
            const at = Number(row) * got.width;
            for (let i = 0; i < r.length; i++) {
              const d = Math.abs(got.data[at + i]! - r[i]!);
              maxAbs = Math.max(maxAbs, d);
              d2 += d * d;
              v2 += r[i]! * r[i]!;
            }
          }
          const rel = Math.sqrt(d2 / v2);
          console.log(
            `# ${name}/${clip.media} chunk ${k}: max |d| ${maxAbs.toExponential(2)}, rms rel ${rel.toExponential(2)}`,
          );
          const { maxAbs: MAX_ABS, rmsRel: RMS_REL } = bound ?? { maxAbs: 0, rmsRel: 0 };
          assert.ok(maxAbs <= MAX_ABS, `${clip.media} chunk ${k}: max |d| ${maxAbs} over ${MAX_ABS}`);
          assert.ok(rel <= RMS_REL, `${clip.media} chunk ${k}: rms rel ${rel} over ${RMS_REL}`);
        }
      });
    }
  });
}
