// The library on a model with recurrent layers (a generated tiny Qwen3.5: Gated DeltaNet +
// attention): a full context ends the generation (no shift: the state would still carry
// the dropped tokens), a repeated or extended prompt resumes at the checkpoint taken before
// the last prompt token (the state has moved on through the reply), a prompt that diverges
// is evaluated again, a loaded session continues correctly, and three parallel slots each
// give what one sequence alone gives; every reply is what a fresh context gives. A chat
// with Qwen3.5's template (thinking on: the prompt opens <think>) returns the reply as
// reasoning_content, streamed as the token events' partial parse. Contexts run at 1, 2 and
// 3 threads, and each reply is held to one made at another thread count.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { type LlamaContext, loadModel } from '../src/index.js';
import { setLogCallback } from '../src/log.js';
import { REPO_ROOT } from './helpers/shared.js';

const PROMPT = 'Once upon a time there was a little dog';

describe('library on a hybrid (recurrent + attention) model', () => {
  let path: string;
  let ctx: LlamaContext;
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-api-recurrent-'));
  const fresh = async (prompt: string, n: number): Promise<string> => {
    const c = await loadModel({ model: path, n_threads: 1, n_ctx: 128 });
    try {
      return (await c.completion({ prompt, n_predict: n, temperature: 0 })).text;
    } finally {
      await c.release();
    }
  };
  before(async () => {
    path = ensureModel('tiny-qwen35', 'F32');
    // 3 threads here, 1 in fresh contexts, 2 for the loaded session and parallel slots
    ctx = await loadModel({ model: path, n_threads: 3, n_ctx: 128 });
  });
  after(async () => {
    await ctx.release();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a full context ends the generation: no context shift, said at load', async () => {
    const warned: string[] = [];
    setLogCallback((level, message) => {
      if (level === 'warn') warned.push(message);
    });
    let small: LlamaContext;
    try {
      small = await loadModel({ model: path, n_threads: 1, n_ctx: 32, ctx_shift: true });
    } finally {
      setLogCallback(null);
    }
    assert.ok(
      warned.some((m) => /ctx_shift: qwen35 cannot shift its context/.test(m)),
      `warnings: ${JSON.stringify(warned)}`,
    );
    try {
      const r = await small.completion({ prompt: PROMPT, n_predict: 100, temperature: 0 });
      assert.equal(r.context_full, true);
      assert.equal(r.stopped_limit, true);
      assert.ok(r.tokens_evaluated + r.tokens_predicted <= 33, `${r.tokens_evaluated} + ${r.tokens_predicted}`);
    } finally {
      await small.release();
    }
  });

  test('prefix reuse through the recurrent state: checkpoints, divergence', async () => {
    const a = await ctx.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
    assert.equal(a.text, await fresh(PROMPT, 12));
    // the same prompt again: back to the checkpoint before its last token
    const b = await ctx.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
    assert.equal(b.text, a.text);
    assert.equal(b.tokens_cached, a.tokens_evaluated - 1);
    // a longer prompt sharing the first: the state is past it (the reply), so it resumes
    // at the same checkpoint
    const longer = `${PROMPT} and a cat`;
    const c = await ctx.completion({ prompt: longer, n_predict: 8, temperature: 0 });
    assert.equal(c.text, await fresh(longer, 8));
    assert.equal(c.tokens_cached, a.tokens_evaluated - 1);
    // a prompt that diverges before any checkpoint: evaluated again from the start
    const other = 'The cat sat';
    const d = await ctx.completion({ prompt: other, n_predict: 8, temperature: 0 });
    assert.equal(d.tokens_cached, 0);
    assert.equal(d.text, await fresh(other, 8));
  });

  test('a saved session loads and continues as a fresh context does', async () => {
    await ctx.completion({ prompt: PROMPT, n_predict: 6, temperature: 0 });
    const file = join(dir, 's.session');
    await ctx.saveSession(file);
    const other = await loadModel({ model: path, n_threads: 2, n_ctx: 128 });
    try {
      await other.loadSession(file);
      const r = await other.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
      assert.equal(r.text, await fresh(PROMPT, 12));
    } finally {
      await other.release();
    }
  });

  test('3 parallel slots: each gives what one sequence alone gives', async () => {
    const prompts = [PROMPT, 'The cat sat on the mat', 'A long time ago in a galaxy'];
    const want: string[] = [];
    for (const p of prompts) want.push(await fresh(p, 16));
    const par = await loadModel({ model: path, n_threads: 2, n_ctx: 3 * 128 });
    try {
      await par.parallel.enable({ n_parallel: 3 });
      const reqs = await Promise.all(
        prompts.map((prompt) => par.parallel.completion({ prompt, n_predict: 16, temperature: 0, ignore_eos: true })),
      );
      const got = await Promise.all(reqs.map((r) => r.promise));
      for (const [i, g] of got.entries()) assert.equal(g.text, want[i], `slot ${i}`);
    } finally {
      await par.release();
    }
  });

  test("Qwen3.5's template with thinking on: the reply is reasoning_content, streamed as it grows", async () => {
    const template = readFileSync(join(REPO_ROOT, 'test/refs/chat-recurrent/qwen35.jinja'), 'utf8');
    // the model carries the template (a model without one gets chatml, not Jinja)
    const chat = await loadModel({ model: path, n_threads: 1, n_ctx: 128, chat_template: template });
    const events: { content?: string; reasoning_content?: string }[] = [];
    let r: Awaited<ReturnType<LlamaContext['completion']>>;
    try {
      r = await chat.completion(
        {
          messages: [{ role: 'user', content: 'Name three small primes.' }],
          n_predict: 12,
          temperature: 0,
          ignore_eos: true,
        },
        (ev) => events.push({ content: ev.content, reasoning_content: ev.reasoning_content }),
      );
    } finally {
      await chat.release();
    }
    assert.ok(r.text.length > 0);
    const closed = r.text.indexOf('</think>');
    if (closed < 0) {
      assert.equal(r.content, '');
      assert.equal(r.reasoning_content, r.text.trim() || undefined);
    }
    const last = events.at(-1)!;
    assert.equal(last.content, r.content);
    assert.equal(last.reasoning_content, r.reasoning_content);
  });
});

