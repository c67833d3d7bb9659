// LoRA adapters at the model level: an adapter applied in the graph equals the base model
// with the adapter merged into its weights (computed here in float64, written as a new
// file), scale 0 is the base model bit for bit, contexts on one model apply different
// adapters at once, bad adapters fail naming file and problem, and top-10 logits match
// node-llama-cpp 3.21.1's with the same adapters (test/data/lora, made by make-refs.mjs).

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureModel, generateLora, generateModel, type LoraSpec, presetSpec } from '../src/generator/index.js';
import { dequantize } from '../src/ggml/quants/index.js';
import { GGMLType } from '../src/ggml/types.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { type ActiveLora, Context, ContextError, LoraAdapter, Model, ModelError } from '../src/model/index.js';
import { LORA_REFS } from './data/lora/specs.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-lora-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const here = dirname(fileURLToPath(import.meta.url));

const ALL: LoraSpec = {
  targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down', 'output'],
  rank: 8,
  alpha: 16,
  seed: 7,
};
const EMBD: LoraSpec = { targets: ['attn_q', 'ffn_down', 'token_embd'], rank: 4, alpha: 0, type: 'F16', seed: 9 };

let basePath: string;
let loraAll: string;
let loraEmbd: string;
let model: Model;

before(async () => {
  setLogCallback(() => {});
  basePath = join(dir, 'base.gguf');
  generateModel(presetSpec('tiny-llama', 'F32'), basePath);
  loraAll = generateLora(basePath, ALL, join(dir, 'all.gguf')).path;
  loraEmbd = generateLora(basePath, EMBD, join(dir, 'embd.gguf')).path;
  model = await Model.load(basePath);
});
after(() => model?.free());

const PROMPT = [1, 300, 301, 302, 310, 400, 290, 280];

