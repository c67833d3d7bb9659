// A bounded load test on loopback (127.0.0.1 only): --parallel 4 with a queue of 64.
// 1) 32 concurrent streaming clients for 30 s (LLAMA_TS_LOAD_SECONDS to change): no
//    request may fail or be rejected. 2) 200 clients at once: the ones beyond the slots
//    and the queue get 503 promptly, the rest complete, and the server stays healthy.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { LlamaServer } from '../src/server/index.js';
import { chatModel } from './server-fixtures.js';

const SECONDS = Number(process.env.LLAMA_TS_LOAD_SECONDS ?? 30);
const MODEL = chatModel();

let server: LlamaServer;
before(async () => {
  server = await LlamaServer.start({ model: MODEL, host: '127.0.0.1', port: 0, parallel: 4, nCtx: 2048, maxQueue: 64 });
});
after(async () => {
  await server?.close();
});

async function processing(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^llamacpp:requests_processing (\S+)$/m.exec(text)?.[1]);
}

test(`32 concurrent streaming clients for ${SECONDS} s: nothing fails or is rejected`, {
  timeout: (SECONDS + 60) * 1000,
}, async () => {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  const deadline = Date.now() + SECONDS * 1000;
  let ok = 0;
  let tokens = 0;
  const failures: string[] = [];
  const worker = async (w: number) => {
    for (let i = 0; Date.now() < deadline; i++) {
      try {
        const stream = await client.chat.completions.create({
          model: server.modelId,
          messages: [{ role: 'user', content: `Story ${w}.${i}: once upon a time` }],
          max_tokens: 8 + ((w * 7 + i * 13) % 40),
          temperature: 0.8,
          seed: w * 1000 + i,
          stream: true,
        });
        let finish: string | null | undefined;
        let n = 0;
        for await (const ch of stream) {
          const c = ch.choices[0];
          if (c?.finish_reason) finish = c.finish_reason;
          if (ch.usage) n = ch.usage.completion_tokens;
        }
        if (!finish) throw new Error('the stream ended without a finish_reason');
        ok++;
        tokens += n;
      } catch (e) {
        failures.push(`client ${w}: ${(e as Error).message}`);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 32 }, (_, w) => worker(w)));
  const s = (performance.now() - t0) / 1000;
  process.stderr.write(
    `# load: ${ok} streamed requests, ${tokens} tokens in ${s.toFixed(1)} s (${(tokens / s).toFixed(0)} t/s aggregate), ${failures.length} failed\n`,
  );
  assert.deepEqual(failures.slice(0, 5), []);
  assert.ok(ok >= 32, `only ${ok} requests completed`);
  assert.equal(server.metrics.rejected, 0);
});

test('200 clients at once: the overflow gets 503 promptly; the server stays healthy', {
  timeout: 120_000,
}, async () => {
  const rejectedBefore = server.metrics.rejected;
  const results = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const t0 = performance.now();
      const r = await fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: `Once upon a time ${i}`, max_tokens: 24, ignore_eos: true }),
      });
      const body = (await r.json()) as { error?: { type: string }; choices?: unknown[] };
      return { status: r.status, ms: performance.now() - t0, body };
    }),
  );
  const okN = results.filter((r) => r.status === 200).length;
  const busy = results.filter((r) => r.status === 503);
  const other = results.filter((r) => r.status !== 200 && r.status !== 503);
  const slowest503 = Math.max(0, ...busy.map((r) => r.ms));
  process.stderr.write(
    `# burst: ${okN} completed, ${busy.length} got 503 (slowest ${slowest503.toFixed(0)} ms), ${other.length} other\n`,
  );
  assert.equal(other.length, 0, JSON.stringify(other.slice(0, 3)));
  assert.ok(okN >= 4 + 64, `only ${okN} completed`);
  assert.ok(busy.length > 0, 'no request was turned away');
  for (const r of busy) assert.equal(r.body.error?.type, 'unavailable_error');
  assert.ok(slowest503 < 3000, `a 503 took ${slowest503.toFixed(0)} ms`);
  assert.equal(server.metrics.rejected - rejectedBefore, busy.length);
  // healthy afterwards: nothing left running, and a new request is served
  for (let i = 0; i < 100 && (await processing()) !== 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await processing(), 0);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  const again = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once', max_tokens: 4 }),
  });
  assert.equal(again.status, 200);
});
