// Tensor-by-tensor comparison of llama-ts's intermediates with llama.cpp's (dump, built by
// build.sh) for one prompt: per tensor matched by name, op and occurrence, the largest
// |difference| over llama.cpp's largest |value|, the share of bit-identical values, and
// where the largest difference is. The first tensor off by more than rounding names the
// step where the two part. Run from the repository root after `npm run build`:
//   node bench/llama-dump/compare.mjs MODEL.gguf "prompt" [--no-fa] [--all]
// --no-fa: both engines without flash attention (node-llama-cpp's choice for Gemma 2 and
// DeepSeek-2); --all: list our tensors llama.cpp has no match for too. DUMP: the dump
// binary (default /tmp/llama-dump/dump); NLC_DIR as for build.sh.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(new URL('.', import.meta.url).pathname, '../..');
const { Model, Context } = await import(join(root, 'dist/src/model/index.js'));
const { setLogCallback } = await import(join(root, 'dist/src/log.js'));

const [modelPath, prompt, ...flags] = process.argv.slice(2);
if (!modelPath || prompt === undefined) throw new Error('usage: compare.mjs MODEL.gguf "prompt" [--no-fa] [--all]');
const noFa = flags.includes('--no-fa');
const nlc = process.env.NLC_DIR ?? join(homedir(), '.cache/llama-ts/oracles/node-llama-cpp-3.21.1');
const bins = join(nlc, 'node_modules/@node-llama-cpp/linux-x64/bins/linux-x64');

setLogCallback(() => {});
const model = await Model.load(modelPath);
const tokens = model.vocab.encode(prompt, { addSpecial: true, parseSpecial: false });
const out = join(tmpdir(), `llama-dump-${process.pid}.bin`);
execFileSync(process.env.DUMP ?? '/tmp/llama-dump/dump', [modelPath, out, ...tokens.map(String)], {
  env: { ...process.env, BINS: bins, FA: noFa ? '0' : '-1' },
  stdio: 'ignore',
});
const buf = readFileSync(out);
rmSync(out);
const theirs = [];
for (let p = 0; p < buf.length; ) {
  const eol = buf.indexOf(10, p);
  const [name, op, , , count] = buf.subarray(p, eol).toString().split('|');
  const start = buf.byteOffset + eol + 1;
  theirs.push({ name, op, values: new Float32Array(buf.buffer.slice(start, start + Number(count) * 4)) });
  p = eol + 1 + Number(count) * 4 + 1;
}

const ctx = new Context(model, { keepIntermediates: true, nCtx: 256, flashAttn: !noFa });
await ctx.decode({ tokens });
// llama.cpp's op for one of ours: SwiGLU / GeGLU are one op there, SILU / GELU then MUL here
const opOf = (t) =>
  t.op === 'MUL' && /(swi|ge)glu/.test(t.name) ? t.name.match(/(swi|ge)glu/)[0].toUpperCase() : t.op;
const seen = new Map();
for (const ours of ctx.intermediates) {
  const key = `${ours.name}|${opOf(ours)}`;
  const k = seen.get(key) ?? 0;
  seen.set(key, k + 1);
  const th = theirs.filter((t) => t.name === ours.name && t.op === opOf(ours))[k];
  if (!th) {
    if (flags.includes('--all')) console.log(`  (ours only) ${ours.name} ${ours.op} [${ours.ne}]`);
    continue;
  }
  const n = Math.min(th.values.length, ours.values.length);
  let worst = 0;
  let at = 0;
  let scale = 0;
  let same = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.abs(th.values[i] - ours.values[i]);
    if (d > worst) [worst, at] = [d, i];
    scale = Math.max(scale, Math.abs(th.values[i]));
    if (th.values[i] === ours.values[i]) same++;
  }
  const where = `at ${at}: ours ${ours.values[at]}, llama.cpp ${th.values[at]}`;
  console.log(
    `${(worst / (scale || 1)).toExponential(2)} ${String(Math.round((same / n) * 100)).padStart(3)}% same  ${ours.name} ${ours.op}#${k} [${ours.ne}] ${where}`,
  );
}
ctx.free();
model.free();
