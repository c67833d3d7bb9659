// How long a model switch takes in serve's router mode: with --models-max 1, requests
// alternate between the models given, so each one unloads the other and starts its own
// process; the time to the first streamed token is the switch. The same request to the
// model already loaded is the baseline.
//
//   node dist/bench/router-switch.js MODEL.gguf MODEL.gguf [--rounds N] [--threads N]
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LlamaRouter, modelsFromDir } from '../src/server/index.js';

const ENTRY = fileURLToPath(new URL('../src/cli/serve-child.js', import.meta.url));

/** Milliseconds to the first content token and to the end of a streamed completion. */
async function timed(url: string, model: string): Promise<{ first: number; total: number }> {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 8, stream: true, temperature: 0 }),
  });
  if (r.status !== 200) throw new Error(`${model}: ${r.status} ${await r.text()}`);
  let first = -1;
  const dec = new TextDecoder();
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    if (first < 0 && /"text":"[^"]/.test(dec.decode(chunk))) first = performance.now() - t0;
  }
  return { first, total: performance.now() - t0 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const { values: o, positionals } = parseArgs({
    allowPositionals: true,
    options: { rounds: { type: 'string', default: '3' }, threads: { type: 'string', default: '2' } },
  });
  if (positionals.length < 2) throw new Error('usage: router-switch MODEL.gguf MODEL.gguf [--rounds N]');
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-bench-'));
  const names = positionals.map((p, i) => {
    const name = `m${i}-${basename(p, '.gguf')}`;
    try {
      symlinkSync(resolve(p), join(dir, `${name}.gguf`));
    } catch {
      copyFileSync(p, join(dir, `${name}.gguf`));
    }
    return name;
  });
  const router = await LlamaRouter.listen({
    models: modelsFromDir(dir),
    spawn: { entry: ENTRY, baseArgs: ['-c', '2048', '--parallel', '1', '--threads', o.threads!] },
    port: 0,
    modelsMax: 1,
  });
  try {
    const cold = new Map<string, number[]>(names.map((n) => [n, []]));
    const warm = new Map<string, number[]>(names.map((n) => [n, []]));
    for (let r = 0; r < Number(o.rounds); r++) {
      for (const n of names) {
        cold.get(n)!.push((await timed(router.url, n)).first);
        warm.get(n)!.push((await timed(router.url, n)).first);
      }
    }
    process.stdout.write('model                                   switch TTFT ms  loaded TTFT ms  (median)\n');
    for (const n of names) {
      process.stdout.write(
        `${n.padEnd(40)}${median(cold.get(n)!).toFixed(0).padStart(15)}${median(warm.get(n)!).toFixed(0).padStart(16)}\n`,
      );
    }
  } finally {
    await router.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`router-switch: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
