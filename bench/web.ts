// llama-ts in headless Chromium (llama-ts/web: the engine in the page's workers, kernels on
// a pool of Web Workers over shared memory) against llama-ts in Node, same GGUF, same thread
// count, alternating runs (not a test):
//   npm run bench:web [-- --model=FILE] [--threads=2] [--reps=3] [--pp=128] [--tg=32]
// Each repetition measures, in each engine in turn (the order alternates), pp (one prompt
// of --pp random tokens, prompt tokens/s) and tg (--tg tokens generated after a short
// prompt, tokens/s), both from the completion's own timings, with other random tokens each
// time so no prompt is served from the cache. The table shows medians and web / Node
// ratios, with the CPU (lscpu) and Chromium's version. Default model: the generator's
// qwen2.5-0.5b-630m in Q8_0 (made on first use, ~670 MB).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serveWeb } from '../src/cli/web.js';
import { ensureModel } from '../src/generator/index.js';
import { type LlamaCompletionOptions, loadModel } from '../src/index.js';
import { randomTokens } from './tokens.js';

const CHROMIUM = '/usr/bin/chromium';
// biome-ignore lint/suspicious/noExplicitAny: the page's globals
declare const window: any;

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    threads: { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    pp: { type: 'string', default: '128' },
    tg: { type: 'string', default: '32' },
  },
});
const threads = Number(values.threads);
const reps = Number(values.reps);
const PP = Number(values.pp);
const TG = Number(values.tg);
const model = values.model ?? ensureModel('qwen2.5-0.5b-630m', 'Q8_0');
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is absent`);

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const cpu = (() => {
  try {
    return /Model name:\s*(.+)/.exec(execFileSync('lscpu', { encoding: 'utf8' }))?.[1]?.trim() ?? 'unknown CPU';
  } catch {
    return 'unknown CPU';
  }
})();

const server = await serveWeb({ port: 0, models: { 'bench.gguf': model } });
const { default: puppeteer } = await import('puppeteer-core');
const browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/blank.html`);
  const nCtx = PP + TG + 16;
  const t0 = performance.now();
  const nVocab = await page.evaluate(
    async (entry, threads, nCtx) => {
      window.web = await import(entry);
      window.ctx = await window.web.loadModel({
        model: '/models/bench.gguf',
        n_threads: threads,
        n_ctx: nCtx,
        cache: false,
      });
      return window.ctx.getModelInfo().nVocab ?? window.ctx.getModelInfo().n_vocab;
    },
    '/dist/src/web/index.js',
    threads,
    nCtx,
  );
  const webLoad = performance.now() - t0;
  const t1 = performance.now();
  const ctx = await loadModel({ model, n_threads: threads, n_ctx: nCtx });
  const nodeLoad = performance.now() - t1;
  const vocab = Number(nVocab) || 1000;

  type Timings = { pp: number; tg: number };
  const runNode = async (rep: number): Promise<Timings> => {
    const pp = await ctx.completion({ prompt: randomTokens(PP, vocab, 1000 + rep), n_predict: 1, temperature: 0 });
    const tg = await ctx.completion({
      prompt: randomTokens(4, vocab, 2000 + rep),
      n_predict: TG,
      temperature: 0,
      ignore_eos: true,
    } as LlamaCompletionOptions);
    return { pp: pp.timings.prompt_per_second, tg: tg.timings.predicted_per_second };
  };
  const runWeb = (rep: number): Promise<Timings> =>
    page.evaluate(
      async (pp, tgPrompt, TG) => {
        const a = await window.ctx.completion({ prompt: pp, n_predict: 1, temperature: 0 });
        const b = await window.ctx.completion({ prompt: tgPrompt, n_predict: TG, temperature: 0, ignore_eos: true });
        return { pp: a.timings.prompt_per_second, tg: b.timings.predicted_per_second };
      },
      randomTokens(PP, vocab, 1000 + rep),
      randomTokens(4, vocab, 2000 + rep),
      TG,
    );
  // a warm-up each (first-use compilation, page faults)
  await runNode(-1);
  await runWeb(-1);
  const node: Timings[] = [];
  const web: Timings[] = [];
  for (let rep = 0; rep < reps; rep++) {
    if (rep % 2 === 0) {
      node.push(await runNode(rep));
      web.push(await runWeb(rep));
    } else {
      web.push(await runWeb(rep));
      node.push(await runNode(rep));
    }
  }
  await ctx.release();
  await page.evaluate(async () => {
    await window.ctx.release();
    await window.web.clearDownloadCache();
  });
  const row = (what: string, n: number, w: number) =>
    `| ${what.padEnd(5)} | ${n.toFixed(1).padStart(8)} | ${w.toFixed(1).padStart(8)} | ${(w / n).toFixed(2).padStart(5)} |`;
  const nodePp = median(node.map((t) => t.pp));
  const webPp = median(web.map((t) => t.pp));
  const nodeTg = median(node.map((t) => t.tg));
  const webTg = median(web.map((t) => t.tg));
  console.log(`model ${model}, ${threads} threads, ${reps} alternating repetitions (medians)`);
  console.log(`CPU: ${cpu}; Chromium: ${await browser.version()}; Node ${process.version}`);
  console.log(
    `load: Node ${(nodeLoad / 1000).toFixed(1)} s, Chromium ${(webLoad / 1000).toFixed(1)} s (from an HTTP URL, through OPFS)`,
  );
  console.log('| test  | Node t/s | web t/s  | web/Node |');
  console.log('|-------|----------|----------|-------|');
  console.log(row(`pp${PP}`, nodePp, webPp));
  console.log(row(`tg${TG}`, nodeTg, webTg));
} finally {
  await browser.close();
  await server.close();
}
