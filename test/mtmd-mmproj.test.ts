// Multimodal projector files: what llama-ts refuses and how it says so (an unknown
// projector type named, a missing key or tensor named, a file that is not a projector, a
// projector whose width is not the model's), the library API's answers without a
// projector, and the preprocessing pieces mtmd's answers pinned down (its bilinear resize,
// corner-aligned: the same values llama.node's build 10257 computes, checked through it).

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateMmproj, MMPROJ_PRESETS } from '../src/generator/index.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { type LlamaContext, loadModel } from '../src/index.js';
import { Model } from '../src/model/index.js';
import { normalize, resize } from '../src/multimodal/image.js';
import { Mmproj, MmprojError, PROJECTORS, projectorModalities } from '../src/multimodal/mmproj.js';
import { Multimodal } from '../src/multimodal/mtmd.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const DIR = sharedPath('fixtures/mtmd/cases.json') ? sharedPath('fixtures/mtmd/')! : undefined;

describe('mmproj files', { skip: DIR ? false : missingShared('fixtures/mtmd') }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-mmproj-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  /** The gemma3 projector rewritten: keys changed or removed, tensors left out. */
  function variant(
    name: string,
    edit: { set?: [string, string]; setU32?: [string, number]; drop?: string; dropTensor?: string },
  ): string {
    const src = openGGUF(`${DIR}gemma3.mmproj.gguf`);
    try {
      const full = GGUFWriter.fromFile(src);
      const w = new GGUFWriter({ alignment: src.alignment });
      for (const [key, kv] of src.metadata) if (key !== edit.drop) w.set(key, kv.type, kv.value);
      if (edit.set) w.set(edit.set[0], GGUFValueType.STRING, edit.set[1]);
      if (edit.setU32) w.set(edit.setU32[0], GGUFValueType.UINT32, edit.setU32[1]);
      for (const t of full.tensors) {
        if (t.name !== edit.dropTensor) w.addTensor(t.name, t.type, [...t.dims], src.readTensorData(t.name));
      }
      const path = join(tmp, `${name}.gguf`);
      w.write(path);
      return path;
    } finally {
      src.close();
    }
  }

  test('loads the fixture projector with its hyper-parameters', async () => {
    const mm = await Mmproj.load(`${DIR}gemma3.mmproj.gguf`);
    try {
      assert.equal(mm.projector, 'gemma3');
      assert.equal(mm.vision.imageSize, 32);
      assert.equal(mm.vision.patchSize, 4);
      assert.equal(mm.vision.nMerge, 2); // clip.vision.projector.scale_factor (default 4)
      assert.deepEqual(mm.vision.mean, [0.5, 0.5, 0.5]);
    } finally {
      mm.free();
    }
  });

  test('an unknown projector type is refused by name', async () => {
    const path = variant('cogvlm', { set: ['clip.projector_type', 'cogvlm'] });
    await assert.rejects(Mmproj.load(path), (e: Error) => {
      assert.ok(e instanceof MmprojError);
      assert.match(e.message, /projector type 'cogvlm' is not supported \(llama-ts runs gemma3, idefics3, lfm2, .*\)/);
      for (const t of PROJECTORS) assert.ok(e.message.includes(t), t);
      return true;
    });
  });

  test('a missing key and a missing tensor are named', async () => {
    await assert.rejects(
      Mmproj.load(variant('nokey', { drop: 'clip.vision.patch_size' })),
      /missing key 'clip\.vision\.patch_size'/,
    );
    await assert.rejects(
      Mmproj.load(variant('notensor', { dropTensor: 'mm.soft_emb_norm.weight' })),
      /missing tensor 'mm\.soft_emb_norm\.weight' \(a gemma3 projector needs it\)/,
    );
    await assert.rejects(Mmproj.load(variant('notype', { drop: 'clip.projector_type' })), /'clip\.projector_type'/);
  });

  test('a text model is not a projector; a projector of another width is refused', async () => {
    await assert.rejects(Mmproj.load(`${DIR}gemma3.gguf`), /general\.architecture is 'gemma3', not 'clip'/);
    const model = await Model.load(`${DIR}gemma3.gguf`);
    try {
      const path = variant('narrow', { setU32: ['clip.vision.projection_dim', 48] });
      await assert.rejects(
        Multimodal.load(path, model),
        /outputs 48-wide embeddings \(clip\.vision\.projection_dim 48, 0 deepstack mergers\), the model .* takes 64/,
      );
    } finally {
      model.free();
    }
  });
});

