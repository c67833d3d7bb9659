// The API never blocks the caller's event loop: loading and generation run in the engine
// worker. While models load and generate with n_threads 1, the event-loop delay's p99
// stays under 30 ms (measured by perf_hooks.monitorEventLoopDelay at 1 ms resolution,
// alongside a 1 ms heartbeat timer).
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';
import { loadModel } from '../src/index.js';
import { tinyLlama, tinyQwen2 } from './helpers/models.js';

test('event-loop delay p99 < 30 ms while loading and generating (n_threads 1)', async () => {
  const models = [tinyLlama(), tinyQwen2()];
  const h = monitorEventLoopDelay({ resolution: 1 });
  let maxGap = 0;
  let last = performance.now();
  const beat = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 1);
  h.enable();
  const t0 = performance.now();
  let tokens = 0;
  let pieces = 0;
  for (const model of models) {
    const ctx = await loadModel({ model, n_threads: 1, n_ctx: 256 });
    const r = await ctx.completion(
      { prompt: 'Once upon a time', n_predict: 64, temperature: 0.8, seed: 1, ignore_eos: true },
      () => {
        pieces++;
      },
    );
    assert.equal(r.tokens_predicted, 64);
    tokens += r.tokens_predicted;
    await ctx.release();
  }
  const ms = performance.now() - t0;
  h.disable();
  clearInterval(beat);
  const p99 = h.percentile(99) / 1e6;
  const max = h.max / 1e6;
  process.stdout.write(
    `# event loop over ${ms.toFixed(0)} ms (2 loads, ${tokens} tokens): p50 ${(h.percentile(50) / 1e6).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms, heartbeat max gap ${maxGap.toFixed(1)} ms\n`,
  );
  assert.ok(pieces > 100);
  assert.ok(p99 < 30, `p99 ${p99.toFixed(1)} ms`);
});
