// The recurrent hybrids' mixtures of experts on file variants the references do not cover:
// qwen35moe with one fused `ffn_gate_up_exps` stack per layer (as newer converters write;
// llama.cpp accepts both) gives the logits of the same weights in two stacks, bit for bit;
// and what cannot run is refused with an error naming the file and key (or tensor) instead
// of computing something else: lfm2moe without (or with an unknown) `expert_gating_func`,
// which llama.cpp requires; nemotron_h_moe's latent expert projections (Nemotron 3 Super)
// and a missing shared expert length; qwen35moe with neither fused nor separate gate/up
// expert stacks.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model, ModelError } from '../src/model/index.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-recurrent-moe-errors-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A copy of `src` without the key `drop` / tensors `dropTensors`, with the u32 keys `set`;
 * `fuseGateUp`: each layer's gate and up expert stacks (F32) joined into one
 * `ffn_gate_up_exps` of [gate rows | up rows] per expert.
 */
function rewrite(
  src: string,
  name: string,
  edit: { drop?: string; set?: Record<string, number>; dropTensors?: RegExp; fuseGateUp?: boolean },
): string {
  const f = openGGUF(src);
  const dst = join(dir, name);
  try {
    const w = new GGUFWriter({ alignment: f.alignment });
    for (const [key, kv] of f.metadata) {
      if (key === edit.drop || edit.set?.[key] !== undefined) continue;
      w.set(key, kv.type, kv.value);
    }
    for (const [k, v] of Object.entries(edit.set ?? {})) w.set(k, GGUFValueType.UINT32, v);
    for (const t of f.tensors) {
      if (edit.dropTensors?.test(t.name)) continue;
      if (edit.fuseGateUp && /ffn_(gate|up)_exps/.test(t.name)) {
        if (t.name.includes('up_exps')) continue;
        const up = f.tensors.find((u) => u.name === t.name.replace('gate_exps', 'up_exps'))!;
        const [E, F, nE] = t.dims.map(Number);
        const g = new Float32Array(f.readTensorData(t).slice().buffer);
        const u = new Float32Array(f.readTensorData(up).slice().buffer);
        const fused = new Float32Array(E * 2 * F * nE);
        for (let e = 0; e < nE; e++) {
          fused.set(g.subarray(e * E * F, (e + 1) * E * F), e * 2 * E * F);
          fused.set(u.subarray(e * E * F, (e + 1) * E * F), e * 2 * E * F + E * F);
        }
        w.addTensor(t.name.replace('gate_exps', 'gate_up_exps'), t.type, [E, 2 * F, nE], new Uint8Array(fused.buffer));
        continue;
      }
      w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t));
    }
    w.write(dst);
  } finally {
    f.close();
  }
  return dst;
}

/** Loads `path` and evaluates one token (a graph error surfaces there); resolves with the error. */
async function failure(path: string): Promise<Error> {
  setLogCallback(() => {});
  try {
    const model = await Model.load(path);
    try {
      const ctx = new Context(model, { nCtx: 64 });
      try {
        await ctx.decode({ tokens: [1] });
      } finally {
        ctx.free();
      }
    } finally {
      model.free();
    }
  } catch (e) {
    return e as Error;
  } finally {
    setLogCallback(null);
  }
  assert.fail(`${path} loaded and ran`);
}

test('lfm2moe: a missing or unknown expert_gating_func is a ModelError naming the key', async () => {
  const src = ensureModel('tiny-lfm2moe', 'F32');
  const missing = await failure(rewrite(src, 'no-gating.gguf', { drop: 'lfm2moe.expert_gating_func' }));
  assert.ok(missing instanceof ModelError, String(missing));
  assert.match(missing.message, /no-gating\.gguf: lfm2moe\.expert_gating_func = 0 \(missing\)/);
  const unknown = await failure(rewrite(src, 'gating-9.gguf', { set: { 'lfm2moe.expert_gating_func': 9 } }));
  assert.match(unknown.message, /gating-9\.gguf: lfm2moe\.expert_gating_func = 9 \(not 1 softmax/);
});

test('nemotron_h_moe: a latent size the expert stacks do not have and a missing shared expert length are refused', async () => {
  const src = ensureModel('tiny-nemotron-h-moe', 'F32');
  // (latent experts themselves: test/model-variants-b-refs.test.ts)
  const latent = await failure(rewrite(src, 'latent.gguf', { set: { 'nemotron_h_moe.moe_latent_size': 32 } }));
  assert.ok(latent instanceof ModelError, String(latent));
  assert.match(
    latent.message,
    /latent\.gguf: tensor 'blk\.1\.ffn_up_exps\.weight' has shape \[64, 32, 8\], expected \[32, 32, 8\]/,
  );
  const noShared = await failure(
    rewrite(src, 'no-shexp.gguf', { drop: 'nemotron_h_moe.expert_shared_feed_forward_length' }),
  );
  assert.match(noShared.message, /no-shexp\.gguf: nemotron_h_moe\.expert_shared_feed_forward_length is missing or 0/);
});

test('qwen35moe: a layer with neither ffn_gate_up_exps nor ffn_gate_exps/ffn_up_exps names what is missing', async () => {
  const src = ensureModel('tiny-qwen35moe', 'F32');
  const e = await failure(rewrite(src, 'no-gate.gguf', { dropTensors: /^blk\.0\.ffn_gate_exps\.weight$/ }));
  assert.ok(e instanceof ModelError, String(e));
  assert.match(e.message, /qwen35moe: layer 0 needs 'blk\.0\.ffn_gate_exps\.weight' \(it has no ffn_gate_up_exps\)/);
});

/** The logits of every prompt token, then of 8 greedy tokens decoded one at a time. */
async function logitsOf(path: string): Promise<Float32Array[]> {
  setLogCallback(() => {});
  const model = await Model.load(path);
  setLogCallback(null);
  const ctx = new Context(model, { nCtx: 128 });
  try {
    const prompt = model.vocab.encode('Once upon a time there was a little dog', {
      addSpecial: true,
      parseSpecial: false,
    });
    await ctx.decode({ tokens: prompt, logits: prompt.map(() => true) });
    const out = prompt.map((_, i) => ctx.getLogits(i).slice());
    for (let i = 0; i < 8; i++) {
      const last = out[out.length - 1];
      await ctx.decode({ tokens: [last.indexOf(Math.max(...last))] });
      out.push(ctx.getLogits(-1).slice());
    }
    return out;
  } finally {
    ctx.free();
    model.free();
  }
}

test('qwen35moe: fused ffn_gate_up_exps stacks give the bits of separate gate and up stacks', async () => {
  const src = ensureModel('tiny-qwen35moe', 'F32');
  const fused = rewrite(src, 'fused.gguf', { fuseGateUp: true });
  const f = openGGUF(fused);
  try {
    assert.ok(f.tensors.some((t) => t.name === 'blk.0.ffn_gate_up_exps.weight'));
    assert.ok(!f.tensors.some((t) => /ffn_(gate|up)_exps/.test(t.name)));
  } finally {
    f.close();
  }
  const [a, b] = [await logitsOf(src), await logitsOf(fused)];
  assert.equal(a.length, b.length);
  for (const [i, row] of a.entries()) assert.deepEqual(Array.from(b[i]), Array.from(row), `row ${i}`);
});
