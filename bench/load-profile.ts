// Where load time and memory go in bench:vs's llama.ts flow (not a test):
//   node dist/bench/load-profile.js <model.gguf> [--threads=2]
// Prints, after each phase (import, Model.load, new Context, first decode, pp512, tg),
// the elapsed time, the resident set (VmRSS, split into anonymous / file / shared as
// /proc/self/status reports it), the peak (maxRSS), V8's heap and external memory, and
// the CPU device's arena sizes.

import { readFileSync } from 'node:fs';
import { randomTokens } from './tokens.js';

const argv = process.argv.slice(2);
const path = argv.find((a) => !a.startsWith('--'));
if (!path) throw new Error('usage: load-profile <model.gguf> [--threads=2]');
const threads = Number(argv.find((a) => a.startsWith('--threads='))?.slice(10) ?? '2');

const MiB = 2 ** 20;
function status(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(VmRSS|RssAnon|RssFile|RssShmem|VmHWM):\s+(\d+) kB/.exec(line);
      if (m) out[m[1]] = Number(m[2]) / 1024;
    }
  } catch {}
  return out;
}

const t0 = performance.now();
let arenaBytes = (): number => 0;
function report(phase: string): void {
  const s = status();
  const mu = process.memoryUsage();
  const f = (x: number | undefined) => (x ?? 0).toFixed(0).padStart(5);
  process.stdout.write(
    `${phase.padEnd(14)} t=${((performance.now() - t0) / 1000).toFixed(2).padStart(6)}s rss=${f(s.VmRSS)} anon=${f(s.RssAnon)} file=${f(s.RssFile)} shmem=${f(s.RssShmem)} peak=${f(process.resourceUsage().maxRSS / 1024)} heap=${f(mu.heapUsed / MiB)} ext=${f(mu.external / MiB)} ab=${f(mu.arrayBuffers / MiB)} arenas=${f(arenaBytes() / MiB)} MiB\n`,
  );
}

report('start');
const { Model, Context } = await import('../src/model/index.js');
const { cpuDevice } = await import('../src/backends/cpu/index.js');
arenaBytes = () => cpuDevice.arenas.arenas.reduce((s, a) => s + a.memory.buffer.byteLength, 0);
report('import');
const model = await Model.load(path);
report('Model.load');
const ctx = new Context(model, { nCtx: 512, nBatch: 512, nUbatch: 512, nThreads: threads });
report('new Context');
const nVocab = model.hp.nVocab;
await ctx.decode({ tokens: randomTokens(16, nVocab, 7) });
report('decode 16');
for (const t of randomTokens(4, nVocab, 8)) await ctx.decode({ tokens: [t] });
report('decode 1 x4');
ctx.clearMemory();
let t1 = performance.now();
await ctx.decode({ tokens: randomTokens(512, nVocab, 42) });
const pp = (512 * 1000) / (performance.now() - t1);
report('pp512');
ctx.clearMemory();
t1 = performance.now();
for (const t of randomTokens(128, nVocab, 43)) await ctx.decode({ tokens: [t] });
const tg = (128 * 1000) / (performance.now() - t1);
report('tg128');
const kv = (ctx.memory?.bytes ?? 0) / MiB;
const file = model.fileSize / MiB;
const peak = process.resourceUsage().maxRSS / 1024;
process.stdout.write(
  `load ${model.loadMs.toFixed(0)} ms; pp512 ${pp.toFixed(1)} t/s; tg128 ${tg.toFixed(1)} t/s; file ${file.toFixed(0)} MiB + KV ${kv.toFixed(1)} MiB; peak ${peak.toFixed(0)} MiB = ${(peak / (file + kv)).toFixed(2)}x\n`,
);
ctx.free();
model.free();
await cpuDevice.close();
