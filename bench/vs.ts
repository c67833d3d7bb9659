// llama.ts against native llama.cpp (node-llama-cpp's prebuilt binaries) on the same
// generated models, same thread count, alternating runs (not a test):
//   npm run bench:vs [-- --json] [--threads=2] [--reps=3] [--presets=a,b] [--types=Q4_0,Q8_0]
//                    [--long | --no-long] [--moe]
//   npm run bench:vs -- --mmproj [--threads=2] [--reps=1] [--projectors=a,b]   (bench/vs-mmproj.ts)
//   npm run bench:vs -- --device webgpu [--presets=…] [--types=…]
// With --device webgpu every layer and the output go to the WebGPU device (n_gpu_layers 999)
// and node-llama-cpp runs its Vulkan build (@node-llama-cpp/linux-x64-vulkan, gpuLayers
// 'max') on the same machine; the default plan is then the GPU rows (the 630M
// Qwen2.5-0.5B, TinyLlama-1.1B and Gemma-3-1B shapes in Q4_0 and Q4_K_M), the devices each
// engine used are printed, and the CPU read-bandwidth bound is left out.
// For each model (the 630M Qwen2.5-0.5B shape and TinyLlama-1.1B's in Q4_0, Q8_0 and
// Q4_K_M; Gemma-3-1B's and Phi-4-mini's in Q4_0 and Q4_K_M; with --moe the mixtures of
// experts instead: qwen3-30b-a3b in Q4_0 and Q4_K_M and gpt-oss-20b with MXFP4 experts,
// each cut to 12 layers of the real per-layer shape, NAME@LAYERS) every repetition runs llama.ts and node-llama-cpp each in a fresh child process
// (so load time and peak RSS are per engine; the model file is read once before each, so
// both start with it in the page cache), in alternating order: load, a short warm-up,
// pp512 (one 512-token batch) and tg128 (128 single-token decodes from an empty context).
// The table shows medians, the llama.ts / node-llama-cpp ratios, and the tg bound implied
// by the machine's read bandwidth (bytes read per token: every weight but the token
// embedding table, of which one row is read, and of expert stacks the used share).
// Long context (when the plan holds gemma-3-1b Q4_0, or with --long; --no-long skips it):
// gemma-3-1b Q4_0's KV memory at a 32k context (llama.ts: the memory's buffers;
// node-llama-cpp: the sum of llama.cpp's "llama_kv_cache: size = X MiB" log lines, at
// LlamaLogLevel.info), and tg64 at a 4,096-token context against tg64 from an empty one,
// both engines, one run each: two contexts, one filled with 4,096 tokens, take turns
// token by token, so the machine's drift over the run falls on both alike.
// Recurrent memory (when the plan holds qwen3.5-0.8b or lfm2-1.2b; `--memory` prints only
// this): per sequence, the recurrent state's bytes and the attention layers' KV bytes at
// 1k and 32k contexts (llama.ts's buffers; the state does not grow with the context).
// node-llama-cpp@3.21.1 is installed on first use into ~/.cache/llama-ts/oracles (or
// LLAMA_TS_ORACLES), never into the repository; models come from the generator's cache.

import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureOracle } from './oracle.js';
import { randomTokens } from './tokens.js';

const PP = 512;
const TG = 128;

interface EngineRow {
  model: string;
  type: string;
  engine: 'llama.ts' | 'node-llama-cpp';
  pp512: number;
  tg128: number;
  load_ms: number;
  rss_mb: number;
}

interface ChildResult {
  pp: number;
  tg: number;
  load_ms: number;
  rss_mb: number;
  file_mb: number;
  kv_mb: number;
  /** The offload device the run used (--device). */
  device_name?: string;
}

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) =>
  argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// ---- children: one engine, one model, one measurement ----

interface LongResult {
  kv32k_mb: number;
  tg_empty: number;
  tg_4096: number;
}

/**
 * Tokens/s of single-token decodes in two contexts taking turns (the near one first at
 * each token): the same tokens, wall time summed per context.
 */
