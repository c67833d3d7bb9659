// llama-ts in headless Chromium (llama-ts/web: the engine in the page's workers, kernels on
// a pool of Web Workers over shared memory) against llama-ts in Node and two other engines
// in the same page, same GGUF files, same thread count, alternating runs (not a test):
//   npm run bench:web [-- --models=preset:TYPE,...|FILE,...] [--threads=2] [--reps=3] [--pp=512] [--tg=128]
//                     [--peers=DIR] [--no-peers]
// Peers (never dependencies; skipped with a message when absent), their CPU paths on the
// same threads: @fugood/node-llama-wasm 1.7.x and @wllama/wllama 3.x, installed outside the
// repository: npm install --prefix ~/.cache/llama-ts/oracles/web-peers @fugood/node-llama-wasm@1.7 @wllama/wllama@3
// Each repetition measures, in each engine in turn (the order rotates), pp (one prompt of
// about --pp tokens, prompt tokens/s) and tg (--tg tokens generated after a short prompt,
// tokens/s), from each engine's own timings, with other random text each time so no prompt
// is served from a cache. Load: Node from the file; the browser engines a second time, from
// their own download caches (llama-ts: OPFS; node-llama-wasm: Cache Storage; wllama: OPFS).
// The table shows medians and ratios to Node, with the CPU (lscpu) and Chromium's version.
// Default models: the generator's qwen2.5-0.5b-630m and tinyllama-1.1b in Q4_0 and Q4_K_M.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { serveWeb } from '../src/cli/web.js';
import { ensureModel } from '../src/generator/index.js';
import type { FileTypeName } from '../src/generator/spec.js';
import { type LlamaCompletionOptions, loadModel } from '../src/index.js';
import { randomTokens } from './tokens.js';

const CHROMIUM = '/usr/bin/chromium';
// biome-ignore lint/suspicious/noExplicitAny: the page's globals
declare const window: any;