describe('multimodal API without a projector', { skip: DIR ? false : missingShared('fixtures/mtmd') }, () => {
  let ctx: LlamaContext;
  before(async () => {
    ctx = await loadModel({ model: `${DIR}gemma3.gguf`, n_ctx: 256, n_threads: 1 });
  });
  after(async () => {
    await ctx?.release();
  });

  test('media needs initMultimodal; the support is none', async () => {
    assert.equal(ctx.isMultimodalEnabled(), false);
    assert.deepEqual(ctx.getMultimodalSupport(), { vision: false, audio: false });
    await assert.rejects(
      ctx.completion({ prompt: 'a <__media__>', media_paths: [`${DIR}img/gray-40x40.png`], n_predict: 1 }),
      /initMultimodal\(\) first/,
    );
    await assert.rejects(ctx.tokenize('a', [`${DIR}img/gray-40x40.png`]), /initMultimodal\(\) first/);
  });

  test('more markers than media, unreadable media and releaseMultimodal', async () => {
    await ctx.initMultimodal({ path: `${DIR}gemma3.mmproj.gguf` });
    assert.equal(ctx.isMultimodalEnabled(), true);
    await assert.rejects(
      ctx.tokenize('<__media__> and <__media__>', [`${DIR}img/gray-40x40.png`]),
      /2 media markers but 1 media/,
    );
    await assert.rejects(ctx.tokenize('x', [`${DIR}nope.png`]), /cannot open/);
    await assert.rejects(ctx.tokenize('x', [`${DIR}cases.json`]), /not an image/);
    // a data: URL reads as the file does; media without a marker go after the prompt
    const png = readFileSync(`${DIR}img/gray-40x40.png`).toString('base64');
    const a = await ctx.tokenize('Look', [`data:image/png;base64,${png}`]);
    const b = await ctx.tokenize('Look<__media__>', [`${DIR}img/gray-40x40.png`]);
    assert.deepEqual(Array.from(a.tokens), Array.from(b.tokens));
    assert.deepEqual(a.bitmap_hashes, b.bitmap_hashes);
    // a conversation with an image is not saved as a session (its file could not load back)
    await ctx.completion({ prompt: 'Look<__media__>', media_paths: [`${DIR}img/gray-40x40.png`], n_predict: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'llama-ts-mm-session-'));
    try {
      await assert.rejects(
        ctx.saveSession(join(dir, 's.bin')),
        /holds images; llama-ts does not save sessions with media/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await ctx.releaseMultimodal();
    assert.equal(ctx.isMultimodalEnabled(), false);
  });
});

describe('mtmd image preprocessing', () => {
  test('bilinear resize is corner-aligned (build 10257)', () => {
    // a 2x1 ramp to 3 pixels: the ends kept, the middle halfway (truncated)
    const img = { width: 2, height: 1, data: Uint8Array.of(0, 0, 0, 255, 101, 11) };
    const r = resize(img, 3, 1, 'bilinear', 'none');
    assert.deepEqual(Array.from(r.data), [0, 0, 0, 127, 50, 5, 255, 101, 11]);
  });

  test('fitted resize pads with black, centred (PAD_CEIL)', () => {
    const img = { width: 4, height: 2, data: new Uint8Array(24).fill(200) };
    const r = resize(img, 4, 4, 'bilinear', 'ceil');
    const rows = [0, 1, 2, 3].map((y) => r.data[y * 12]);
    assert.deepEqual(rows, [0, 200, 200, 0]);
  });

  test('normalisation as clip.cpp: planes of (x / 255 - mean) / std', () => {
    const img = { width: 1, height: 2, data: Uint8Array.of(255, 0, 51, 0, 255, 102) };
    const p = normalize(img, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]);
    assert.deepEqual(Array.from(p.data), [
      1,
      -1,
      -1,
      1,
      Math.fround(Math.fround(Math.fround(51 / 255) - 0.5) / 0.5),
      Math.fround(Math.fround(Math.fround(102 / 255) - 0.5) / 0.5),
    ]);
  });
});

describe('gemma4a projector files', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-gemma4a-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const full = join(tmp, 'tiny.gguf');
  generateMmproj({ ...MMPROJ_PRESETS['tiny-gemma4a']!.spec, seed: 5 }, full);

  /** The tiny gemma4a projector without one tensor. */
  function without(tensor: string): string {
    const src = openGGUF(full);
    try {
      const w = new GGUFWriter({ alignment: src.alignment });
      for (const [key, kv] of src.metadata) w.set(key, kv.type, kv.value);
      for (const t of src.tensors) {
        if (t.name !== tensor) w.addTensor(t.name, t.type, [...t.dims], src.readTensorData(t.name));
      }
      const path = join(tmp, `no-${tensor}.gguf`);
      w.write(path);
      return path;
    } finally {
      src.close();
    }
  }

  test('loads as an audio projector: eps 1e-6 whatever the file says, no stacking', async () => {
    const mm = await Mmproj.load(full);
    try {
      assert.equal(mm.projector, 'gemma4a');
      assert.equal(mm.hasAudio, true);
      assert.equal(mm.audio!.eps, 1e-6);
      assert.equal(mm.audio!.stackFactor, 1);
      assert.equal(mm.outputWidth, 64); // mm.a.input_projection's rows
    } finally {
      mm.free();
    }
  });

  test("a required tensor missing is named; clip.cpp's optional ones may be", async () => {
    for (const t of ['a.conv1d.1.weight', 'a.blk.1.conv_pw1.weight', 'a.blk.0.ffn_up_1.weight']) {
      await assert.rejects(
        Mmproj.load(without(t)),
        new RegExp(`missing tensor '${t.replaceAll('.', '\\.')}' \\(a gemma4a projector needs it\\)`),
      );
    }
    for (const t of ['a.conv1d.0.bias', 'a.blk.0.per_dim_scale.weight', 'a.blk.1.ln2.weight']) {
      (await Mmproj.load(without(t))).free();
    }
  });
});