async function logitsOf(m: Model, loras: ActiveLora[] = [], tokens = PROMPT): Promise<Float32Array> {
  const ctx = new Context(m, { nCtx: 64, nThreads: 2 });
  try {
    ctx.setLoras(loras);
    await ctx.decode({ tokens });
    return ctx.getLogits(-1);
  } finally {
    ctx.free();
  }
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

function f32Of(file: ReturnType<typeof openGGUF>, name: string): Float32Array {
  const t = file.tensor(name)!;
  const out = new Float32Array(t.nElements);
  dequantize(t.type, file.readTensorData(t), out, t.nElements);
  return out;
}

/** The base file with the adapters merged into its (F32) weights: W + Σ s·B·A, in float64. */
function mergedModel(path: string, loras: { path: string; scale: number }[], out: string): string {
  const base = openGGUF(path);
  const merged = new Map<string, Float32Array>();
  for (const t of base.tensors) merged.set(t.name, f32Of(base, t.name));
  for (const l of loras) {
    const f = openGGUF(l.path);
    const alpha = f.getNumber('adapter.lora.alpha');
    for (const t of f.tensors) {
      if (!t.name.endsWith('.lora_a')) continue;
      const name = t.name.slice(0, -'.lora_a'.length);
      const a = f32Of(f, t.name);
      const b = f32Of(f, `${name}.lora_b`);
      const w = merged.get(name)!;
      const [nIn, nOut] = base.tensor(name)!.dims;
      if (name === 'token_embd.weight') {
        // A [r, vocab], B [r, embd]: row v gains Σ_r B[e][r]·A[v][r]
        const r = f.tensor(t.name)!.dims[0];
        const s = alpha ? (l.scale * alpha) / r : l.scale;
        for (let v = 0; v < nOut; v++)
          for (let e = 0; e < nIn; e++) {
            let acc = 0;
            for (let k = 0; k < r; k++) acc += b[e * r + k] * a[v * r + k];
            w[v * nIn + e] += s * acc;
          }
      } else {
        // A [nIn, r], B [r, nOut]: W[o][i] += s·Σ_k B[o][k]·A[k][i]
        const r = f.tensor(t.name)!.dims[1];
        const s = alpha ? (l.scale * alpha) / r : l.scale;
        for (let o = 0; o < nOut; o++)
          for (let i = 0; i < nIn; i++) {
            let acc = 0;
            for (let k = 0; k < r; k++) acc += b[o * r + k] * a[k * nIn + i];
            w[o * nIn + i] += s * acc;
          }
      }
    }
    f.close();
  }
  const w = new GGUFWriter();
  for (const [key, kv] of base.metadata) w.set(key, kv.type, kv.value);
  w.set('general.file_type', GGUFValueType.UINT32, 0);
  for (const t of base.tensors) {
    const v = merged.get(t.name)!;
    w.addTensor(t.name, GGMLType.F32, [...t.dims], new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  }
  base.close();
  w.write(out);
  return out;
}

test('an adapter applied in the graph equals the base model with the adapter merged into its weights', async () => {
  const all = await LoraAdapter.load(model, loraAll);
  const embd = await LoraAdapter.load(model, loraEmbd);
  try {
    assert.equal(all.weights.size, 2 * 7 + 1);
    assert.equal(embd.weights.size, 2 * 2 + 1);
    for (const [loras, name] of [
      [[{ adapter: all, scale: 1 }], 'all@1'],
      [[{ adapter: all, scale: 0.5 }], 'all@0.5'],
      [[{ adapter: embd, scale: -0.75 }], 'embd@-0.75 (alpha 0)'],
      [
        [
          { adapter: all, scale: 0.5 },
          { adapter: embd, scale: 1 },
        ],
        'all@0.5 + embd@1',
      ],
    ] as const) {
      const merged = await Model.load(
        mergedModel(
          basePath,
          loras.map((l) => ({ path: l.adapter.path, scale: l.scale })),
          join(dir, 'merged.gguf'),
        ),
      );
      try {
        const got = await logitsOf(model, [...loras]);
        const want = await logitsOf(merged);
        const base = await logitsOf(model);
        // the adapter matters (logits move by far more than the tolerance) ...
        assert.ok(maxDiff(got, base) > 0.5, `${name}: the adapter changes the logits (${maxDiff(got, base)})`);
        // ... and is applied as W + s·B·A
        assert.ok(maxDiff(got, want) < 2e-3, `${name}: adapter vs merged weights differ by ${maxDiff(got, want)}`);
      } finally {
        merged.free();
      }
    }
  } finally {
    all.free();
    embd.free();
  }
});

test('scale 0 or no adapter is the base model bit for bit; contexts of one model apply different adapters', async () => {
  const all = await LoraAdapter.load(model, loraAll);
  const embd = await LoraAdapter.load(model, loraEmbd);
  try {
    const base = await logitsOf(model);
    assert.deepEqual(await logitsOf(model, [{ adapter: all, scale: 0 }]), base);
    // three contexts, interleaved decodes: each keeps its own adapters
    const ctxs = [[], [{ adapter: all, scale: 1 }], [{ adapter: embd, scale: 1 }]].map((l) => {
      const c = new Context(model, { nCtx: 64, nThreads: 2 });
      c.setLoras(l);
      return c;
    });
    const alone = [
      base,
      await logitsOf(model, [{ adapter: all, scale: 1 }]),
      await logitsOf(model, [{ adapter: embd, scale: 1 }]),
    ];
    try {
      for (let i = 0; i < PROMPT.length; i++) for (const c of ctxs) await c.decode({ tokens: [PROMPT[i]] });
      ctxs.forEach((c, k) => {
        assert.ok(maxDiff(c.getLogits(-1), alone[k]) < 1e-4, `context ${k}`);
      });
      assert.ok(maxDiff(alone[1], alone[2]) > 0.5);
      // switching adapters takes effect at the next decode
      ctxs[1].setLoras([]);
      ctxs[1].clearMemory();
      await ctxs[1].decode({ tokens: PROMPT });
      assert.deepEqual(ctxs[1].getLogits(-1), base);
    } finally {
      for (const c of ctxs) c.free();
    }
    // a context refuses adapters of another model, and freed ones
    const other = await Model.load(basePath);
    const c = new Context(other, { nCtx: 32 });
    try {
      assert.throws(() => c.setLoras([{ adapter: all, scale: 1 }]), ContextError);
    } finally {
      c.free();
      other.free();
    }
  } finally {
    all.free();
    embd.free();
  }
  const c = new Context(model, { nCtx: 32 });
  try {
    assert.throws(() => c.setLoras([{ adapter: all, scale: 1 }]), /has been freed/);
  } finally {
    c.free();
  }
});

test('adapters of another architecture, shape or kind fail naming the file and the problem', async () => {
  const wrongArch = generateLora(basePath, { ...ALL, arch: 'qwen2' }, join(dir, 'arch.gguf')).path;
  await assert.rejects(LoraAdapter.load(model, wrongArch), (e: Error) => {
    assert.ok(e instanceof ModelError);
    assert.match(e.message, /arch\.gguf: the adapter is for architecture 'qwen2', but the model .* is 'llama'/);
    return true;
  });
  // made for a wider model of the same architecture
  const wide = ensureModel('tiny-llama', 'F32', undefined, { shape: { nEmbd: 128 } });
  const wrongShape = generateLora(wide, { ...ALL, targets: ['attn_v'] }, join(dir, 'shape.gguf')).path;
  await assert.rejects(
    LoraAdapter.load(model, wrongShape),
    /shape\.gguf: shapes do not fit: 'blk\.0\.attn_v\.weight' \[64, 32\] with lora_a \[128, 8\]/,
  );
  // the model file itself is not an adapter
  await assert.rejects(LoraAdapter.load(model, basePath), /general\.type is '', expected 'adapter'/);
  // a tied model has no output.weight to adapt
  const tied = await Model.load(ensureModel('tiny-llama', 'F32', undefined, { shape: { tiedEmbeddings: true } }));
  try {
    await assert.rejects(LoraAdapter.load(tied, loraAll), /changes 'output\.weight', which .* does not have/);
  } finally {
    tied.free();
  }
  // hand-made files: a lone factor, a tensor of another kind, adapter.type
  const src = openGGUF(loraAll);
  const write = (name: string, edit: (w: GGUFWriter) => void, skip?: (t: string) => boolean): string => {
    const w = new GGUFWriter();
    for (const [key, kv] of src.metadata) w.set(key, kv.type, kv.value);
    for (const t of src.tensors) if (!skip?.(t.name)) w.addTensor(t.name, t.type, [...t.dims], src.readTensorData(t));
    edit(w);
    const p = join(dir, name);
    w.write(p);
    return p;
  };
  try {
    const lone = write(
      'lone.gguf',
      () => {},
      (t) => t === 'blk.1.ffn_up.weight.lora_b',
    );
    await assert.rejects(LoraAdapter.load(model, lone), /'blk\.1\.ffn_up\.weight' has lora_a but no lora_b/);
    const stray = write('stray.gguf', (w) => w.addTensor('blk.0.attn_q.bias', GGMLType.F32, [64], new Uint8Array(256)));
    await assert.rejects(LoraAdapter.load(model, stray), /'blk\.0\.attn_q\.bias' is neither a \.lora_a nor a \.lora_b/);
    const kind = write('kind.gguf', (w) => w.setString('adapter.type', 'control_vector'));
    await assert.rejects(LoraAdapter.load(model, kind), /adapter\.type is 'control_vector', expected 'lora'/);
  } finally {
    src.close();
  }
});

test('adapters of expert stacks (mixture of experts) fail clearly; other tensors of an MoE model load', async () => {
  const moe = await Model.load(ensureModel('tiny-qwen3moe', 'F32'));
  try {
    const adapter = (name: string, target: string, nIn: number, nOut: number): string => {
      const w = new GGUFWriter();
      w.setString('general.type', 'adapter');
      w.setString('general.architecture', 'qwen3moe');
      w.setString('adapter.type', 'lora');
      w.set('adapter.lora.alpha', GGUFValueType.FLOAT32, 0);
      const r = 4;
      w.addTensor(`${target}.lora_a`, GGMLType.F32, [nIn, r], new Uint8Array(nIn * r * 4));
      w.addTensor(`${target}.lora_b`, GGMLType.F32, [r, nOut], new Uint8Array(r * nOut * 4));
      const p = join(dir, name);
      w.write(p);
      return p;
    };
    // (before, an expert stack's pair passed the 2-D shape check and was silently unused)
    await assert.rejects(
      LoraAdapter.load(moe, adapter('exps.gguf', 'blk.0.ffn_up_exps.weight', 64, 32)),
      (e: Error) => {
        assert.ok(e instanceof ModelError);
        assert.match(
          e.message,
          /exps\.gguf: the adapter changes 'blk\.0\.ffn_up_exps\.weight' \[64, 32, 8\], a stack of 8 matrices .* not supported/,
        );
        return true;
      },
    );
    const router = await LoraAdapter.load(moe, adapter('router.gguf', 'blk.0.ffn_gate_inp.weight', 64, 8));
    router.free();
  } finally {
    moe.free();
  }
});

// ---- fidelity: node-llama-cpp 3.21.1 with the same adapters ----

interface LoraRef {
  model: { sha256: string };
  adapters: Record<string, { sha256: string }>;
  combos: {
    adapters: { name: string; scale: number }[];
    cases: { tokens: number[]; top10: [number, number, number][] }[];
  }[];
}

const sha256 = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

for (const spec of LORA_REFS) {
  const refPath = join(here, '..', '..', 'test', 'data', 'lora', `${spec.name}.json`);
  test(`LoRA fidelity: ${spec.name}, top-10 logits relative to the top token within ${spec.tolerance} of node-llama-cpp`, async (t) => {
    if (!existsSync(refPath)) {
      t.skip(`${refPath} missing`);
      return;
    }
    const ref = JSON.parse(readFileSync(refPath, 'utf8')) as LoraRef;
    const path = ensureModel(spec.preset, spec.type);
    assert.equal(
      sha256(path),
      ref.model.sha256,
      `${path} is not the model the reference was made on: run make-refs.mjs`,
    );
    const m = await Model.load(path);
    const adapters = new Map<string, LoraAdapter>();
    try {
      for (const [name, s] of Object.entries(spec.adapters)) {
        const file = generateLora(path, s, join(dir, `${spec.name}-${name}.gguf`)).path;
        assert.equal(sha256(file), ref.adapters[name].sha256, `adapter ${name} differs from the reference's`);
        adapters.set(name, await LoraAdapter.load(m, file));
      }
      let worstAll = 0;
      for (const r of ref.combos) {
        const loras = r.adapters.map((a) => ({ adapter: adapters.get(a.name)!, scale: a.scale }));
        for (const c of r.cases) {
          const logits = await logitsOf(m, loras, c.tokens);
          const [top, topLp] = c.top10[0];
          let worst = 0;
          for (const [id, lp] of c.top10) worst = Math.max(worst, Math.abs(logits[id] - logits[top] - (lp - topLp)));
          worstAll = Math.max(worstAll, worst);
          const label = `${r.adapters.map((a) => `${a.name}@${a.scale}`).join('+') || 'none'} [${c.tokens.join(' ')}]`;
          assert.ok(worst <= spec.tolerance, `${label}: relative top-10 logits differ by ${worst.toFixed(4)}`);
        }
      }
      t.diagnostic(`largest difference ${worstAll.toFixed(4)}`);
    } finally {
      for (const a of adapters.values()) a.free();
      m.free();
    }
  });
}