async function alternate(
  gen: number[],
  near: (t: number) => Promise<unknown>,
  far: (t: number) => Promise<unknown>,
): Promise<{ tg_empty: number; tg_4096: number }> {
  let a = 0;
  let b = 0;
  for (const t of gen) {
    const t0 = performance.now();
    await near(t);
    const t1 = performance.now();
    await far(t);
    a += t1 - t0;
    b += performance.now() - t1;
  }
  return { tg_empty: (gen.length * 1000) / a, tg_4096: (gen.length * 1000) / b };
}

const LONG_CTX = 32768;
const LONG_FILL = 4096;
const LONG_TG = 64;

interface ChildArgs {
  path: string;
  threads: number;
  nVocab: number;
  bos: number;
  /** An offload device for every layer (--device webgpu): node-llama-cpp then runs its Vulkan build. */
  device?: string;
}

async function childLlamaTs({ path, threads, nVocab, bos, device }: ChildArgs): Promise<ChildResult> {
  const { Model, Context } = await import('../src/model/index.js');
  let placement = {};
  let device_name: string | undefined;
  if (device) {
    const { devicesReady, namedDevices } = await import('../src/backends/index.js');
    await devicesReady([device]);
    const devices = namedDevices([device]);
    placement = { devices, nGpuLayers: 999 };
    device_name = `${devices[0]!.name}: ${devices[0]!.description}`;
  }
  const t0 = performance.now();
  const model = await Model.load(path, placement);
  const ctx = new Context(model, { nCtx: PP, nBatch: PP, nUbatch: PP, nThreads: threads });
  const load_ms = performance.now() - t0;
  // warm-up: tier up the JIT, start the workers, touch the weights
  await ctx.decode({ tokens: randomTokens(16, nVocab, 7, bos) });
  for (const t of randomTokens(4, nVocab, 8, -1)) await ctx.decode({ tokens: [t] });
  ctx.clearMemory();
  let t1 = performance.now();
  await ctx.decode({ tokens: randomTokens(PP, nVocab, 42, bos) });
  const pp = (PP * 1000) / (performance.now() - t1);
  ctx.clearMemory();
  const gen = randomTokens(TG, nVocab, 43, -1);
  t1 = performance.now();
  for (const t of gen) await ctx.decode({ tokens: [t] });
  const tg = (TG * 1000) / (performance.now() - t1);
  const kv_mb = (ctx.memory?.bytes ?? 0) / 2 ** 20;
  const file_mb = model.fileSize / 2 ** 20;
  ctx.free();
  return { pp, tg, load_ms, rss_mb: process.resourceUsage().maxRSS / 1024, file_mb, kv_mb, device_name };
}

async function childLlamaTsLong({ path, threads, nVocab, bos }: ChildArgs): Promise<LongResult> {
  const { Model, Context } = await import('../src/model/index.js');
  const model = await Model.load(path);
  const big = new Context(model, { nCtx: LONG_CTX, nBatch: PP, nUbatch: PP, nThreads: threads });
  const kv32k_mb = (big.memory?.bytes ?? 0) / 2 ** 20;
  big.free();
  const opts = { nCtx: LONG_FILL + LONG_TG, nBatch: PP, nUbatch: PP, nThreads: threads };
  const near = new Context(model, opts);
  const far = new Context(model, opts);
  await near.decode({ tokens: randomTokens(16, nVocab, 7, bos) });
  for (const t of randomTokens(4, nVocab, 8, -1)) await near.decode({ tokens: [t] });
  near.clearMemory();
  await near.decode({ tokens: [bos >= 0 ? bos : 0] });
  const fill = randomTokens(LONG_FILL, nVocab, 44, bos);
  for (let i = 0; i < fill.length; i += PP) await far.decode({ tokens: fill.slice(i, i + PP) });
  const { tg_empty, tg_4096 } = await alternate(
    randomTokens(LONG_TG, nVocab, 43, -1),
    (t) => near.decode({ tokens: [t] }),
    (t) => far.decode({ tokens: [t] }),
  );
  near.free();
  far.free();
  return { kv32k_mb, tg_empty, tg_4096 };
}

const RECURRENT_PRESETS = ['qwen3.5-0.8b', 'lfm2-1.2b'];

