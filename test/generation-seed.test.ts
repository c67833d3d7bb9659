// Same seed, same text: `llama-ts run --seed S`, the library's completion({ seed: S }) and
// the server's `seed` draw the same tokens for the same prompt and options, because all
// three generate through the one loop (src/generation) with the chain's mt19937 (at
// T = 0.8, with llama.cpp's default chain and with top-k / top-p set).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type LlamaContext, loadModel } from '../src/index.js';
import { LlamaServer } from '../src/server/index.js';
import { tinyLlama } from './helpers/models.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODEL = tinyLlama();
const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const PROMPT = 'Once upon a time';
const N = 24;

const CASES: { name: string; cli: string[]; options: Record<string, number> }[] = [
  { name: "llama.cpp's default chain", cli: [], options: {} },
  { name: 'top-k 5, top-p 0.9', cli: ['--top-k', '5', '--top-p', '0.9'], options: { top_k: 5, top_p: 0.9 } },
  {
    name: 'no truncation (top-k 0, top-p 1, min-p 0: temperature alone)',
    cli: ['--top-k', '0', '--top-p', '1', '--min-p', '0'],
    options: { top_k: 0, top_p: 1, min_p: 0 },
  },
];

// run as a child without blocking: the server under test lives in this process, and a
// blocked event loop lets its keep-alive timer close the client's idle connection unseen
// (the next request then fails with ECONNRESET)
async function runCli(seed: number, extra: string[]): Promise<number[]> {
  const args = [BIN, 'run', '-m', MODEL, '-p', PROMPT, '-n', String(N), '--temp', '0.8', '--seed', String(seed)];
  args.push('-t', '1', '--json', ...extra);
  const { stdout } = await promisify(execFile)(process.execPath, args, { encoding: 'utf8', timeout: 60000 });
  return (JSON.parse(stdout) as { generated_tokens: number[] }).generated_tokens;
}

describe('one seed, one text: CLI, library and server', () => {
  let ctx: LlamaContext;
  let server: LlamaServer;
  before(async () => {
    // the CLI's default context for this model is its training context, 512
    ctx = await loadModel({ model: MODEL, n_ctx: 512, n_threads: 1 });
    server = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 512, threads: 1 });
  });
  after(async () => {
    await ctx?.release();
    await server?.close();
  });

  async function viaServer(seed: number, options: Record<string, number>): Promise<number[]> {
    const res = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPT, max_tokens: N, temperature: 0.8, seed, return_tokens: true, ...options }),
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { tokens: number[] }).tokens;
  }

  for (const c of CASES) {
    test(`T = 0.8, ${c.name}`, async () => {
      const seen: number[][] = [];
      for (const seed of [1234, 99]) {
        const lib = (
          await ctx.completion({
            prompt: PROMPT,
            n_predict: N,
            temperature: 0.8,
            seed,
            return_tokens: true,
            ...c.options,
          })
        ).tokens!;
        assert.equal(lib.length, N);
        assert.deepEqual(await runCli(seed, c.cli), lib, `run --seed ${seed}`);
        assert.deepEqual(await viaServer(seed, c.options), lib, `server seed ${seed}`);
        seen.push(lib);
      }
      assert.notDeepEqual(seen[0], seen[1], 'another seed draws other tokens');
    });
  }
});
