// Audio embeddings against llama.cpp's own: test/refs/mtmd/<pair>.embd.json holds rows the
// oracle binary's mtmd_encode_chunk computed for each clip of a generated pair (made by
// test/refs/mtmd/make-embd-refs.mjs). Each clip goes through Multimodal as a prompt's media
// does (decoded, log-mel, cut into chunks, encoded) and the stored rows are compared: a far
// finer check than mtmd-generated.test.ts's log-probabilities (gemma4a's convolutions with an
// F32 instead of F16 im2col moved the rows by 2.5e-4 rms and still passed there).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultCacheDir } from '../src/generator/index.js';
import { decodeAudio } from '../src/media/index.js';
import { Model } from '../src/model/index.js';
import { MEDIA_MARKER, Multimodal } from '../src/multimodal/mtmd.js';
import { ensurePair, genPairs, writeMedia } from './helpers/mtmd-gen-pairs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const REFS = fileURLToPath(new URL('../../test/refs/mtmd/', import.meta.url));
const VOCAB = sharedPath('models/stories260K.gguf');
const CACHE = join(defaultCacheDir(), 'mtmd-gen');
/** Over the stored rows of a chunk: largest |difference|, and rms difference / rms value. */
const MAX_ABS = 5e-4;
const RMS_REL = 5e-5;

interface EmbdRef {
  projector: string;
  clips: { media: string; chunks: { n_tokens: number; width: number; rows: Record<string, string> }[] }[];
}

const manifest: Record<string, { model: string; mmproj: string }> = JSON.parse(
  readFileSync(join(REFS, 'models.json'), 'utf8'),
);
const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
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
      const files = ensurePair(pair, join(CACHE, 'models'));
      writeMedia(media);
      assert.equal(
        sha(files.model),
        manifest[name]!.model,
        `${files.model}: not the file the references were made with`,
      );
      assert.equal(
        sha(files.mmproj),
        manifest[name]!.mmproj,
        `${files.mmproj}: not the file the references were made with`,
      );
      model = await Model.load(files.model);
      mtmd = await Multimodal.load(files.mmproj, model, { nThreads: 1 });
    });
    after(() => {
      mtmd?.free();
      model?.free();
    });

    for (const clip of ref.clips) {
      test(`${name}: ${clip.media}: ${clip.chunks.map((c) => c.n_tokens).join(' + ')} rows`, async () => {
        const { samples } = await decodeAudio(readFileSync(join(media, clip.media)));
        const chunks = mtmd.tokenize(MEDIA_MARKER, [{ samples }]).filter((c) => c.type === 'image');
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
          assert.ok(maxAbs <= MAX_ABS, `${clip.media} chunk ${k}: max |d| ${maxAbs} over ${MAX_ABS}`);
          assert.ok(rel <= RMS_REL, `${clip.media} chunk ${k}: rms rel ${rel} over ${RMS_REL}`);
        }
      });
    }
  });
}