/** A hybrid model's memory per sequence at 1k and 32k contexts (MiB): recurrent state, KV. */
async function recurrentMemory(
  path: string,
): Promise<{ state1k: number; state32k: number; kv1k: number; kv32k: number }> {
  const { Model, Context, HybridMemory } = await import('../src/model/index.js');
  const model = await Model.load(path);
  try {
    const at = (nCtx: number) => {
      const ctx = new Context(model, { nCtx });
      try {
        const mem = ctx.memory;
        if (!(mem instanceof HybridMemory)) throw new Error(`${path}: not a hybrid memory`);
        return { state: mem.recurrent.bytesPerSequence / 2 ** 20, kv: mem.attn.bytes / 2 ** 20 };
      } finally {
        ctx.free();
      }
    };
    const a = at(1024);
    const b = at(32768);
    return { state1k: a.state, state32k: b.state, kv1k: a.kv, kv32k: b.kv };
  } finally {
    model.free();
  }
}

async function childNodeLlamaCppLong({ path, threads, nVocab, bos }: ChildArgs): Promise<LongResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the oracle is loaded from outside the repository, untyped
  const nlc: any = await import(pathToFileURL(ensureOracle()).href);
  const log: string[] = [];
  const llama = await nlc.getLlama({
    gpu: false,
    build: 'never',
    logLevel: nlc.LlamaLogLevel.info,
    logger: (_level: unknown, message: string) => log.push(message),
  });
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  log.length = 0;
  const big = await model.createContext({
    contextSize: LONG_CTX,
    batchSize: PP,
    threads: { ideal: threads, min: threads },
    sequences: 1,
  });
  await big.dispose();
  // llama.cpp's log lines reach the logger through the event loop, after createContext
  // has returned: an iSWA model's second cache line can come late
  await new Promise((r) => setTimeout(r, 250));
  let kv32k_mb = 0;
  for (const m of log.join('\n').matchAll(/llama_kv_cache: size = +([\d.]+) MiB/g)) kv32k_mb += Number(m[1]);
  const contexts = [];
  for (let i = 0; i < 2; i++) {
    contexts.push(
      await model.createContext({
        contextSize: LONG_FILL + LONG_TG,
        batchSize: PP,
        threads: { ideal: threads, min: threads },
        sequences: 1,
      }),
    );
  }
  const [near, far] = contexts.map((c) => c.getSequence());
  await near.evaluateWithoutGeneratingNewTokens(randomTokens(16, nVocab, 7, bos));
  for (const t of randomTokens(4, nVocab, 8, -1)) await near.evaluateWithoutGeneratingNewTokens([t]);
  await near.clearHistory();
  await near.evaluateWithoutGeneratingNewTokens([bos >= 0 ? bos : 0]);
  await far.evaluateWithoutGeneratingNewTokens(randomTokens(LONG_FILL, nVocab, 44, bos));
  const { tg_empty, tg_4096 } = await alternate(
    randomTokens(LONG_TG, nVocab, 43, -1),
    (t) => near.evaluateWithoutGeneratingNewTokens([t]),
    (t) => far.evaluateWithoutGeneratingNewTokens([t]),
  );
  for (const c of contexts) await c.dispose();
  await model.dispose();
  return { kv32k_mb, tg_empty, tg_4096 };
}

async function childNodeLlamaCpp({ path, threads, nVocab, bos, device }: ChildArgs): Promise<ChildResult> {
  // biome-ignore lint/suspicious/noExplicitAny: the oracle is loaded from outside the repository, untyped
  const nlc: any = await import(pathToFileURL(ensureOracle()).href);
  const llama = await nlc.getLlama({ gpu: device ? 'vulkan' : false, build: 'never', logLevel: 'error' });
  const gpus: string[] = device ? await llama.getGpuDeviceNames() : [];
  // a Vulkan build without a usable device runs on the CPU: not a GPU figure
  if (device && gpus.length === 0) throw new Error("node-llama-cpp's Vulkan build found no usable GPU");
  const device_name = device ? `Vulkan: ${gpus.join(', ')}` : undefined;
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: path, gpuLayers: device ? 'max' : 0 });
  const context = await model.createContext({
    contextSize: PP,
    batchSize: PP,
    threads: { ideal: threads, min: threads },
    sequences: 1,
  });
  const seq = context.getSequence();
  const load_ms = performance.now() - t0;
  await seq.evaluateWithoutGeneratingNewTokens(randomTokens(16, nVocab, 7, bos));
  for (const t of randomTokens(4, nVocab, 8, -1)) await seq.evaluateWithoutGeneratingNewTokens([t]);
  await seq.clearHistory();
  let t1 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(randomTokens(PP, nVocab, 42, bos));
  const pp = (PP * 1000) / (performance.now() - t1);
  await seq.clearHistory();
  const gen = randomTokens(TG, nVocab, 43, -1);
  t1 = performance.now();
  for (const t of gen) await seq.evaluateWithoutGeneratingNewTokens([t]);
  const tg = (TG * 1000) / (performance.now() - t1);
  await context.dispose();
  await model.dispose();
  return { pp, tg, load_ms, rss_mb: process.resourceUsage().maxRSS / 1024, file_mb: 0, kv_mb: 0, device_name };
}