const { values } = parseArgs({
  options: {
    models: {
      type: 'string',
      default: 'qwen2.5-0.5b-630m:Q4_0,qwen2.5-0.5b-630m:Q4_K_M,tinyllama-1.1b:Q4_0,tinyllama-1.1b:Q4_K_M',
    },
    threads: { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    pp: { type: 'string', default: '512' },
    tg: { type: 'string', default: '128' },
    peers: { type: 'string', default: join(homedir(), '.cache/llama-ts/oracles/web-peers/node_modules') },
    'no-peers': { type: 'boolean', default: false },
  },
});
const threads = Number(values.threads);
const reps = Number(values.reps);
const PP = Number(values.pp);
const TG = Number(values.tg);
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is absent`);
const models = values.models.split(',').map((m) => {
  const preset = /^([\w.-]+):(\w+)$/.exec(m);
  return preset && !existsSync(m) ? ensureModel(preset[1]!, preset[2] as FileTypeName) : m;
});

const PEERS = {
  fugood: { pkg: '@fugood/node-llama-wasm', file: 'index.js', label: 'node-llama-wasm' },
  wllama: { pkg: '@wllama/wllama', file: 'esm/index.js', label: 'wllama' },
} as const;
type Engine = 'node' | 'web' | keyof typeof PEERS;
const peers = (Object.keys(PEERS) as (keyof typeof PEERS)[]).filter((k) => {
  if (values['no-peers']) return false;
  const dir = join(values.peers, PEERS[k].pkg);
  if (existsSync(join(dir, PEERS[k].file))) return true;
  console.log(`(${PEERS[k].pkg} is not installed in ${values.peers}: skipped)`);
  return false;
});
const version = (k: keyof typeof PEERS) =>
  JSON.parse(
    execFileSync(
      'node',
      ['-p', `JSON.stringify(require('${join(values.peers, PEERS[k].pkg, 'package.json')}').version)`],
      { encoding: 'utf8' },
    ),
  ) as string;

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? Number.NaN;
const cpu = (() => {
  try {
    return /Model name:\s*(.+)/.exec(execFileSync('lscpu', { encoding: 'utf8' }))?.[1]?.trim() ?? 'unknown CPU';
  } catch {
    return 'unknown CPU';
  }
})();

const server = await serveWeb({
  port: 0,
  models: Object.fromEntries(models.map((m) => [basename(m), m])),
  mounts: { peers: values.peers },
});
const { default: puppeteer } = await import('puppeteer-core');
const browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});

type Timings = { pp: number; tg: number; ppN: number };
interface Row {
  model: string;
  load: Partial<Record<Engine, number>>;
  runs: Partial<Record<Engine, Timings[]>>;
}
const rows: Row[] = [];

/** Loads `url` in the page's engine `e` as window.e (twice: the second load is the one timed, from the engine's cache). */
async function loadInPage(page: import('puppeteer-core').Page, e: Engine, url: string, nCtx: number): Promise<number> {
  return page.evaluate(
    async (e, url, threads, nCtx) => {
      const load = async () => {
        if (e === 'web') return window.web.loadModel({ model: url, n_threads: threads, n_ctx: nCtx });
        if (e === 'fugood')
          return window.fugood.loadModel({
            model: url,
            n_threads: threads,
            n_ctx: nCtx,
            n_gpu_layers: 0,
            wasm: { webgpu: false },
          });
        const w = new window.wllama.Wllama(
          { default: '/peers/@wllama/wllama/esm/wasm/wllama.wasm' },
          { suppressNativeLog: true },
        );
        await w.loadModelFromUrl(url, { n_threads: threads, n_ctx: nCtx, n_gpu_layers: 0, useCache: true });
        return w;
      };
      const drop = (c: { release?: () => Promise<void>; exit?: () => Promise<void> }) =>
        c.release ? c.release() : c.exit?.();
      await drop(await load());
      const t0 = performance.now();
      window.ctxs = { ...window.ctxs, [e]: await load() };
      return performance.now() - t0;
    },
    e,
    url,
    threads,
    nCtx,
  );
}

function runInPage(
  page: import('puppeteer-core').Page,
  e: Engine,
  pp: string,
  tgPrompt: string,
  TG: number,
): Promise<Timings> {
  return page.evaluate(
    async (e, pp, tgPrompt, TG) => {
      const c = window.ctxs[e];
      if (e === 'wllama') {
        const a = await c.createCompletion({ prompt: pp, max_tokens: 1, temperature: 0 });
        const b = await c.createCompletion({ prompt: tgPrompt, max_tokens: TG, temperature: 0, ignore_eos: true });
        return { pp: a.timings.prompt_per_second, ppN: a.timings.prompt_n, tg: b.timings.predicted_per_second };
      }
      const a = await c.completion({ prompt: pp, n_predict: 1, temperature: 0 });
      const b = await c.completion({ prompt: tgPrompt, n_predict: TG, temperature: 0, ignore_eos: true });
      return { pp: a.timings.prompt_per_second, ppN: a.timings.prompt_n, tg: b.timings.predicted_per_second };
    },
    e,
    pp,
    tgPrompt,
    TG,
  );
}

/** The table so far (after each model: a long run shows its rows as they come). */
function printTable(rows: Row[], chromium: string): void {
  const names: Record<Engine, string> = { node: 'Node', web: 'web', fugood: 'node-llama-wasm', wllama: 'wllama' };
  const engines: Engine[] = ['node', 'web', ...peers];
  console.log(`${threads} threads, pp${PP} / tg${TG}, ${reps} alternating repetitions (medians, t/s; ratios to Node)`);
  console.log(
    `CPU: ${cpu}; Chromium ${chromium}; Node ${process.version}${peers.map((k) => `; ${PEERS[k].label} ${version(k)}`).join('')}`,
  );
  const head = engines.flatMap((e) => [names[e], ...(e === 'node' ? [] : ['÷Node'])]);
  console.log(`| model | test | ${head.join(' | ')} |`);
  console.log(`|---|---|${head.map(() => '---').join('|')}|`);
  for (const r of rows) {
    for (const t of ['pp', 'tg', 'load'] as const) {
      const v = (e: Engine) =>
        t === 'load' ? (r.load[e] ?? Number.NaN) / 1000 : median((r.runs[e] ?? []).map((x) => x[t]));
      const n = v('node');
      const cells = engines.flatMap((e) => [
        v(e).toFixed(t === 'load' ? 2 : 1),
        ...(e === 'node' ? [] : [(v(e) / n).toFixed(2)]),
      ]);
      const label =
        t === 'pp'
          ? `pp${PP} (${median((r.runs.web ?? []).map((x) => x.ppN))} tok)`
          : t === 'tg'
            ? `tg${TG}`
            : 'load s';
      console.log(`| ${r.model} | ${label} | ${cells.join(' | ')} |`);
    }
  }
}

try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/blank.html`);
  await page.evaluate(
    async (entries) => {
      for (const [name, entry] of entries) window[name] = await import(entry);
    },
    [['web', '/dist/src/web/index.js'], ...peers.map((k) => [k, `/peers/${PEERS[k].pkg}/${PEERS[k].file}`])],
  );
  const nCtx = PP + TG + 64;
  for (const model of models) {
    const url = `/models/${basename(model)}`;
    const row: Row = { model: basename(model), load: {}, runs: {} };
    rows.push(row);
    const t0 = performance.now();
    const ctx = await loadModel({ model, n_threads: threads, n_ctx: nCtx });
    row.load.node = performance.now() - t0;
    const engines: Engine[] = ['node', 'web', ...peers];
    for (const e of engines.slice(1)) row.load[e] = await loadInPage(page, e, url, nCtx);
    // the same random text for every engine: tokens of this model's vocabulary as text
    const nVocab = Number(ctx.getModelInfo().nVocab) || 1000;
    const text = async (n: number, seed: number) => ctx.detokenize(randomTokens(n, Math.min(nVocab, 30000), seed));
    const run = async (e: Engine, rep: number, ppN = PP, tgN = TG): Promise<Timings> => {
      const pp = await text(ppN, 1000 + rep);
      const tgPrompt = await text(4, 2000 + rep);
      if (e !== 'node') return runInPage(page, e, pp, tgPrompt, tgN);
      const a = await ctx.completion({ prompt: pp, n_predict: 1, temperature: 0 });
      const b = await ctx.completion({
        prompt: tgPrompt,
        n_predict: tgN,
        temperature: 0,
        ignore_eos: true,
      } as LlamaCompletionOptions);
      return { pp: a.timings.prompt_per_second, ppN: a.timings.prompt_n, tg: b.timings.predicted_per_second };
    };
    // a short warm-up each (first-use compilation, page faults), then the engines in a rotating order
    for (const e of engines) await run(e, -1, 16, 4);
    for (let rep = 0; rep < reps; rep++) {
      for (let k = 0; k < engines.length; k++) {
        const e = engines[(k + rep) % engines.length]!;
        const t = await run(e, rep);
        row.runs[e] = [...(row.runs[e] ?? []), t];
      }
    }
    await ctx.release();
    await page.evaluate(async (engines) => {
      for (const e of engines) {
        const c = window.ctxs[e];
        await (c.release ? c.release() : c.exit());
      }
      await window.web.clearDownloadCache();
      if (window.fugood) await window.fugood.clearWasmDownloadCache();
    }, engines.slice(1));
    printTable(rows, await browser.version());
  }
} finally {
  await browser.close();
  await server.close();
}
