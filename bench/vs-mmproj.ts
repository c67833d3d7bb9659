// `npm run bench:vs -- --mmproj [--threads=2] [--reps=1] [--projectors=a,b]`: multimodal
// projectors at real shapes (gen-model --mmproj presets: gemma3-siglip-400m, Gemma 3 4B's
// SigLIP; qwen2.5vl-3b-vision), llama.ts against @fugood/llama.node 1.7.15 (llama.cpp's
// mtmd, CPU), each run in a fresh child process: load, then a text-only prompt and the same
// prompt after an 896x896 image, one token each. Reported: time to first token with the
// image, the image's cost (that minus the text-only prompt's: preprocessing, encoding and
// decoding its embeddings), and the peak RSS the image added (the encoder's working memory).
// The text halves are 2-layer cuts of the real text models (Gemma 3 4B, Qwen2.5-VL-3B) on
// the stories260K vocabulary (../shared/models) plus the media delimiters; all files go to
// the generator's cache. A projector llama.ts does not run is reported as such.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { ensureLlamaNode } from './oracle.js';

interface Args {
  model: string;
  mmproj: string;
  image: string;
  threads: number;
  llamaNode: string;
}
interface Result {
  load_ms: number;
  text_ms: number;
  ttft_ms: number;
  image_rss_mb: number;
  rss_mb: number;
}

const SIDE = 896;
const TEXT = 'Describe the picture in one word:';

/** An 896x896 RGB PNG (a smooth pattern with detail, the same bytes every run). */
function writeImage(path: string): void {
  const row = SIDE * 3 + 1;
  const raw = new Uint8Array(row * SIDE);
  for (let y = 0; y < SIDE; y++) {
    for (let x = 0; x < SIDE; x++) {
      const o = y * row + 1 + x * 3;
      raw[o] = (128 + 100 * Math.sin(x / 37) * Math.cos(y / 53)) | 0;
      raw[o + 1] = (x * 7 + y * 3) & 0xff;
      raw[o + 2] = ((x ^ y) * 5) & 0xff;
    }
  }
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const chunk = (type: string, data: Uint8Array) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    out.set(data, 8);
    let c = 0xffffffff;
    for (const b of out.subarray(4, 8 + data.length)) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    out.writeUInt32BE((c ^ 0xffffffff) >>> 0, 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(SIDE, 0);
  ihdr.writeUInt32BE(SIDE, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array(0)),
  ]);
  writeFileSync(path, png);
}

const rssMb = () => process.resourceUsage().maxRSS / 1024;

async function childLlamaTs(a: Args): Promise<Result> {
  const { loadModel } = await import('../src/api/index.js');
  const t0 = performance.now();
  const ctx = await loadModel({ model: a.model, n_ctx: 4096, n_batch: 2048, n_ubatch: 512, n_threads: a.threads });
  await ctx.initMultimodal({ path: a.mmproj, use_gpu: false });
  const load_ms = performance.now() - t0;
  const t1 = performance.now();
  await ctx.completion({ prompt: TEXT, n_predict: 1 });
  const text_ms = performance.now() - t1;
  const rss0 = rssMb();
  const t2 = performance.now();
  await ctx.completion({ prompt: `<__media__>${TEXT}`, media_paths: [a.image], n_predict: 1 });
  const ttft_ms = performance.now() - t2;
  const rss = rssMb();
  await ctx.release();
  return { load_ms, text_ms, ttft_ms, image_rss_mb: rss - rss0, rss_mb: rss };
}

async function childLlamaNode(a: Args): Promise<Result> {
  const ln = createRequire(join(a.llamaNode, 'x.js'))('@fugood/llama.node');
  const t0 = performance.now();
  const ctx = await ln.loadModel({
    model: a.model,
    n_ctx: 4096,
    n_batch: 2048,
    n_ubatch: 512,
    n_threads: a.threads,
    n_gpu_layers: 0,
    use_mmap: false,
  });
  if (!(await ctx.initMultimodal({ path: a.mmproj, use_gpu: false })))
    throw new Error(`llama.node: initMultimodal(${a.mmproj}) failed`);
  const load_ms = performance.now() - t0;
  const t1 = performance.now();
  await ctx.completion({ prompt: TEXT, n_predict: 1 });
  const text_ms = performance.now() - t1;
  const rss0 = rssMb();
  const t2 = performance.now();
  await ctx.completion({ prompt: `<__media__>${TEXT}`, media_paths: [a.image], n_predict: 1 });
  const ttft_ms = performance.now() - t2;
  const rss = rssMb();
  return { load_ms, text_ms, ttft_ms, image_rss_mb: rss - rss0, rss_mb: rss };
}