// ---- parent ----

/**
 * Reads the model file once so that each engine starts with it in the page cache (else the
 * first run of a rep pays the disk reads, which the other engine then skips: seconds for a
 * 1 GB model on a machine whose page cache was evicted).
 */
function warmPageCache(path: string): void {
  const fd = openSync(path, 'r');
  try {
    const buf = new Uint8Array(16 << 20);
    for (let pos = 0; ; ) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) break;
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
}

function runChild<R = ChildResult>(engine: string, a: ChildArgs): Promise<R> {
  const { path, threads } = a;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', engine, JSON.stringify(a)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LLAMA_TS_THREADS: String(threads) },
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('error', reject);
    p.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`${engine} on ${path}: exit ${code}: ${out}`));
      else resolve(JSON.parse(line) as R);
    });
  });
}

async function readBandwidth(threads: number): Promise<number> {
  const { cpuDevice } = await import('../src/backends/cpu/index.js');
  const bytes = 512 * 2 ** 20;
  const buf = cpuDevice.hostBufferType().alloc(bytes) as unknown as {
    base: number;
    free(): void;
    hostBytes(): Uint8Array;
  };
  buf.hostBytes().fill(1);
  const times: number[] = [];
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    await cpuDevice.runKernel('k_read_bw', [buf.base, bytes, buf.base], threads);
    if (i > 0) times.push((performance.now() - t0) / 1000);
  }
  buf.free();
  await cpuDevice.close();
  return bytes / median(times) / 1e9;
}

/**
 * Bytes one generated token reads (every tensor but the token embeddings, of which one
 * row), the vocabulary size and the BOS id.
 */
async function modelFacts(path: string): Promise<{ bytes: number; nVocab: number; bos: number }> {
  const { openGGUF } = await import('../src/gguf/index.js');
  const f = openGGUF(path);
  try {
    const arch = f.architecture;
    const nExpert = f.getNumber(`${arch}.expert_count`, 0);
    const used = nExpert > 0 ? f.getNumber(`${arch}.expert_used_count`) / nExpert : 1;
    let bytes = 0;
    for (const t of f.tensors) {
      if (t.name === 'token_embd.weight') bytes += t.nBytes / Number(t.dims[1] ?? 1);
      else if (t.name.includes('_exps.')) bytes += t.nBytes * used;
      else bytes += t.nBytes;
    }
    const nVocab = f.getArray('tokenizer.ggml.tokens').items.length;
    const bos = Number(f.getInt('tokenizer.ggml.bos_token_id', -1));
    return { bytes, nVocab, bos };
  } finally {
    f.close();
  }
}