describe('mmproj files with a vision and an audio encoder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mmproj-dual-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const shape = { nEmbd: 32, nLayer: 2, nHead: 4, nFf: 64, nEmbdText: 64 };
  const write = (name: string, spec: Parameters<typeof generateMmproj>[0]) => {
    const path = join(dir, `${name}.gguf`);
    generateMmproj(spec, path);
    return path;
  };

  test('clip.vision/audio.projector_type (Gemma 4) and qwen2.5o (Qwen2.5-Omni) give both parts', async () => {
    const gemma = write('gemma4', {
      projector: 'gemma4v',
      seed: 1,
      shape: { ...shape, imageSize: 64, patchSize: 4, posGrid: 64 },
      audio: { projector: 'gemma4a', shape: { ...shape, nMel: 128 } },
    });
    const omni = write('omni', {
      projector: 'qwen2.5vl_merger',
      seed: 1,
      shape: { ...shape, imageSize: 56, patchSize: 14, windowPattern: 2 },
      audio: { projector: 'qwen2a', shape: { ...shape, nMel: 128 }, omni: true },
    });
    for (const [path, v, a] of [
      [gemma, 'gemma4v', 'gemma4a'],
      [omni, 'qwen2.5vl_merger', 'qwen2a'],
    ] as const) {
      assert.deepEqual(projectorModalities(path), { vision: true, audio: true }, path);
      const parts = await Mmproj.loadParts(path);
      try {
        assert.equal(parts.vision?.projector, v);
        assert.equal(parts.audio?.projector, a);
        assert.equal(parts.vision.hasAudio, false);
        assert.equal(parts.audio.hasVision, false);
        assert.equal(parts.audio.outputWidth, 64);
      } finally {
        parts.vision?.free();
        parts.audio?.free();
      }
    }
  });

  test('a per-modality key naming the other kind of projector is refused by name', async () => {
    const path = write('swapped', {
      projector: 'gemma4v',
      seed: 1,
      shape: { ...shape, imageSize: 64, patchSize: 4, posGrid: 64 },
      audio: { projector: 'gemma4a', shape: { ...shape, nMel: 128 } },
    });
    const f = openGGUF(path);
    const w = new GGUFWriter();
    try {
      for (const [key, kv] of f.metadata) {
        w.set(key, kv.type, key === 'clip.audio.projector_type' ? 'gemma4v' : kv.value);
      }
      for (const t of f.tensors) w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t.name));
      const bad = join(dir, 'bad.gguf');
      w.write(bad);
      await assert.rejects(Mmproj.loadParts(bad), /'clip\.audio\.projector_type' is 'gemma4v', not an audio projector/);
    } finally {
      f.close();
    }
  });
});