function runChild(engine: string, a: Args): Promise<Result> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url), '--mmproj-child', engine, JSON.stringify(a)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      err += d;
    });
    p.on('error', reject);
    p.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('@@'));
      if (code !== 0 || !line)
        reject(new Error(`${engine}: exit ${code}: ${err.trim().split('\n').slice(-3).join(' | ')}`));
      else resolve(JSON.parse(line.slice(2)) as Result);
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function mainMmproj(argv: string[]): Promise<void> {
  const opt = (name: string, dflt: string) =>
    argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
  const threads = Number(opt('threads', '2'));
  const reps = Number(opt('reps', '1'));
  const gen = await import('../src/generator/index.js');
  const { PROJECTORS } = await import('../src/multimodal/mmproj.js');
  // ../shared beside the checkout (or LLAMA_TS_SHARED), as the tests find it
  const shared = process.env.LLAMA_TS_SHARED ?? fileURLToPath(new URL('../../../shared/', import.meta.url));
  const vocab = join(shared, 'models/stories260K.gguf');
  if (!existsSync(vocab)) throw new Error(`${vocab} is absent: the text halves take its vocabulary`);
  const TEXT_SHAPES: Record<string, Parameters<typeof gen.generateModel>[0]> = {
    'gemma3-siglip-400m': {
      arch: 'gemma3',
      name: 'Gemma 3 4B text, 2 layers (random weights)',
      // prettier-ignore
      shape: {
        nEmbd: 2560,
        nLayer: 2,
        nHead: 8,
        nHeadKv: 4,
        headDim: 256,
        nFf: 10240,
        nVocab: 0,
        nCtxTrain: 4096,
        slidingWindow: 1024,
        swaPattern: 6,
        ropeFreqBase: 1e6,
        ropeFreqBaseSwa: 10000,
        tiedEmbeddings: true,
      },
      fileType: 'Q8_0',
      seed: 1,
      vocab: { kind: 'copy', from: vocab, extra: gen.MTMD_DELIMITERS },
    },
    'qwen2.5vl-3b-vision': {
      arch: 'qwen2vl',
      name: 'Qwen2.5-VL-3B text, 2 layers (random weights)',
      // prettier-ignore
      shape: {
        nEmbd: 2048,
        nLayer: 2,
        nHead: 16,
        nHeadKv: 2,
        headDim: 128,
        nFf: 11008,
        nVocab: 0,
        nCtxTrain: 4096,
        ropeSections: [16, 24, 24, 0],
        tiedEmbeddings: true,
      },
      fileType: 'Q8_0',
      seed: 1,
      vocab: { kind: 'copy', from: vocab, extra: gen.MTMD_DELIMITERS },
    },
  };
  const presets = opt('projectors', Object.keys(TEXT_SHAPES).join(',')).split(',');
  const dir = join(gen.defaultCacheDir(), 'mtmd-bench');
  mkdirSync(dir, { recursive: true });
  const image = join(dir, `image-${SIDE}.png`);
  if (!existsSync(image)) writeImage(image);
  const llamaNode = ensureLlamaNode();
  const once = (path: string, write: (tmp: string) => void) => {
    if (existsSync(path)) return path;
    process.stderr.write(`bench:vs --mmproj: generating ${path}\n`);
    write(`${path}.tmp`);
    renameSync(`${path}.tmp`, path);
    return path;
  };
  process.stdout.write(
    `${threads} threads, ${reps} run(s) per engine (medians), image ${SIDE}x${SIDE}, prompt ${JSON.stringify(TEXT)}\n\n`,
  );
  process.stdout.write(
    '| projector | engine | load ms | text-only prompt ms | TTFT with image ms | image cost ms | image peak RSS +MiB | RSS MiB |\n',
  );
  process.stdout.write('|---|---|---|---|---|---|---|---|\n');
  for (const name of presets) {
    const preset = gen.MMPROJ_PRESETS[name];
    const text = TEXT_SHAPES[name];
    if (!preset || !text)
      throw new Error(`--projectors: unknown ${name} (known: ${Object.keys(TEXT_SHAPES).join(', ')})`);
    const model = once(join(dir, `${name}.text.gguf`), (tmp) => gen.generateModel(text, tmp));
    const mmproj = once(join(dir, `${name}.mmproj.gguf`), (tmp) =>
      gen.generateMmproj({ ...preset.spec, seed: 1 }, tmp),
    );
    const args: Args = { model, mmproj, image, threads, llamaNode };
    const engines = (PROJECTORS as readonly string[]).includes(preset.spec.projector)
      ? ['llama.ts', 'llama.node']
      : ['llama.node'];
    if (engines.length === 1)
      process.stdout.write(`| ${name} | llama.ts | projector ${preset.spec.projector} not implemented | | | | | |\n`);
    const got: Record<string, Result[]> = { 'llama.ts': [], 'llama.node': [] };
    for (let r = 0; r < reps; r++) {
      for (const e of r % 2 === 0 ? engines : [...engines].reverse()) {
        process.stderr.write(`bench:vs --mmproj: ${name}: ${e} run ${r + 1}/${reps}\n`);
        got[e]!.push(await runChild(e, args));
      }
    }
    for (const e of engines) {
      const m = (k: keyof Result) => median(got[e]!.map((x) => x[k]));
      process.stdout.write(
        `| ${name} | ${e} | ${m('load_ms').toFixed(0)} | ${m('text_ms').toFixed(0)} | ${m('ttft_ms').toFixed(0)} | ` +
          `${(m('ttft_ms') - m('text_ms')).toFixed(0)} | ${m('image_rss_mb').toFixed(0)} | ${m('rss_mb').toFixed(0)} |\n`,
      );
    }
  }
}

if (process.argv[2] === '--mmproj-child') {
  const engine = process.argv[3]!;
  const a = JSON.parse(process.argv[4]!) as Args;
  (engine === 'llama.ts' ? childLlamaTs(a) : childLlamaNode(a)).then(
    (r) => {
      process.stdout.write(`\n@@${JSON.stringify(r)}\n`);
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`${(e as Error).stack ?? e}\n`);
      process.exit(1);
    },
  );
}
