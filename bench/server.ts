// Server throughput on loopback: aggregate generation speed with 1 slot and with N slots
// (continuous batching), the same clients and requests for both, then the ratio.
//
//   npm run build && node dist/bench/server.js [-m MODEL.gguf] [--slots 4] [--clients 4]
//       [--seconds 10] [--tokens 64] [-t THREADS]
//
// Default model: ../shared/models/stories260K.gguf, else a generated tiny llama.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { LlamaServer } from '../src/server/index.js';
import { sharedPath } from '../test/helpers/shared.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', short: 'm' },
    slots: { type: 'string', default: '4' },
    clients: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    tokens: { type: 'string', default: '64' },
    threads: { type: 'string', short: 't', default: '2' },
  },
});

function modelPath(): string {
  if (o.model) return o.model;
  const p = sharedPath('models/stories260K.gguf');
  if (p) return p;
  const path = join(mkdtempSync(join(tmpdir(), 'llama-ts-bench-')), 'tiny-llama.gguf');
  generateModel(presetSpec('tiny-llama', 'Q8_0'), path);
  process.stderr.write('../shared/models/stories260K.gguf is absent: using a generated tiny llama\n');
  return path;
}

interface Run {
  slots: number;
  requests: number;
  tokens: number;
  seconds: number;
  tps: number;
}

async function run(model: string, slots: number, clients: number, seconds: number, maxTokens: number): Promise<Run> {
  const server = await LlamaServer.start({
    model,
    host: '127.0.0.1',
    port: 0,
    parallel: slots,
    nCtx: 512 * slots,
    threads: Number(o.threads),
    maxQueue: 256,
  });
  try {
    const url = `${server.url}/v1/completions`;
    const one = async (i: number) => {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: `Once upon a time ${i}`, max_tokens: maxTokens, ignore_eos: true, seed: i }),
      });
      if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
      return ((await r.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens;
    };
    await one(0); // warm-up
    const deadline = performance.now() + seconds * 1000;
    let tokens = 0;
    let requests = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let i = 0; performance.now() < deadline; i++) {
          const n = await one(c * 100000 + i);
          tokens += n;
          requests++;
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    return { slots, requests, tokens, seconds: s, tps: tokens / s };
  } finally {
    await server.close();
  }
}

const model = modelPath();
const slots = Number(o.slots);
const clients = Number(o.clients ?? o.slots);
const seconds = Number(o.seconds);
const maxTokens = Number(o.tokens);
const rows: Run[] = [];
for (const n of [1, slots]) rows.push(await run(model, n, clients, seconds, maxTokens));
process.stdout.write(`model ${model}, ${clients} clients, ${maxTokens} tokens per request, ${seconds} s per run\n\n`);
process.stdout.write(
  '| slots | requests | tokens | seconds | generation t/s (aggregate) |\n|---:|---:|---:|---:|---:|\n',
);
for (const r of rows) {
  process.stdout.write(
    `| ${r.slots} | ${r.requests} | ${r.tokens} | ${r.seconds.toFixed(1)} | ${r.tps.toFixed(1)} |\n`,
  );
}
const ratio = rows[1]!.tps / rows[0]!.tps;
process.stdout.write(`\n${slots} slots vs 1: ${ratio.toFixed(2)}x aggregate generation throughput\n`);
