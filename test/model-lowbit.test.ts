// Models in the codebook and ternary types, end to end: rand-llama-F32.gguf quantized by
// `llama-ts quantize` (with the random importance matrix of helpers/imatrices.ts) to
// IQ2_XXS, IQ2_XS and IQ1_S (llama-quantize's mixes: their token_embd and output cannot
// take the type without an imatrix entry) and, every tensor of the type (--pure), to
// IQ2_M (IQ2_S), IQ3_XXS, IQ3_S, IQ1_M, TQ1_0, TQ2_0. Each file must be the bytes
// llama-quantize writes (SHA-256 pinned from the scratch harness), then run on the
// default device against node-llama-cpp 3.21.1 on the same file (fixtures/lowbit-refs.json,
// from ../shared/tools/ref.mjs): top-10 logits relative to the top one within 0.1, and
// teacher-forced greedy tokens identical wherever llama.cpp's top-2 gap exceeds 0.2.
// The quantized files are cached in the model cache (checked by hash on every run).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { defaultCacheDir } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import type { FileTypeName } from '../src/quantize/ftypes.js';
import { readImatrixFile } from '../src/quantize/imatrix-file.js';
import { quantizeModel } from '../src/quantize/model.js';
import { writeImatrices } from './helpers/imatrices.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const F32_REL = 'fixtures/rand-llama-F32.gguf';
const f32 = sharedPath(F32_REL);
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-lowbit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Case {
  prompt: string;
  tokens: number[];
  top10: [number, number][];
  greedy: number[];
  greedy_gap: number[];
}
const REFS = JSON.parse(
  readFileSync(new URL('../../test/fixtures/lowbit-refs.json', import.meta.url), 'utf8'),
) as Record<string, Case[]>;

// [file type, --pure, SHA-256 (128 bits) of the file llama-quantize writes]
const FILES: ReadonlyArray<[FileTypeName, boolean, string]> = [
  ['IQ2_XXS', false, '8b0c7cd83c5654145ba813c79e32a6eb'],
  ['IQ2_XS', false, '8d79e117102a1425b85bd9e3add9bb72'],
  ['IQ1_S', false, '9e217a69c29ffe32a915a49696a8ffc0'],
  ['IQ2_M', true, 'f30634dd8c8ae9ea00da8cbbab237936'],
  ['IQ3_XXS', true, 'd4e8e5bba3c63ff20786d98b77c5c06e'],
  ['IQ3_S', true, '1ee46b1d1178d2d1979ecee1436ab538'],
  ['IQ1_M', true, '8af025c7b67cd2da68d2ab6c69284f03'],
  ['TQ1_0', true, 'f65581574697b2639bca5bf8f5b3b04c'],
  ['TQ2_0', true, 'a9d722bfeef4c90c16528975103c6b0c'],
];

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 32);

/** The quantized file: from the cache when its bytes are the pinned ones, else quantized now. */
async function quantized(ft: FileTypeName, pure: boolean, hash: string): Promise<string> {
  const cache = defaultCacheDir();
  const path = join(cache, `rand-llama-${ft}${pure ? '-pure' : ''}-${hash.slice(0, 16)}.gguf`);
  if (existsSync(path) && sha(path) === hash) return path;
  const im = join(dir, 'im');
  if (!existsSync(`${im}-random.gguf`)) writeImatrices(f32!, im);
  const tmp = join(dir, `${ft}.gguf`);
  await quantizeModel(f32!, tmp, {
    fileType: ft,
    pure,
    imatrix: readImatrixFile(`${im}-random.gguf`),
    imatrixPath: '/work/scratch-quant/im-random.gguf',
  });
  assert.equal(sha(tmp), hash, `${ft}: the file differs from llama-quantize's`);
  mkdirSync(cache, { recursive: true });
  renameSync(tmp, path);
  return path;
}

function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}

const TOL = 0.1;

for (const [ft, pure, hash] of FILES) {
  test(`${ft}${pure ? ' (pure)' : ''}: llama-quantize's file, node-llama-cpp's logits and greedy tokens`, {
    skip: f32 ? false : missingShared(F32_REL),
  }, async () => {
    setLogCallback(() => {});
    const model = await Model.load(await quantized(ft, pure, hash));
    try {
      for (const c of REFS[ft]!) {
        const tokens = model.vocab.encode(c.prompt, { addSpecial: true, parseSpecial: false });
        assert.deepEqual(tokens, c.tokens, `${ft} ${c.prompt}: tokens`);
        const ctx = new Context(model, { nCtx: 128 });
        try {
          await ctx.decode({ tokens });
          const first = ctx.getLogits(-1);
          const [top, topLp] = c.top10[0]!;
          for (const [id, lp] of c.top10) {
            const d = Math.abs(first[id]! - first[top]! - (lp - topLp));
            assert.ok(d <= TOL, `${ft} '${c.prompt}': token ${id} relative logit off by ${d.toFixed(4)}`);
          }
          const rest = c.greedy.slice(0, -1);
          await ctx.decode({ tokens: rest, logits: rest.map(() => true) });
          for (let s = 0; s < c.greedy.length; s++) {
            if (c.greedy_gap[s]! <= 2 * TOL) continue;
            const picked = argmax(s === 0 ? first : ctx.getLogits(s - 1));
            assert.equal(picked, c.greedy[s], `${ft} '${c.prompt}': greedy step ${s} (gap ${c.greedy_gap[s]})`);
          }
        } finally {
          ctx.free();
        }
      }
    } finally {
      model.free();
    }
  });
}