describe('server on a hybrid model with a thinking template', () => {
  test('chat: reasoning_content in the message, streamed as reasoning_content deltas; the prefix reused at a checkpoint; thinking off', async () => {
    const { LlamaServer } = await import('../src/server/index.js');
    const template = readFileSync(join(REPO_ROOT, 'test/refs/chat-recurrent/qwen35.jinja'), 'utf8');
    const server = await LlamaServer.start({
      model: ensureModel('tiny-qwen35', 'F32'),
      port: 0,
      parallel: 1,
      nCtx: 512,
      chatTemplate: template,
    });
    try {
      const body = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10, temperature: 0 };
      const post = (b: unknown) =>
        fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(b),
        });
      // biome-ignore lint/suspicious/noExplicitAny: a response body read by shape
      const whole: any = await (await post(body)).json();
      const msg = whole.choices[0].message;
      assert.equal(typeof msg.reasoning_content, 'string');
      assert.equal(msg.content, '');
      const sse = await (await post({ ...body, stream: true })).text();
      let reasoning = '';
      let content = '';
      let cached = -1;
      for (const line of sse.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const ch = JSON.parse(line.slice(6));
        reasoning += ch.choices[0]?.delta?.reasoning_content ?? '';
        content += ch.choices[0]?.delta?.content ?? '';
        if (ch.timings) cached = ch.timings.cache_n;
      }
      assert.equal(reasoning, msg.reasoning_content);
      assert.equal(content, '');
      // the same prompt: resumed at the checkpoint before its last token
      assert.equal(cached, whole.usage.prompt_tokens - 1);
      // thinking off through chat_template_kwargs: the prompt closes an empty <think> block,
      // so the reply is content
      // biome-ignore lint/suspicious/noExplicitAny: a response body read by shape
      const off: any = await (await post({ ...body, chat_template_kwargs: { enable_thinking: false } })).json();
      const offMsg = off.choices[0].message;
      assert.ok(offMsg.content.length > 0, JSON.stringify(offMsg));
      assert.ok(!offMsg.reasoning_content, JSON.stringify(offMsg));
      assert.ok(off.usage.prompt_tokens > whole.usage.prompt_tokens, 'the prompt holds the closed think block');
    } finally {
      await server.close();
    }
  });
});
