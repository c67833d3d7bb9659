// A mixture of experts at real size (not a test):
//   npm run bench:moe-load [-- --model=FILE.gguf | --layers=48 --type=Q4_0 --dir=DIR] [--threads=2] [--ctx=2048] [--keep]
// Without --model it generates the qwen3-30b-a3b preset (Qwen3-30B-A3B's shape: 48 layers,
// 128 experts of 768, top-8; ≈ 17 GB in Q4_0) into DIR (default: the system's temporary
// folder; never the repository), printing the time and the disk it took, and deletes the
// file afterwards unless --keep. Then, in a fresh process: load time, peak RSS against file
// + KV cache + 10%, tg128 (128 single-token decodes after a short prompt), and the bytes of
// weights a decoded token reads: the chosen experts' rows (MUL_MAT_ID reads those only) and
// the rest, against the active-parameter count.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statfsSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomTokens } from './tokens.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) =>
  argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const GiB = 2 ** 30;
const TG = 128;

interface Result {
  load_ms: number;
  rss_gib: number;
  file_gib: number;
  kv_gib: number;
  tg: number;
  /** Bytes one decoded token reads: the chosen experts' rows, and every other weight. */
  expert_bytes: number;
  other_bytes: number;
  active_params: number;
  total_params: number;
  experts: string;
}

async function child(path: string, threads: number, nCtx: number): Promise<Result> {
  const { Model, Context } = await import('../src/model/index.js');
  const t0 = performance.now();
  let last = 0;
  const model = await Model.load(path, {
    onProgress: (f) => {
      if (f - last >= 0.1 || f === 1) {
        last = f;
        process.stderr.write(`bench:moe-load: loading ${(f * 100).toFixed(0)}%\n`);
      }
    },
  });
  const ctx = new Context(model, { nCtx, nThreads: threads });
  const load_ms = performance.now() - t0;
  const hp = model.hp;
  const moe = hp.moe;
  if (!moe) throw new Error(`${path}: not a mixture of experts`);
  // per decoded token: nUsed of nExpert rows of every expert stack; the rest whole except
  // the token embedding table (one row)
  let expert = 0;
  let other = 0;
  let active = 0;
  let total = 0;
  for (const t of model.weights.all()) {
    total += t.nelements;
    if (t.name.includes('_exps.')) {
      expert += (t.nbytes * moe.nExpertUsed) / moe.nExpert;
      active += (t.nelements * moe.nExpertUsed) / moe.nExpert;
    } else if (t.name === 'token_embd.weight') {
      other += t.nbytes / t.ne[1];
      active += t.ne[0];
    } else {
      other += t.nbytes;
      active += t.nelements;
    }
  }
  const nVocab = hp.nVocab;
  await ctx.decode({ tokens: randomTokens(16, nVocab, 7) });
  const gen = randomTokens(TG, nVocab, 43);
  const t1 = performance.now();
  for (const t of gen) await ctx.decode({ tokens: [t] });
  const tg = (TG * 1000) / (performance.now() - t1);
  const kv = ctx.memory?.bytes ?? 0;
  ctx.free();
  const r: Result = {
    load_ms,
    rss_gib: (process.resourceUsage().maxRSS * 1024) / GiB,
    file_gib: model.fileSize / GiB,
    kv_gib: kv / GiB,
    tg,
    expert_bytes: expert,
    other_bytes: other,
    active_params: active,
    total_params: total,
    experts: `${moe.nExpertUsed} of ${moe.nExpert}`,
  };
  model.free();
  return r;
}

function runChild(path: string, threads: number, nCtx: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), '--child', path, String(threads), String(nCtx)],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LLAMA_TS_THREADS: String(threads) } },
    );
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('error', reject);
    p.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`child exit ${code}: ${out}`));
      else resolve(JSON.parse(line) as Result);
    });
  });
}

function freeGiB(dir: string): number {
  const s = statfsSync(dir);
  return (s.bavail * s.bsize) / GiB;
}

async function main(): Promise<void> {
  if (argv[0] === '--child') {
    const r = await child(argv[1], Number(argv[2]), Number(argv[3]));
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(0);
  }
  const threads = Number(opt('threads', '2'));
  const nCtx = Number(opt('ctx', '2048'));
  let path = opt('model', '');
  let generated = false;
  if (!path) {
    const { generateModel, presetSpec, progressPrinter, isFileTypeName } = await import('../src/generator/index.js');
    const type = opt('type', 'Q4_0');
    if (!isFileTypeName(type)) throw new Error(`unknown file type ${type}`);
    const layers = Number(opt('layers', '48'));
    const dir = opt('dir', tmpdir());
    mkdirSync(dir, { recursive: true });
    path = join(dir, `qwen3-30b-a3b-L${layers}-${type}.bench.gguf`);
    const spec = presetSpec('qwen3-30b-a3b', type);
    spec.shape.nLayer = layers;
    const before = freeGiB(dir);
    process.stdout.write(`generating ${path} (${layers} layers, ${type}); ${before.toFixed(1)} GiB free\n`);
    const r = generateModel(spec, path, { onProgress: progressPrinter('qwen3-30b-a3b') });
    generated = true;
    process.stdout.write(
      `generated in ${(r.elapsedMs / 1000).toFixed(0)} s: ${(r.fileSize / GiB).toFixed(2)} GiB on disk (${(before - freeGiB(dir)).toFixed(2)} GiB used), ${(r.parameters / 1e9).toFixed(2)}B parameters\n`,
    );
  } else if (!existsSync(path)) throw new Error(`${path}: no such file`);
  try {
    process.stdout.write(
      `file ${(statSync(path).size / GiB).toFixed(2)} GiB; ${threads} threads, context ${nCtx}; load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}\n`,
    );
    const r = await runChild(path, threads, nCtx);
    const limit = (r.file_gib + r.kv_gib) * 1.1;
    process.stdout.write(
      [
        `load ${(r.load_ms / 1000).toFixed(1)} s`,
        `peak RSS ${r.rss_gib.toFixed(2)} GiB vs file ${r.file_gib.toFixed(2)} + KV ${r.kv_gib.toFixed(2)} + 10% = ${limit.toFixed(2)} GiB: ${r.rss_gib <= limit ? 'within' : 'OVER'}`,
        `tg128 ${r.tg.toFixed(2)} t/s`,
        `per token: experts ${r.experts} read, ${(r.expert_bytes / 2 ** 20).toFixed(0)} MiB of expert rows + ${(r.other_bytes / 2 ** 20).toFixed(0)} MiB of other weights; ${(r.active_params / 1e9).toFixed(2)}B active of ${(r.total_params / 1e9).toFixed(2)}B parameters (${((8 * (r.expert_bytes + r.other_bytes)) / r.active_params).toFixed(2)} bits per active parameter)`,
        `load average at the end ${loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')}`,
      ].join('\n'),
    );
    process.stdout.write('\n');
  } finally {
    if (generated && !argv.includes('--keep')) rmSync(path, { force: true });
  }
}

await main();
