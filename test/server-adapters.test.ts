// The server's LoRA adapters (--lora: GET/POST /lora-adapters, a request's `lora`),
// speculative decoding in its slots (--model-draft: timings and /metrics count drafts,
// texts are plain decoding's) and reranking (/v1/rerank and /rerank in Jina's shape,
// top_n, documents; a reranker model serves it by itself, --reranking asks for it); and
// the CLI: `llama-ts rerank`, `llama-ts run` with --lora and --model-draft.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../src/api/index.js';
import { ensureModel, generateLora } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { LlamaServer } from '../src/server/index.js';

const BIN = fileURLToPath(new URL('../../bin/llama-ts.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-server-adapters-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = ensureModel('tiny-llama', 'F32');
const DRAFT = ensureModel('tiny-llama', 'F32', undefined, { seed: 2, shape: { nLayer: 1 } });
const RERANKER = ensureModel('tiny-bert-reranker', 'F32');
let lora: string;
before(() => {
  setLogCallback(() => {});
  lora = generateLora(BASE, { targets: ['attn_q', 'ffn_down', 'output'], rank: 8, seed: 5 }, join(dir, 'a.gguf')).path;
});

async function post(url: string, body: unknown) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read by shape
  return { status: r.status, json: (await r.json()) as any };
}

/** Greedy text of a prompt, through the library (with or without the adapter). */
async function libraryText(prompt: string, withLora: boolean): Promise<string> {
  const ctx = await loadModel({ model: BASE, n_ctx: 256, ...(withLora ? { lora_list: [{ path: lora }] } : {}) });
  try {
    return (await ctx.completion({ prompt, n_predict: 16, temperature: 0 })).text;
  } finally {
    await ctx.release();
  }
}

describe('server: adapters and speculative decoding', () => {
  let server: LlamaServer;
  before(async () => {
    server = await LlamaServer.start({
      model: BASE,
      port: 0,
      parallel: 2,
      nCtx: 512,
      lora: [{ path: lora, scaled: 1 }],
      modelDraft: DRAFT,
      draftMax: 4,
      draftPMin: 0,
    });
  });
  after(async () => {
    await server?.close();
  });

  test('GET/POST /lora-adapters and a request’s lora scales', async () => {
    const prompt = 'once upon a time';
    const [base, adapted] = [await libraryText(prompt, false), await libraryText(prompt, true)];
    assert.notEqual(base, adapted);
    const get = async () => (await fetch(`${server.url}/lora-adapters`)).json();
    assert.deepEqual(await get(), [{ id: 0, path: lora, scale: 1 }]);
    const complete = async (extra: Record<string, unknown> = {}) =>
      (
        await post(`${server.url}/completion`.replace('/completion', '/v1/completions'), {
          prompt,
          max_tokens: 16,
          temperature: 0,
          ...extra,
        })
      ).json;
    assert.equal((await complete()).choices[0].text, adapted);
    assert.equal((await complete({ lora: [{ id: 0, scale: 0 }] })).choices[0].text, base);
    assert.deepEqual((await post(`${server.url}/lora-adapters`, [{ id: 0, scale: 0 }])).json, { success: true });
    assert.deepEqual(await get(), [{ id: 0, path: lora, scale: 0 }]);
    assert.equal((await complete()).choices[0].text, base);
    assert.equal((await complete({ lora: [{ id: 0, scale: 1 }] })).choices[0].text, adapted);
    // bad requests
    assert.equal((await post(`${server.url}/lora-adapters`, [{ id: 3, scale: 1 }])).status, 400);
    assert.equal((await post(`${server.url}/lora-adapters`, { id: 0 })).status, 400);
    const bad = await post(`${server.url}/v1/completions`, { prompt, max_tokens: 2, lora: [{ id: 'x', scale: 1 }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'lora');
    await post(`${server.url}/lora-adapters`, [{ id: 0, scale: 1 }]);
  });

  test('slots decode speculatively: plain decoding’s text, drafts in timings and /metrics', async () => {
    const prompts = ['the cat', 'hello world', 'once upon a time'];
    const want: string[] = [];
    for (const p of prompts) {
      want.push(
        (
          await post(`${server.url}/v1/completions`, {
            prompt: p,
            max_tokens: 12,
            temperature: 0,
            'speculative.n_max': 0,
          })
        ).json.choices[0].text,
      );
    }
    const got = await Promise.all(
      prompts.map((p) => post(`${server.url}/v1/completions`, { prompt: p, max_tokens: 12, temperature: 0 })),
    );
    got.forEach((r, i) => {
      assert.equal(r.json.choices[0].text, want[i]);
      assert.ok(r.json.timings.draft_n > 0, JSON.stringify(r.json.timings));
      assert.ok(r.json.timings.draft_n_accepted >= 0);
    });
    const text = await (await fetch(`${server.url}/metrics`)).text();
    assert.ok(Number(/^llamats:draft_tokens_total (\S+)$/m.exec(text)![1]) > 0);
    assert.match(text, /^llamats:draft_acceptance_rate \S+$/m);
  });
});

describe('server: reranking', () => {
  let server: LlamaServer;
  before(async () => {
    server = await LlamaServer.start({ model: RERANKER, port: 0 });
  });
  after(async () => {
    await server?.close();
  });

  test('/v1/rerank and /rerank: results best first, top_n, documents, usage', async () => {
    const docs = ['hi', 'The giant panda is a bear species endemic to China.', 'paris', 'pandas eat bamboo'];
    const lib = await loadModel({ model: RERANKER });
    const want = await lib.rerank('what is a panda?', docs);
    await lib.release();
    const r = await post(`${server.url}/v1/rerank`, {
      query: 'what is a panda?',
      documents: docs,
      top_n: 3,
      return_documents: true,
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.object, 'list');
    assert.equal(r.json.model, server.modelId);
    assert.equal(r.json.results.length, 3);
    r.json.results.forEach((x: { index: number; relevance_score: number; document: { text: string } }, i: number) => {
      assert.equal(x.index, want[i]!.index);
      assert.ok(Math.abs(x.relevance_score - want[i]!.score) < 1e-6);
      assert.equal(x.document.text, docs[x.index]);
    });
    assert.ok(r.json.usage.prompt_tokens > 0 && r.json.usage.total_tokens === r.json.usage.prompt_tokens);
    const alias = await post(`${server.url}/rerank`, {
      query: 'what is a panda?',
      documents: docs.map((text) => ({ text })),
    });
    assert.equal(alias.json.results.length, 4);
    assert.equal(alias.json.results[0].document, undefined);
    assert.equal((await post(`${server.url}/v1/rerank`, { documents: docs })).status, 400);
    assert.equal((await post(`${server.url}/v1/rerank`, { query: 'q', documents: [] })).status, 400);
    assert.equal((await post(`${server.url}/v1/rerank`, { query: 'q', documents: [1] })).status, 400);
  });

  test('a generative model: 501 without --reranking; --reranking with a model that cannot rank fails at start', async () => {
    const s = await LlamaServer.start({ model: BASE, port: 0, parallel: 1, nCtx: 128 });
    try {
      const r = await post(`${s.url}/v1/rerank`, { query: 'q', documents: ['d'] });
      assert.equal(r.status, 501);
      assert.match(r.json.error.message, /--reranking/);
    } finally {
      await s.close();
    }
    await assert.rejects(LlamaServer.start({ model: BASE, port: 0, nCtx: 128, reranking: true }), /cannot rank/);
    // a Qwen3-style reranker ranks by itself, and still generates
    const q = await LlamaServer.start({
      model: ensureModel('tiny-qwen3-reranker', 'F32'),
      port: 0,
      parallel: 1,
      nCtx: 512,
    });
    try {
      const r = await post(`${q.url}/v1/rerank`, { query: 'q', documents: ['a', 'b'] });
      assert.equal(r.json.results.length, 2);
      const c = await post(`${q.url}/v1/completions`, { prompt: 'hi', max_tokens: 2 });
      assert.equal(c.status, 200);
    } finally {
      await q.close();
    }
  });
});

describe('CLI', () => {
  const cli = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

  test('llama-ts rerank', () => {
    const r = cli([
      'rerank',
      '-m',
      RERANKER,
      '-q',
      'what is a panda?',
      'hi',
      'pandas eat bamboo',
      '--normalize',
      '--json',
    ]);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { index: number; score: number; document: string }[];
    assert.equal(out.length, 2);
    assert.ok(out[0]!.score >= out[1]!.score && out[0]!.score < 1 && out[1]!.score > 0);
    const text = cli(['rerank', '-m', RERANKER, '-q', 'q', 'a', 'b', 'c', '--top-n', '2']);
    assert.equal(text.status, 0, text.stderr);
    assert.equal(text.stdout.trim().split('\n').length, 2);
    assert.equal(cli(['rerank', '-m', RERANKER, 'a']).status, 2);
    const notRanker = cli(['rerank', '-m', BASE, '-q', 'q', 'a']);
    assert.equal(notRanker.status, 1);
    assert.match(notRanker.stderr, /cannot rank/);
  });

  test('llama-ts run --lora, --lora-scaled, --model-draft, --spec-type', () => {
    const run = (extra: string[]) => {
      const r = cli([
        'run',
        '-m',
        BASE,
        '-p',
        'once upon a time',
        '-n',
        '12',
        '--temp',
        '0',
        '-c',
        '128',
        '--json',
        ...extra,
      ]);
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as { text: string; timings: Record<string, number> };
    };
    const base = run([]);
    const adapted = run(['--lora', lora]);
    assert.notEqual(adapted.text, base.text);
    assert.equal(run(['--lora-scaled', lora, '1']).text, adapted.text);
    assert.equal(run([`--lora-scaled=${lora}:0`]).text, base.text);
    const spec = run(['--model-draft', DRAFT, '--draft-max', '3', '--draft-p-min', '0']);
    assert.equal(spec.text, base.text);
    assert.ok(spec.timings.draft_tokens! > 0);
    assert.equal(run(['--spec-type', 'ngram']).text, base.text);
    const bad = cli(['run', '-m', BASE, '-p', 'x', '--lora-scaled', lora]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--lora-scaled takes FILE SCALE/);
    assert.equal(cli(['run', '-m', BASE, '-p', 'x', '--spec-type', 'draft']).status, 2);
  });
});
