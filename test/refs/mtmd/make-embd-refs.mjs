// Regenerates test/refs/mtmd/<pair>.embd.json: the embedding rows llama.cpp's mtmd computes
// for the media (images or audio clips) of a generated pair's cases, taken from the oracle
// binary itself (oracle-embd.c, built here with the system C compiler against llama.node's
// headers, loads @fugood/llama.node 1.7.15's index.node). The media are decoded by src/media
// (bit-identical to stb_image and mtmd-helper's miniaudio decoder) and handed over as RGB
// bytes or samples. Rows 0, 1, the middle one and the last two of every chunk are kept, as
// base64 float32. Run from the repository root after `npm run build`:
//   node test/refs/mtmd/make-embd-refs.mjs --only PAIR[,PAIR] [--cache DIR]
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const opt = (name) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv.splice(at, 2)[1] : undefined;
};
const only = opt('--only')?.split(',');
if (!only) throw new Error('--only PAIR[,PAIR] is required (the pairs to write references for)');
const root = join(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const here = join(root, 'test/refs/mtmd');
const cache = opt('--cache') ?? join(homedir(), '.cache/llama-ts/mtmd-gen');
const lnDir = process.env.LLAMA_NODE_DIR ?? join(homedir(), '.cache/llama-ts/oracles/llama.node');
const pkg = join(lnDir, 'node_modules/@fugood/llama.node');
const lnVersion = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).version;
const addon = join(lnDir, 'node_modules/@fugood/node-llama-linux-x64/index.node');
const { genPairs, ensurePair, writeMedia } = await import(join(root, 'dist/test/helpers/mtmd-gen-pairs.js'));
const { decodeAudio, decodeImage } = await import(join(root, 'dist/src/media/index.js'));

const tool = join(tmpdir(), `oracle-embd-${process.pid}`);
const inc = (d) => ['-I', join(pkg, 'src/llama.cpp', d)];
execFileSync('cc', ['-O1', ...inc('include'), ...inc('ggml/include'), join(here, 'oracle-embd.c'), '-o', tool, '-ldl']);
const mediaDir = join(cache, 'media');
writeMedia(mediaDir);

for (const pair of genPairs(join(root, '../shared/models/stories260K.gguf'))) {
  if (!only.includes(pair.name)) continue;
  const { model, mmproj } = ensurePair(pair, join(cache, 'models'));
  const media = [...new Set(pair.cases.flatMap((c) => c.media))];
  const items = [];
  for (const name of media) {
    const bytes = readFileSync(join(mediaDir, name));
    const raw = join(tmpdir(), `oracle-embd-${process.pid}.f32`);
    const out = `${raw}.out`;
    const env = { ...process.env };
    if (name.endsWith('.wav')) {
      const { samples } = await decodeAudio(bytes);
      writeFileSync(raw, new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
    } else {
      const img = await decodeImage(bytes);
      writeFileSync(raw, img.data);
      Object.assign(env, { IMG_W: String(img.width), IMG_H: String(img.height) });
    }
    execFileSync(tool, [addon, model, mmproj, raw, out], { env, stdio: ['ignore', 'ignore', 'ignore'] });
    const buf = readFileSync(out);
    const chunks = [];
    for (let off = 0; off < buf.length; ) {
      const n = buf.readInt32LE(off);
      const width = buf.readInt32LE(off + 4);
      off += 8;
      const rows = {};
      for (const r of new Set([0, 1, Math.floor(n / 2), n - 2, n - 1].filter((r) => r >= 0 && r < n))) {
        rows[r] = buf.subarray(off + r * width * 4, off + (r + 1) * width * 4).toString('base64');
      }
      chunks.push({ n_tokens: n, width, rows });
      off += n * width * 4;
    }
    process.stderr.write(`${pair.name}: ${name}: ${chunks.map((c) => c.n_tokens).join(' + ')} rows\n`);
    items.push({ media: name, chunks });
  }
  const ref = {
    projector: pair.mmproj.projector,
    oracle: `@fugood/llama.node@${lnVersion} index.node (llama.cpp build 10257), mtmd_encode_chunk on the CPU, 1 thread`,
    notes: [
      'Each image or audio chunk of each media file (alone at one <__media__> marker): its row count, width and rows 0, 1, n/2, n-2, n-1 as base64 little-endian float32.',
    ],
    media: items,
  };
  writeFileSync(join(here, `${pair.name}.embd.json`), `${JSON.stringify(ref, null, 1)}\n`);
}
for (const f of [
  tool,
  join(tmpdir(), `oracle-embd-${process.pid}.f32`),
  join(tmpdir(), `oracle-embd-${process.pid}.f32.out`),
]) {
  rmSync(f, { force: true });
}
execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', here], { stdio: 'ignore' });
