// The WebGPU device in a browser: llama-ts/web in Debian's chromium with WebGPU on
// SwiftShader (Vulkan), stories260K fully offloaded (`devices: ['webgpu'], n_gpu_layers:
// 99`): the same greedy tokens as Node's WebGPU run (where Node has an adapter) and the
// CPU's, top-10 logits (relative to the top-1) within the CPU fidelity tolerance; without
// naming it, the software adapter is left alone (as in Node). Skips when chromium gives no
// adapter.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { serveWeb, type WebServer } from '../src/cli/web.js';
import { type LlamaModelOptions, loadModel } from '../src/index.js';
import { fidelityTolerance } from './helpers/fidelity-fixtures.js';
import { missingShared, sharedPath } from './helpers/shared.js';
import { webGpuDevice } from './helpers/webgpu.js';

const CHROMIUM = '/usr/bin/chromium';
const STORIES = sharedPath('models/stories260K.gguf');
/** Chromium's WebGPU on SwiftShader's Vulkan: a software (fallback) adapter without a GPU. */
const WEBGPU_FLAGS = [
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader',
];
const PROMPT = 'Once upon a time';
const N = 16;

// biome-ignore lint/suspicious/noExplicitAny: the web entry's module, as the page sees it
type Web = any;
declare const window: { web: Web };
declare const navigator: Web;

interface Run {
  sys: string;
  tokens: number[];
  probs: [string, number][][];
}

async function nodeRun(o: Partial<LlamaModelOptions>): Promise<Run> {
  const ctx = await loadModel({ model: STORIES!, n_ctx: 128, n_threads: 2, ...o });
  try {
    const r = await ctx.completion({ prompt: PROMPT, n_predict: N, temperature: 0, n_probs: 10, return_tokens: true });
    return {
      sys: ctx.getSystemInfo(),
      tokens: r.tokens!,
      probs: (r.completion_probabilities ?? []).map((p) => p.probs.map((q) => [q.tok_str, q.prob] as [string, number])),
    };
  } finally {
    await ctx.release();
  }
}

/** Each step's top-10 as log-probability relative to the top-1 (= logit differences). */
function relative(probs: [string, number][][]): Map<string, number>[] {
  return probs.map((step) => new Map(step.map(([s, p]) => [s, Math.log(p / step[0]![1])])));
}

/** The candidates' logits relative to the top-1 agree within `tol`; one clearly in one top-10 is in the other's. */
function closeTop10(got: Run, want: Run, tol: number, what: string): void {
  const [g, w] = [relative(got.probs), relative(want.probs)];
  assert.equal(g.length, w.length, `${what}: steps`);
  for (let i = 0; i < w.length; i++) {
    const floor = Math.min(...w[i]!.values());
    for (const [s, lw] of w[i]!) {
      const lg = g[i]!.get(s);
      if (lg === undefined) {
        assert.ok(lw <= floor + tol, `${what}: step ${i}: '${s}' (${lw}) missing from the top-10`);
        continue;
      }
      assert.ok(Math.abs(lg - lw) <= tol, `${what}: step ${i}, '${s}': ${lg} vs ${lw} (tolerance ${tol})`);
    }
  }
}

const skipAll = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is absent (Debian's chromium); the browser WebGPU test is skipped`
  : STORIES
    ? false
    : missingShared('models/stories260K.gguf');

describe('the WebGPU device in chromium (llama-ts/web)', { skip: skipAll, timeout: 120_000 }, () => {
  let browser: Browser;
  let server: WebServer;
  let page: Page;
  let adapter: string | null = null;
  const errors: string[] = [];

  before(async () => {
    server = await serveWeb({ port: 0, models: { 'stories.gguf': STORIES! } });
    const { default: puppeteer } = await import('puppeteer-core');
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--no-first-run', ...WEBGPU_FLAGS],
    });
    page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/blank.html`);
    adapter = await page.evaluate(async () => {
      const a = await navigator.gpu?.requestAdapter();
      return a ? `${a.info.vendor} ${a.info.architecture}${a.info.isFallbackAdapter ? ' (fallback)' : ''}` : null;
    });
    if (adapter)
      await page.evaluate(async (entry) => {
        window.web = await import(entry);
      }, '/dist/src/web/index.js');
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    cpuDevice.close();
  });

  test("stories260K on the page's WebGPU: greedy tokens as Node's WebGPU and CPU runs, top-10 within the CPU fidelity tolerance; not used unless named", async (t) => {
    if (!adapter) return t.skip(`chromium gives no WebGPU adapter with ${WEBGPU_FLAGS.join(' ')}`);
    const inPage = (opts: object) =>
      page.evaluate(
        async (opts, prompt, n) => {
          const ctx = await window.web.loadModel({ model: '/models/stories.gguf', n_ctx: 128, n_threads: 2, ...opts });
          const r = await ctx.completion({ prompt, n_predict: n, temperature: 0, n_probs: 10, return_tokens: true });
          const sys = ctx.getSystemInfo();
          await ctx.release();
          return {
            sys,
            tokens: r.tokens,
            probs: r.completion_probabilities.map((p: Web) => p.probs.map((q: Web) => [q.tok_str, q.prob])),
          };
        },
        opts,
        PROMPT,
        N,
      ) as Promise<Run>;
    const web = await inPage({ devices: ['webgpu'], n_gpu_layers: 99 });
    assert.match(web.sys, /WebGPU0/, `the page ran on ${adapter}`);
    const cpu = await nodeRun({ devices: ['CPU'] });
    assert.deepEqual(web.tokens, cpu.tokens, "greedy tokens as the CPU's");
    closeTop10(web, cpu, fidelityTolerance('models/stories260K'), 'page WebGPU vs Node CPU');
    const nodeGpu =
      typeof (await webGpuDevice()) === 'string' ? undefined : await nodeRun({ devices: ['webgpu'], n_gpu_layers: 99 });
    if (nodeGpu) {
      assert.match(nodeGpu.sys, /WebGPU0/);
      assert.deepEqual(web.tokens, nodeGpu.tokens, "greedy tokens as Node's WebGPU");
    } else t.diagnostic("Node has no WebGPU adapter: compared with the CPU's only");
    // the software adapter is listed, never chosen by default
    const plain = await inPage({});
    assert.doesNotMatch(plain.sys, /WebGPU/, 'a software adapter is only used when named');
    assert.deepEqual(plain.tokens, cpu.tokens);
    assert.deepEqual(errors, []);
  });
});
