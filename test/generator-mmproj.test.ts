// The generator's multimodal projector files (src/generator/mmproj.ts): every preset writes a
// clip GGUF with its projector type, the planned tensors (names, shapes, types) and the
// same bytes on every run; bad shapes are refused naming the field. (Whether llama.cpp
// loads and runs them is test/mtmd-generated.test.ts's part, against its references.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { generateMmproj, isAudioProjector, MMPROJ_PRESETS, MMPROJ_TYPES, planMmproj } from '../src/generator/index.js';
import { GGMLType } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-mmproj-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

test('every tiny preset: a clip file as planned, the same bytes twice', () => {
  const tiny = Object.keys(MMPROJ_PRESETS).filter((k) => k.startsWith('tiny-'));
  for (const t of MMPROJ_TYPES) assert.ok(tiny.includes(`tiny-${t}`), `no tiny-${t} preset`);
  for (const name of tiny) {
    const preset = MMPROJ_PRESETS[name]!;
    const t = preset.spec.projector;
    const spec = { ...preset.spec, seed: 3 };
    const a = join(dir, `${name}-a.gguf`);
    const b = join(dir, `${name}-b.gguf`);
    generateMmproj(spec, a);
    generateMmproj(spec, b);
    assert.equal(sha(a), sha(b), `${t}: not deterministic`);
    const f = openGGUF(a);
    try {
      assert.equal(f.getString('general.architecture'), 'clip');
      // a second (audio) encoder: the types per encoder, or Qwen2.5-Omni's one 'qwen2.5o'
      const dual = preset.spec.audio;
      const types = dual?.omni
        ? { 'clip.projector_type': 'qwen2.5o' }
        : dual
          ? { 'clip.vision.projector_type': t, 'clip.audio.projector_type': dual.projector }
          : { 'clip.projector_type': t };
      for (const [key, value] of Object.entries(types)) assert.equal(f.getString(key), value, `${name}: ${key}`);
      const audio = isAudioProjector(t);
      assert.equal(f.get('clip.has_vision_encoder')?.value, !audio, name);
      assert.equal(f.get('clip.has_audio_encoder')?.value, audio || !!dual, name);
      const plan = planMmproj(spec);
      assert.deepEqual(
        f.tensors.map((x) => [x.name, x.dims.map(Number)]),
        plan.tensors.map((x) => [x.name, x.dims]),
        `${t}: tensors`,
      );
      // every F32 but ldp's and ldpv2's depthwise kernels (F16: llama.cpp's CPU backend needs it)
      const dw = (n: string) =>
        n === 'mm.model.peg.0.weight' || /^mm\.model\.mb_block\.[12]\.block\.0\.0\.weight$/.test(n);
      for (const x of f.tensors) {
        assert.equal(x.type, dw(x.name) ? GGMLType.F16 : GGMLType.F32, `${t}: ${x.name}`);
      }
      const prefixes = [...(audio ? [] : ['v.blk.1.']), ...(audio || dual ? ['a.blk.1.'] : [])];
      for (const prefix of prefixes) {
        assert.ok(
          f.tensors.some((x) => x.name.startsWith(prefix)),
          `${name}: no second layer (${prefix})`,
        );
      }
    } finally {
      f.close();
    }
  }
});

test('F16 projectors: matrices F16, norms, biases and position tables F32', () => {
  const spec = { ...MMPROJ_PRESETS['tiny-gemma3']!.spec, seed: 1, fileType: 'F16' as const };
  const p = join(dir, 'f16.gguf');
  generateMmproj(spec, p);
  const f = openGGUF(p);
  try {
    assert.equal(f.getU32('general.file_type'), 1);
    const type = (n: string) => f.tensors.find((x) => x.name === n)?.type;
    assert.equal(type('v.blk.0.attn_q.weight'), GGMLType.F16);
    assert.equal(type('v.patch_embd.weight'), GGMLType.F16);
    assert.equal(type('v.blk.0.ln1.weight'), GGMLType.F32);
    assert.equal(type('v.blk.0.attn_q.bias'), GGMLType.F32);
    assert.equal(type('v.position_embd.weight'), GGMLType.F32);
  } finally {
    f.close();
  }
});

test('Q4_0 projectors: matrices with whole 32-blocks Q4_0, the rest F32; InternViT-6B shapes plan RMS layers', () => {
  const spec = { ...MMPROJ_PRESETS['tiny-internvl']!.spec, seed: 1, fileType: 'Q4_0' as const };
  const p = join(dir, 'q4.gguf');
  generateMmproj(spec, p);
  const f = openGGUF(p);
  try {
    assert.equal(f.getU32('general.file_type'), 2);
    const type = (n: string) => f.tensors.find((x) => x.name === n)?.type;
    assert.equal(type('v.blk.0.attn_q.weight'), GGMLType.Q4_0);
    assert.equal(type('mm.model.mlp.1.weight'), GGMLType.Q4_0);
    assert.equal(type('v.patch_embd.weight'), GGMLType.F32); // rows of 4
    assert.equal(type('v.blk.0.ln1.weight'), GGMLType.F32);
    assert.equal(type('v.position_embd.weight'), GGMLType.F32);
  } finally {
    f.close();
  }
  // planned only (the file is 1 GB): no LayerNorm biases, q/k norms as wide as the row
  const big = planMmproj({ ...MMPROJ_PRESETS['internvit-6b-q4']!.spec, seed: 1 }).tensors;
  const dims = (n: string) => big.find((t) => t.name === n)?.dims;
  assert.equal(dims('v.blk.44.ln1.bias'), undefined);
  assert.deepEqual(dims('v.blk.44.attn_q_norm.weight'), [3200]);
  assert.deepEqual(dims('v.blk.44.attn_q.weight'), [3200, 3200]);
});

test('bad shapes are refused, naming the field', () => {
  const base = MMPROJ_PRESETS['tiny-gemma3']!.spec;
  const bad = (shape: object, re: RegExp) =>
    assert.throws(() => planMmproj({ ...base, seed: 1, shape: { ...base.shape, ...shape } }), re);
  bad({ nEmbd: 0 }, /nEmbd = 0/);
  bad({ nFf: 32 }, /nFf must differ from nEmbd/);
  bad({ nHead: 5 }, /not a multiple of nHead 5/);
  bad({ imageSize: 30 }, /imageSize 30 is not a multiple of patchSize 4/);
  assert.throws(
    () => planMmproj({ ...MMPROJ_PRESETS['tiny-ldpv2']!.spec, seed: 1, shape: { ...base.shape, imageSize: 32 } }),
    /ldpv2 needs a 24x24 patch grid/,
  );
  assert.throws(() => planMmproj({ ...base, projector: 'nope' as 'gemma3', seed: 1 }), /unknown projector type 'nope'/);
});
