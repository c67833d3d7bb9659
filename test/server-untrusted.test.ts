// The server against hostile chat templates (in the GGUF) and grammars: each ends in a 400
// naming what was wrong while the server keeps answering. `range(1000000000)` in a
// template used to abort the process (V8 "invalid size"), two nested range(100000) loops
// blocked the event loop for good, `root ::= "\x00"` gave a 500 after sampling started,
// and a 20,000-rule grammar stalled every other request while it compiled.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { LlamaServer, type ServerOptions } from '../src/server/index.js';
import { chatModel } from './server-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-untrusted-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The chat model with `tokenizer.chat_template` replaced. */
function withTemplate(name: string, template: string): string {
  const src = openGGUF(chatModel());
  try {
    const path = join(dir, `${name}.gguf`);
    GGUFWriter.fromFile(src, { withData: true }).setString('tokenizer.chat_template', template).write(path);
    return path;
  } finally {
    src.close();
  }
}

async function post(url: string, body: unknown, signal?: AbortSignal) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const text = await r.text();
  let json: { error?: { message: string } } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, text };
}

/** Times /health while `p` runs: the slowest answer, in ms. */
async function slowestHealth(url: string, p: Promise<unknown>): Promise<number> {
  let done = false;
  void p.finally(() => {
    done = true;
  });
  let worst = 0;
  while (!done) {
    const t0 = performance.now();
    const r = await fetch(`${url}/health`);
    assert.equal(r.status, 200);
    worst = Math.max(worst, performance.now() - t0);
    await new Promise((res) => setTimeout(res, 20));
  }
  return worst;
}

const MSGS = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 };
const NESTED = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}';

async function withServer(model: string, opts: Partial<ServerOptions>, fn: (s: LlamaServer) => Promise<void>) {
  const s = await LlamaServer.start({ model, port: 0, parallel: 1, nCtx: 512, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

describe('server: hostile chat templates in the model file', () => {
  before(() => setLogCallback(() => {}));
  after(() => setLogCallback(null));

  test('range(1000000000): a 400 naming the limit, and the server lives on', async () => {
    await withServer(withTemplate('range', '{% for i in range(1000000000) %}x{% endfor %}'), {}, async (s) => {
      const r = await post(`${s.url}/v1/chat/completions`, MSGS);
      assert.equal(r.status, 400, r.text);
      assert.match(
        r.json!.error!.message,
        /chat template 'tokenizer\.chat_template' built a list of more than 100000 items \(maxItems\)/,
      );
      assert.equal((await fetch(`${s.url}/health`)).status, 200);
    });
  });

  test('nested range(100000) loops: a 400 at the time limit; /health answers all along', async () => {
    await withServer(withTemplate('nested', NESTED), { templateLimits: { timeMs: 1000 } }, async (s) => {
      const req = post(`${s.url}/v1/chat/completions`, MSGS);
      const worst = await slowestHealth(s.url, req);
      const r = await req;
      assert.equal(r.status, 400, r.text);
      assert.match(r.json!.error!.message, /took longer than 1000 ms (to render )?\(timeMs\)/);
      assert.ok(worst < 1500, `/health took ${worst.toFixed(0)} ms while the template ran`);
    });
  });

  test('a client that disconnects stops the render at once', async () => {
    await withServer(withTemplate('nested2', NESTED), { templateLimits: { timeMs: 120_000 } }, async (s) => {
      const ac = new AbortController();
      const req = post(`${s.url}/v1/chat/completions`, MSGS, ac.signal).catch((e) => e);
      // the render runs on the engine's untrusted-work worker; give it time to start
      await new Promise((res) => setTimeout(res, 500));
      ac.abort();
      await req;
      // that worker is free again: a request whose grammar compiles there is answered at once
      // (it would wait for the render, whose limit is 120 s)
      const t0 = performance.now();
      const r = await post(`${s.url}/v1/completions`, { prompt: 'Hi', max_tokens: 2, grammar: 'root ::= "a"+' });
      assert.equal(r.status, 200, r.text);
      assert.ok(performance.now() - t0 < 10_000, `${(performance.now() - t0).toFixed(0)} ms`);
      assert.equal((await fetch(`${s.url}/health`)).status, 200);
    });
  });

  test('a template that raises: a 400 with its message, not another format', async () => {
    const t =
      "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system message must come first') }}{% endif %}";
    await withServer(withTemplate('raise', t), {}, async (s) => {
      const r = await post(`${s.url}/v1/chat/completions`, MSGS);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json!.error!.message, /raised an exception: a system message must come first/);
    });
  });
});

describe('server: grammars and JSON schemas', () => {
  let s: LlamaServer;
  before(async () => {
    s = await LlamaServer.start({ model: chatModel(), port: 0, parallel: 1, nCtx: 512 });
  });
  after(() => s?.close());

  test('a grammar no token can satisfy is a 400 at request time (it was a 500 while sampling)', async () => {
    const r = await post(`${s.url}/v1/completions`, { prompt: 'Hi', max_tokens: 2, grammar: 'root ::= "\\x00"' });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json!.error!.message, /no token contains \[\\x00\]/);
  });

  test('an allOf no value can satisfy is a 400 (it compiled to `{}`)', async () => {
    const schema = { allOf: [{ type: 'string' }, { type: 'integer' }] };
    const r = await post(`${s.url}/v1/chat/completions`, {
      ...MSGS,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json!.error!.message, /#\/allOf: no value can have every type/);
  });

  test('a 20,000-rule grammar compiles off the event loop and is used', async () => {
    let g = 'root ::= r0\n';
    for (let k = 0; k < 20_000; k++) g += `r${k} ::= "x" r${k + 1} | "y"\n`;
    g += 'r20000 ::= "z"\n';
    const req = post(`${s.url}/v1/completions`, { prompt: 'Hi', max_tokens: 3, temperature: 0, grammar: g });
    const worst = await slowestHealth(s.url, req);
    const r = await req;
    assert.equal(r.status, 200, r.text);
    const text = (r.json as unknown as { choices: { text: string }[] }).choices[0]!.text;
    assert.match(text, /^(x*y?|x*z)$/);
    assert.ok(worst < 1500, `/health took ${worst.toFixed(0)} ms during the compilation`);
  });

  test('a grammar over the size limit is a 400 naming it', async () => {
    await withServer(chatModel(), { grammarLimits: { maxGrammarChars: 100 } }, async (s2) => {
      const r = await post(`${s2.url}/v1/completions`, {
        prompt: 'Hi',
        max_tokens: 2,
        grammar: `root ::= "${'a'.repeat(200)}"`,
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json!.error!.message, /the limit is 100 \(maxGrammarChars\)/);
    });
  });
});
