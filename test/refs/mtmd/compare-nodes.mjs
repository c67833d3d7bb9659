// Debugging aid: where an encoder's rows part from llama.cpp's. Runs one media file of a
// generated pair through the oracle binary (oracle-embd.c with DUMP_DIR: every F32 node of
// build 10257's encoder graph) and through ours (VisionEncoder.onNodes), and prints, for each
// contiguous oracle node in graph order, the node of ours of the same size that is closest
// to it (rms difference relative to its rms, and the largest |difference|). The first node
// whose difference jumps is where to look. First chunk only. Run from the repository root
// after `npm run build`:
//   node test/refs/mtmd/compare-nodes.mjs PAIR MEDIA   (e.g. gemma3 grad-64x48.png)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [pairName, mediaName] = process.argv.slice(2);
if (!pairName || !mediaName) throw new Error('usage: compare-nodes.mjs PAIR MEDIA');
const root = join(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const cache = join(homedir(), '.cache/llama-ts/mtmd-gen');
const lnDir = process.env.LLAMA_NODE_DIR ?? join(homedir(), '.cache/llama-ts/oracles/llama.node');
const pkg = join(lnDir, 'node_modules/@fugood/llama.node');
const addon = join(lnDir, 'node_modules/@fugood/node-llama-linux-x64/index.node');
const { genPairs, ensurePair, writeMedia } = await import(join(root, 'dist/test/helpers/mtmd-gen-pairs.js'));
const { decodeAudio, decodeImage } = await import(join(root, 'dist/src/media/index.js'));
const { Model } = await import(join(root, 'dist/src/model/index.js'));
const { MEDIA_MARKER, Multimodal } = await import(join(root, 'dist/src/multimodal/mtmd.js'));

const pair = genPairs(join(root, '../shared/models/stories260K.gguf')).find((p) => p.name === pairName);
if (!pair) throw new Error(`${pairName}: no generated pair of that name`);
const { model, mmproj } = ensurePair(pair, join(cache, 'models'));
writeMedia(join(cache, 'media'));
const bytes = readFileSync(join(cache, 'media', mediaName));
const audio = mediaName.endsWith('.wav');
const input = audio ? { samples: (await decodeAudio(bytes)).samples } : await decodeImage(bytes);

const dir = mkdtempSync(join(tmpdir(), 'compare-nodes-'));
const tool = join(dir, 'oracle-embd');
const inc = (d) => ['-I', join(pkg, 'src/llama.cpp', d)];
execFileSync('cc', [
  '-O1',
  ...inc('include'),
  ...inc('ggml/include'),
  join(root, 'test/refs/mtmd/oracle-embd.c'),
  '-o',
  tool,
  '-ldl',
]);
const raw = join(dir, 'input');
writeFileSync(
  raw,
  audio ? new Uint8Array(input.samples.buffer, input.samples.byteOffset, input.samples.byteLength) : input.data,
);
const env = {
  ...process.env,
  DUMP_DIR: dir,
  ...(audio ? {} : { IMG_W: String(input.width), IMG_H: String(input.height) }),
};
const run = spawnSync(tool, [addon, model, mmproj, raw, join(dir, 'out.bin')], { env, maxBuffer: 1 << 28 });
if (run.status !== 0) throw new Error(`oracle-embd exited with ${run.status}: ${run.stderr.toString().slice(-2000)}`);
const log = run.stderr.toString();

const m = await Model.load(model);
const mtmd = await Multimodal.load(mmproj, m, { nThreads: 1 });
let ours = [];
mtmd.encoder.onNodes = (nodes) => {
  if (ours.length === 0) ours = nodes;
};
const chunk = mtmd.tokenize(MEDIA_MARKER, [input]).find((c) => c.type === 'image');
await chunk.encode();

// the oracle numbers its nodes on across chunks: the first chunk ends where its first node comes again
let first = null;
for (const line of log.split('\n')) {
  const mm = /^@@NODE (\d+) (\S+) (.*?) \[(\d+) (\d+) (\d+) (\d+)\]( \(not contiguous.*)?$/.exec(line);
  if (!mm) continue;
  const idx = Number(mm[1]);
  const key = mm.slice(2, 8).join(' ');
  if (first === null) first = key;
  else if (key === first) break;
  if (mm[8] || mm[2] === 'RESHAPE' || mm[2] === 'VIEW') continue;
  const n = [4, 5, 6, 7].reduce((a, i) => a * Number(mm[i]), 1);
  const b = readFileSync(join(dir, `${String(idx).padStart(3, '0')}.bin`));
  const ref = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  let best = null;
  for (const [j, t] of ours.entries()) {
    if (t.data.length !== n) continue;
    let d2 = 0;
    let v2 = 0;
    let max = 0;
    for (let i = 0; i < n; i++) {
      const d = t.data[i] - ref[i];
      d2 += d * d;
      v2 += ref[i] * ref[i];
      max = Math.max(max, Math.abs(d));
    }
    const rel = Math.sqrt(d2 / (v2 || 1));
    if (!best || rel < best.rel) best = { j, rel, max, t };
  }
  const what = best
    ? `ours #${best.j} ${best.t.op} ${best.t.name}: rms rel ${best.rel.toExponential(2)}, max ${best.max.toExponential(2)}`
    : 'none of ours this size';
  console.log(`${idx} ${mm[2]} ${mm[3]} [${n}] -> ${what}`);
}
mtmd.free();
m.free();
rmSync(dir, { recursive: true, force: true });
