// llama.cpp's flash_attn_type through the library and the CLI: 'auto' and 'on' run the
// fused op, 'off' the two-matrix-product path (the answers of bindings that turn flash
// attention off, node-llama-cpp for Gemma 2 and DeepSeek-2 among them). Each is compared
// with the model layer's Context run the same way, so the option must reach it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../src/index.js';
import { Context, Model } from '../src/model/index.js';
import { tinyLlama } from './helpers/models.js';

const MODEL = tinyLlama('F32');
const PROMPT = 'Once upon a time there was a little';
const CLI = fileURLToPath(new URL('../../bin/llama-ts.js', import.meta.url));

/** The model layer's logits after the prompt (BOS added), with or without flash attention. */
async function contextLogits(flashAttn: boolean): Promise<Float32Array> {
  const model = await Model.load(MODEL);
  const ctx = new Context(model, { nCtx: 256, flashAttn });
  try {
    await ctx.decode({ tokens: model.vocab.encode(PROMPT, { addSpecial: true, parseSpecial: false }) });
    return ctx.getLogits(-1);
  } finally {
    ctx.free();
    model.free();
  }
}

/** The library's top-10 raw logits after the prompt under `options`. */
async function libraryTop(options: Record<string, unknown>): Promise<[number, number][]> {
  const ctx = await loadModel({ model: MODEL, n_ctx: 256, ...options });
  try {
    const r = await ctx.completion({ prompt: PROMPT, n_predict: 1, temperature: 0, top_logits: 10 });
    return r.top_logits as [number, number][];
  } finally {
    await ctx.release();
  }
}

test("flash_attn_type 'off' / 'on' / 'auto' and llama.node's flash_attn reach the context", async () => {
  const fused = await contextLogits(true);
  const unfused = await contextLogits(false);
  // the two paths round differently (F16 probabilities), so they must not be bit-equal
  assert.ok(
    fused.some((x, i) => x !== unfused[i]),
    'the unfused path gave the fused bits',
  );
  const expect = (logits: Float32Array, top: [number, number][], what: string) => {
    assert.equal(top.length, 10, what);
    for (const [id, logit] of top) assert.equal(logit, logits[id], `${what}: token ${id}`);
  };
  expect(unfused, await libraryTop({ flash_attn_type: 'off' }), "flash_attn_type 'off'");
  expect(unfused, await libraryTop({ flash_attn: false }), 'flash_attn false');
  expect(fused, await libraryTop({ flash_attn_type: 'on' }), "flash_attn_type 'on'");
  expect(fused, await libraryTop({}), 'the default (auto)');
  // flash_attn_type wins over the older switch, as in llama.node
  expect(fused, await libraryTop({ flash_attn_type: 'auto', flash_attn: false }), "'auto' with flash_attn false");
});

test('bad values and a quantized V cache without flash attention are option errors', async () => {
  await assert.rejects(loadModel({ model: MODEL, flash_attn_type: 'yes' as never }), (e: Error & { code?: string }) => {
    assert.equal(e.code, 'ERR_OPTION');
    assert.match(e.message, /flash_attn_type = "yes": must be one of 'auto', 'on', 'off'/);
    return true;
  });
  await assert.rejects(loadModel({ model: MODEL, flash_attn: 1 as never }), /flash_attn = 1: must be true or false/);
  await assert.rejects(
    loadModel({ model: MODEL, flash_attn_type: 'off', cache_type_v: 'q8_0' }),
    /q8_0 V cache needs flash attention/,
  );
});

test('llama-ts run -fa off gives the unfused logits; -fa with a bad value is a usage error', async () => {
  const unfused = await contextLogits(false);
  const run = (fa: string) =>
    spawnSync(
      process.execPath,
      [
        CLI,
        'run',
        '-m',
        MODEL,
        '-p',
        PROMPT,
        '-n',
        '1',
        '--temp',
        '0',
        '-c',
        '256',
        '-fa',
        fa,
        '--json',
        '--top-logits',
        '10',
      ],
      {
        encoding: 'utf8',
      },
    );
  const r = run('off');
  assert.equal(r.status, 0, r.stderr);
  const top = JSON.parse(r.stdout).top_logits as [number, number][];
  for (const [id, logit] of top) assert.equal(logit, unfused[id], `token ${id}`);
  const bad = run('maybe');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--flash-attn must be on, off or auto, got 'maybe'/);
});