async function main(): Promise<void> {
  const json = argv.includes('--json');
  const threads = Number(opt('threads', '2'));
  const reps = Number(opt('reps', '3'));
  const di = argv.indexOf('--device');
  const device = (di >= 0 ? argv[di + 1] : opt('device', '')) || undefined;
  const plan: Array<[string, string[]]> = device
    ? [
        ['qwen2.5-0.5b-630m', ['Q4_0', 'Q4_K_M']],
        ['tinyllama-1.1b', ['Q4_0', 'Q4_K_M']],
        ['gemma-3-1b', ['Q4_0', 'Q4_K_M']],
      ]
    : argv.includes('--moe')
      ? [
          ['qwen3-30b-a3b@12', ['Q4_0', 'Q4_K_M']],
          ['gpt-oss-20b@12', ['MXFP4_MOE']],
        ]
      : [
          ['qwen2.5-0.5b-630m', ['Q4_0', 'Q8_0', 'Q4_K_M']],
          ['tinyllama-1.1b', ['Q4_0', 'Q8_0', 'Q4_K_M']],
          ['gemma-3-1b', ['Q4_0', 'Q4_K_M']],
          ['phi-4-mini', ['Q4_0', 'Q4_K_M']],
          ['qwen3.5-0.8b', ['Q4_0', 'Q4_K_M']],
          ['lfm2-1.2b', ['Q4_0', 'Q4_K_M']],
        ];
  const presets = opt('presets', plan.map((p) => p[0]).join(',')).split(',');
  const typesOpt = argv.some((a) => a.startsWith('--types=')) ? opt('types', '').split(',') : undefined;
  const typesOf = (preset: string) => typesOpt ?? plan.find((p) => p[0] === preset)?.[1] ?? ['Q4_0', 'Q8_0', 'Q4_K_M'];
  const long =
    !device &&
    !argv.includes('--no-long') &&
    (argv.includes('--long') || (presets.includes('gemma-3-1b') && typesOf('gemma-3-1b').includes('Q4_0')));
  const say = (s: string) => {
    if (!json) process.stdout.write(`${s}\n`);
  };
  ensureOracle();
  const { ensureModel, isFileTypeName } = await import('../src/generator/index.js');
  const bw = await readBandwidth(threads);
  const load0 = loadavg();
  say(
    `read bandwidth ${bw.toFixed(1)} GB/s (${threads} threads); ${threads} threads, ${reps} alternating runs per engine, medians; load average ${load0.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const rows: Array<EngineRow | { model: string; type: string; engine: 'bound'; tg128: number }> = [];
  const table: string[][] = [];
  const recurrent = presets.filter((p) => RECURRENT_PRESETS.includes(p));
  const memoryOnly = argv.includes('--memory');
  if (recurrent.length > 0) {
    say('');
    say('| model | recurrent state per sequence MiB (1k / 32k ctx) | KV MiB (1k / 32k ctx) |');
    say('|---|---|---|');
    for (const preset of recurrent) {
      const m = await recurrentMemory(ensureModel(preset, 'Q4_0'));
      say(
        `| ${preset} | ${m.state1k.toFixed(2)} / ${m.state32k.toFixed(2)} | ${m.kv1k.toFixed(1)} / ${m.kv32k.toFixed(1)} |`,
      );
    }
  }
  for (const preset of memoryOnly ? [] : presets) {
    for (const type of typesOf(preset)) {
      if (!isFileTypeName(type)) throw new Error(`unknown file type ${type}`);
      process.stderr.write(`bench:vs: ${preset} ${type}: model\n`);
      // NAME@LAYERS: the preset cut to that many layers of its per-layer shape
      const [name, layers] = preset.split('@');
      const path = ensureModel(name, type, undefined, layers ? { shape: { nLayer: Number(layers) } } : {});
      const facts = await modelFacts(path);
      const bound = (bw * 1e9) / facts.bytes;
      const args: ChildArgs = { path, threads, nVocab: facts.nVocab, bos: facts.bos, device };
      const got: Record<string, ChildResult[]> = { 'llama.ts': [], 'node-llama-cpp': [] };
      for (let r = 0; r < reps; r++) {
        const order = r % 2 === 0 ? ['llama.ts', 'node-llama-cpp'] : ['node-llama-cpp', 'llama.ts'];
        for (const engine of order) {
          process.stderr.write(`bench:vs: ${preset} ${type}: ${engine} run ${r + 1}/${reps}\n`);
          warmPageCache(path);
          got[engine].push(await runChild(engine, args));
        }
      }
      const med = (engine: string): EngineRow => {
        const xs = got[engine];
        return {
          model: preset,
          type,
          engine: engine as EngineRow['engine'],
          pp512: median(xs.map((x) => x.pp)),
          tg128: median(xs.map((x) => x.tg)),
          load_ms: median(xs.map((x) => x.load_ms)),
          rss_mb: median(xs.map((x) => x.rss_mb)),
        };
      };
      const ours = med('llama.ts');
      const theirs = med('node-llama-cpp');
      if (device) {
        for (const e of ['llama.ts', 'node-llama-cpp']) say(`${e} ran on ${got[e]![0]!.device_name ?? 'the CPU'}`);
      }
      rows.push(ours, theirs, { model: preset, type, engine: 'bound', tg128: device ? Number.NaN : bound });
      const fileKv = got['llama.ts'][0].file_mb + got['llama.ts'][0].kv_mb;
      table.push([
        preset,
        type,
        `${ours.pp512.toFixed(1)} / ${theirs.pp512.toFixed(1)} = ${(ours.pp512 / theirs.pp512).toFixed(2)}x`,
        `${ours.tg128.toFixed(1)} / ${theirs.tg128.toFixed(1)} = ${(ours.tg128 / theirs.tg128).toFixed(2)}x`,
        device ? 'n/a (GPU)' : bound.toFixed(1),
        `${ours.load_ms.toFixed(0)} / ${theirs.load_ms.toFixed(0)} = ${(ours.load_ms / theirs.load_ms).toFixed(2)}x`,
        `${ours.rss_mb.toFixed(0)} / ${theirs.rss_mb.toFixed(0)}; ${(ours.rss_mb / fileKv).toFixed(2)}x file+KV`,
      ]);
      process.stderr.write(`bench:vs: ${table[table.length - 1].join(' | ')}\n`);
    }
  }
  let longRows: Record<string, LongResult> | undefined;
  if (long) {
    const path = ensureModel('gemma-3-1b', 'Q4_0');
    const facts = await modelFacts(path);
    const args: ChildArgs = { path, threads, nVocab: facts.nVocab, bos: facts.bos };
    longRows = {};
    for (const engine of ['llama.ts', 'node-llama-cpp']) {
      process.stderr.write(`bench:vs: gemma-3-1b Q4_0 long context: ${engine}\n`);
      warmPageCache(path);
      longRows[engine] = await runChild<LongResult>(`${engine}-long`, args);
    }
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(longRows ? [...rows, { long: longRows }] : rows)}\n`);
    return;
  }
  say('');
  say(
    '| model | type | pp512 t/s (llama.ts / node-llama-cpp) | tg128 t/s | tg bound | load ms | peak RSS MiB (llama.ts / nlc; llama.ts vs file+KV) |',
  );
  say('|---|---|---|---|---|---|---|');
  for (const r of table) say(`| ${r.join(' | ')} |`);
  if (longRows) {
    const a = longRows['llama.ts'];
    const b = longRows['node-llama-cpp'];
    say('');
    say(`gemma-3-1b Q4_0, ${LONG_TG} generated tokens (llama.ts / node-llama-cpp):`);
    say(
      `| KV MiB at ${LONG_CTX} ctx | ${a.kv32k_mb.toFixed(1)} / ${b.kv32k_mb.toFixed(1)} = ${(a.kv32k_mb / b.kv32k_mb).toFixed(2)}x |`,
    );
    say(`| tg empty t/s | ${a.tg_empty.toFixed(1)} / ${b.tg_empty.toFixed(1)} |`);
    say(
      `| tg at ${LONG_FILL} t/s | ${a.tg_4096.toFixed(1)} / ${b.tg_4096.toFixed(1)}; ${(a.tg_4096 / a.tg_empty).toFixed(2)}x / ${(b.tg_4096 / b.tg_empty).toFixed(2)}x of empty |`,
    );
  }
  say(
    `load average at the end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
}

if (argv[0] === '--child') {
  const [, engine, args] = argv;
  const children: Record<string, (a: ChildArgs) => Promise<unknown>> = {
    'llama.ts': childLlamaTs,
    'node-llama-cpp': childNodeLlamaCpp,
    'llama.ts-long': childLlamaTsLong,
    'node-llama-cpp-long': childNodeLlamaCppLong,
  };
  children[engine](JSON.parse(args) as ChildArgs).then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`${(e as Error).stack ?? e}\n`);
      process.exit(1);
    },
  );
} else if (argv.includes('--mmproj')) {
  import('./vs-mmproj.js')
    .then((m) => m.mainMmproj(argv))
    .catch((e) => {
      process.stderr.write(`bench:vs --mmproj: ${(e as Error).stack ?? e}\n`);
      process.exit(1);
    });
} else {
  main().catch((e) => {
    process.stderr.write(`bench:vs: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
