// Test-model generator: structure and per-tensor types against the llama.cpp-made
// fixtures, determinism, vocabularies (synthetic and copied), weight scales, the cache.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { main as cliMain } from '../src/generator/cli.js';
import {
  chooseTensorTypes,
  ensureModel,
  FILE_TYPES,
  type FileTypeName,
  type GenArch,
  generateModel,
  isFileTypeName,
  type ModelSpec,
  PRESETS,
  planTensors,
  presetSpec,
  resolveShape,
  TokenType,
} from '../src/generator/index.js';
import { canQuantize, dequantize } from '../src/ggml/quants/index.js';
import { GGMLType, typeName } from '../src/ggml/types.js';
import { type GGUFFile, openGGUF, valueToJSON } from '../src/gguf/index.js';
import { loadVocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-gen-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
const tmp = (name: string) => join(dir, `${fileNo++}-${name}.gguf`);

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function withFile<T>(path: string, fn: (f: GGUFFile) => T): T {
  const f = openGGUF(path);
  try {
    return fn(f);
  } finally {
    f.close();
  }
}

/** A spec reproducing a fixture's shape, with the fixture's own vocabulary copied. */
function specOf(f: GGUFFile, fileType: FileTypeName, seed = 1): ModelSpec {
  const arch = f.architecture as GenArch;
  const n = (k: string) => f.getNumber(`${arch}.${k}`);
  const nEmbd = n('embedding_length');
  const nHead = n('attention.head_count');
  const bert = arch === 'bert';
  return {
    arch,
    name: f.getString('general.name'),
    fileType,
    seed,
    vocab: { kind: 'copy', from: f.path },
    shape: {
      nEmbd,
      nLayer: n('block_count'),
      nHead,
      nHeadKv: n('attention.head_count_kv'),
      nFf: n('feed_forward_length'),
      nVocab: 0, // follows the copied vocabulary
      nCtxTrain: n('context_length'),
      headDim: f.getNumber(`${arch}.attention.key_length`, nEmbd / nHead),
      ...(bert
        ? { normEps: n('attention.layer_norm_epsilon'), poolingType: n('pooling_type') }
        : {
            normEps: n('attention.layer_norm_rms_epsilon'),
            ropeFreqBase: n('rope.freq_base'),
            ropeDim: n('rope.dimension_count'),
            tiedEmbeddings: f.tensor('output.weight') === undefined,
          }),
    },
  };
}

const FIXTURES = (sharedPath('fixtures') ? readdirSync(sharedPath('fixtures') as string) : [])
  .map((file) => /^rand-(llama|qwen2|qwen3|bert)-(\w+)\.gguf$/.exec(file))
  .filter((m): m is RegExpExecArray => m !== null && isFileTypeName(m[2] as string))
  .map((m) => ({ file: m[0], arch: m[1] as GenArch, fileType: m[2] as FileTypeName }));

const tensorTable = (f: GGUFFile) => f.tensors.map((t) => `${t.name} ${typeName(t.type)} [${t.dims.join(', ')}]`);

test('per-tensor types match llama-quantize in every shared fixture', {
  skip: FIXTURES.length ? false : missingShared('fixtures'),
}, () => {
  for (const { file, fileType } of FIXTURES) {
    withFile(sharedPath(`fixtures/${file}`) as string, (f) => {
      const spec = specOf(f, fileType);
      const shape = resolveShape(spec.arch, { ...spec.shape, nVocab: 1 });
      const chosen = chooseTensorTypes(
        { arch: spec.arch, nLayer: shape.nLayer, nHead: shape.nHead, nHeadKv: shape.nHeadKv },
        f.tensors,
        fileType,
      );
      const want = f.tensors.map((t) => `${t.name} ${typeName(t.type)}`);
      const got = f.tensors.map((t) => `${t.name} ${typeName(chosen.get(t.name)?.type ?? -1)}`);
      assert.deepEqual(got, want, file);
      assert.equal(f.getNumber('general.file_type'), FILE_TYPES[fileType].ftype, `${file}: general.file_type`);
    });
  }
});

// Full generation of the fixtures whose types are quick to quantize: the same tensor table
// (names, shapes, types, order) and the same metadata (keys, order, types, values).
const CHEAP = FIXTURES.filter((x) => ['F16', 'BF16', 'Q4_0', 'Q8_0'].includes(x.fileType));
test('generated models have the fixtures’ tensor tables and metadata', {
  skip: CHEAP.length ? false : missingShared('fixtures'),
}, () => {
  for (const { file, arch, fileType } of CHEAP) {
    withFile(sharedPath(`fixtures/${file}`) as string, (fix) => {
      const spec = specOf(fix, fileType);
      // The F16 BERT fixture comes straight from the converter; the others went through llama-quantize.
      if (fix.has('general.quantization_version') === false) spec.layout = 'convert';
      const out = tmp(file);
      generateModel(spec, out);
      withFile(out, (gen) => {
        assert.deepEqual(tensorTable(gen), tensorTable(fix), `${file}: tensor table`);
        // Qwen3's converter writes key/value_length (its configs give head_dim); this fixture lacks them.
        const extra = arch === 'qwen3' ? ['qwen3.attention.key_length', 'qwen3.attention.value_length'] : [];
        const keys = (f: GGUFFile) => [...f.metadata.keys()].filter((k) => !extra.includes(k));
        assert.deepEqual(keys(gen), keys(fix), `${file}: metadata keys`);
        for (const k of keys(fix)) {
          const a = fix.get(k);
          const b = gen.get(k);
          assert.equal(b?.type, a?.type, `${file}: type of ${k}`);
          assert.deepEqual(valueToJSON(b?.value ?? 0, b?.type), valueToJSON(a?.value ?? 0, a?.type), `${file}: ${k}`);
        }
      });
    });
  }
});

test('tiny presets of every architecture parse with the expected metadata and tensors', () => {
  const cases: [string, FileTypeName][] = [
    ['tiny-llama', 'F32'],
    ['tiny-llama', 'Q4_0'],
    ['tiny-qwen2', 'Q8_0'],
    ['tiny-qwen3', 'F16'],
    ['tiny-bert', 'BF16'],
    ['tiny-bert', 'Q5_1'],
  ];
  for (const [preset, ft] of cases) {
    const spec = presetSpec(preset, ft);
    const out = tmp(`${preset}-${ft}`);
    const r = generateModel(spec, out);
    withFile(out, (f) => {
      const arch = spec.arch;
      assert.equal(f.architecture, arch);
      assert.equal(f.getU32('general.file_type'), FILE_TYPES[ft].ftype);
      assert.equal(f.getU32(`${arch}.embedding_length`), spec.shape.nEmbd);
      assert.equal(f.getU32(`${arch}.block_count`), spec.shape.nLayer);
      assert.equal(f.getU32(`${arch}.attention.head_count`), spec.shape.nHead);
      assert.equal(f.getU32(`${arch}.attention.head_count_kv`), spec.shape.nHeadKv ?? spec.shape.nHead);
      assert.equal(f.getU32(`${arch}.feed_forward_length`), spec.shape.nFf);
      assert.equal(f.getStringArray('tokenizer.ggml.tokens').length, spec.shape.nVocab);
      const plan = planTensors(arch, resolveShape(arch, spec.shape), spec.shape.nVocab);
      assert.deepEqual(new Set(f.tensors.map((t) => t.name)), new Set(plan.map((t) => t.name)));
      for (const t of plan) assert.deepEqual([...(f.tensor(t.name)?.dims ?? [])], t.dims, t.name);
      assert.equal(r.tensors.length, plan.length);
      if (arch === 'qwen2') {
        assert.ok(f.tensor('blk.1.attn_v.bias'));
        assert.equal(f.tensor('output.weight'), undefined, 'tied embeddings');
      }
      if (arch === 'qwen3') {
        assert.deepEqual([...(f.tensor('blk.0.attn_q_norm.weight')?.dims ?? [])], [32]);
        assert.deepEqual([...(f.tensor('blk.0.attn_q.weight')?.dims ?? [])], [64, 128]);
        assert.equal(f.getU32('qwen3.attention.key_length'), 32);
      }
      if (arch === 'bert') {
        assert.equal(f.getBool('bert.attention.causal'), false);
        assert.equal(f.getU32('bert.pooling_type'), 1);
        assert.deepEqual([...(f.tensor('position_embd.weight')?.dims ?? [])], [64, 128]);
        assert.equal(f.tensor('token_types.weight')?.type, GGMLType.F32);
      }
      for (const t of f.tensors) if (t.dims.length === 1) assert.equal(t.type, GGMLType.F32, `${t.name} stays F32`);
    });
  }
});

test('row lengths that are not a multiple of 256 fall back as llama-quantize does', () => {
  // 64-wide rows: Q4_K → Q5_0, Q6_K (output) → Q8_0; ffn_down rows of 128 likewise.
  const plan = planTensors('llama', resolveShape('llama', presetSpec('tiny-llama', 'Q4_K_M').shape), 512);
  const types = chooseTensorTypes({ arch: 'llama', nLayer: 2, nHead: 4, nHeadKv: 2 }, plan, 'Q4_K_M');
  assert.equal(types.get('output.weight')?.type, GGMLType.Q8_0);
  assert.equal(types.get('token_embd.weight')?.type, GGMLType.Q5_0);
  assert.equal(types.get('blk.0.attn_q.weight')?.type, GGMLType.Q5_0);
  assert.equal(types.get('blk.1.attn_v.weight')?.type, GGMLType.Q8_0); // Q6_K by use_more_bits, then the fallback
  const q2 = chooseTensorTypes({ arch: 'llama', nLayer: 2, nHead: 4, nHeadKv: 2 }, plan, 'Q2_K');
  assert.equal(q2.get('blk.0.ffn_gate.weight')?.type, GGMLType.Q4_0);
  const xs = chooseTensorTypes({ arch: 'llama', nLayer: 2, nHead: 4, nHeadKv: 2 }, plan, 'IQ4_XS');
  assert.equal(xs.get('blk.0.ffn_gate.weight')?.type, GGMLType.IQ4_NL);
});

/** Per-layer types of the preset's blocks for `fileType`, as "tensor: types by layer". */
function presetTypes(preset: string, fileType: FileTypeName): Map<string, string[]> {
  const spec = presetSpec(preset, fileType);
  const shape = resolveShape(spec.arch, spec.shape);
  const types = chooseTensorTypes(
    { arch: spec.arch, nLayer: shape.nLayer, nHead: shape.nHead, nHeadKv: shape.nHeadKv },
    planTensors(spec.arch, shape, shape.nVocab),
    fileType,
  );
  const out = new Map<string, string[]>();
  for (const [name, t] of types) {
    const m = /^blk\.(\d+)\.(.*)$/.exec(name);
    const key = m ? (m[2] as string) : name;
    const list = out.get(key) ?? [];
    list[m ? Number(m[1]) : 0] = typeName(t.type);
    out.set(key, list);
  }
  return out;
}

test('Qwen2.5-0.5B preset: real shape, llama-quantize types with the 896-column fallbacks', () => {
  const spec = presetSpec('qwen2.5-0.5b', 'Q4_K_M');
  const plan = planTensors('qwen2', resolveShape('qwen2', spec.shape), 151936);
  const params = plan.reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
  assert.equal(params, 494_032_768); // Qwen's model card: 0.49B
  assert.equal(
    plan.find((t) => t.name === 'output.weight'),
    undefined,
  );

  // Layers where use_more_bits(i, 24) holds.
  const more = new Set([0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23]);
  const km = presetTypes('qwen2.5-0.5b', 'Q4_K_M');
  assert.deepEqual(km.get('token_embd.weight'), ['Q8_0']); // tied: output rule, Q6_K needs 256 | 896
  for (const k of ['attn_q.weight', 'attn_k.weight', 'attn_output.weight', 'ffn_gate.weight', 'ffn_up.weight']) {
    assert.deepEqual(km.get(k), Array(24).fill('Q5_0'), k);
  }
  const layers = [...Array(24).keys()];
  assert.deepEqual(
    km.get('attn_v.weight'),
    layers.map((i) => (more.has(i) ? 'Q8_0' : 'Q5_0')),
  );
  // ffn_down rows are 4864 = 19 x 256 long: K-quants fit.
  assert.deepEqual(
    km.get('ffn_down.weight'),
    layers.map((i) => (more.has(i) ? 'Q6_K' : 'Q4_K')),
  );
  assert.deepEqual(km.get('attn_q.bias'), Array(24).fill('F32'));

  const q40 = presetTypes('qwen2.5-0.5b', 'Q4_0');
  assert.deepEqual(q40.get('token_embd.weight'), ['Q8_0']);
  assert.deepEqual(q40.get('attn_v.weight'), Array(24).fill('Q4_0'));
  const q80 = presetTypes('qwen2.5-0.5b', 'Q8_0');
  assert.deepEqual(q80.get('token_embd.weight'), ['Q8_0']);
});

test('TinyLlama-1.1B preset: real shape and the Q4_K_M / Q2_K / IQ4_NL mixes', () => {
  const spec = presetSpec('tinyllama-1.1b', 'Q4_K_M');
  const plan = planTensors('llama', resolveShape('llama', spec.shape), 32000);
  assert.equal(
    plan.reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0),
    1_100_048_384,
  );
  const more = new Set([0, 1, 4, 7, 10, 13, 16, 19, 20, 21]); // use_more_bits(i, 22)
  const layers = [...Array(22).keys()];
  const km = presetTypes('tinyllama-1.1b', 'Q4_K_M');
  assert.deepEqual(km.get('output.weight'), ['Q6_K']);
  assert.deepEqual(km.get('token_embd.weight'), ['Q4_K']);
  assert.deepEqual(
    km.get('attn_v.weight'),
    layers.map((i) => (more.has(i) ? 'Q6_K' : 'Q4_K')),
  );
  assert.deepEqual(
    km.get('ffn_down.weight'),
    layers.map((i) => (more.has(i) ? 'Q6_K' : 'Q4_K')),
  );
  // GQA 8: attn_v gets Q4_K in Q2_K files and Q5_K in IQ4_NL files.
  assert.deepEqual(presetTypes('tinyllama-1.1b', 'Q2_K').get('attn_v.weight'), Array(22).fill('Q4_K'));
  const nl = presetTypes('tinyllama-1.1b', 'IQ4_NL');
  assert.deepEqual(nl.get('attn_v.weight'), Array(22).fill('Q5_K'));
  assert.deepEqual(
    nl.get('ffn_down.weight'),
    layers.map((i) => (i < 2 ? 'Q5_K' : 'IQ4_NL')),
  );
});

test('same seed, same bytes; another seed, other bytes; the same weights in every file type', () => {
  const spec = presetSpec('tiny-llama', 'Q8_0');
  const a = tmp('a');
  const b = tmp('b');
  const c = tmp('c');
  generateModel(spec, a);
  generateModel(spec, b);
  generateModel({ ...spec, seed: 2 }, c);
  assert.equal(sha256(a), sha256(b));
  assert.notEqual(sha256(a), sha256(c));

  // Pinned: a change here changes every cached model, so bump GENERATOR_VERSION with it.
  const f32 = tmp('f32');
  generateModel(presetSpec('tiny-llama', 'F32'), f32);
  assert.equal(sha256(f32), '67e3cf0e9a1981df08b56a8b9e513589cba67b680e9d649a0824de87e02c7cd3');

  // Values are seeded by tensor name: the Q8_0 file holds the F32 file's weights, quantized.
  withFile(f32, (ff) =>
    withFile(a, (fq) => {
      const name = 'blk.1.ffn_down.weight';
      const ref = new Float32Array(ff.readTensorData(name).slice().buffer);
      const got = new Float32Array(ref.length);
      dequantize(GGMLType.Q8_0, fq.readTensorData(name), got, ref.length);
      let err = 0;
      let norm = 0;
      for (let i = 0; i < ref.length; i++) {
        err += ((got[i] as number) - (ref[i] as number)) ** 2;
        norm += (ref[i] as number) ** 2;
      }
      assert.ok(err / norm < 1e-4, `Q8_0 vs F32 relative error ${err / norm}`);
    }),
  );
});

test('worker threads write the same bytes as the calling thread', () => {
  const spec = presetSpec('tiny-qwen2', 'Q4_0');
  spec.shape = { ...spec.shape, nEmbd: 256, nFf: 512, nVocab: 6000 }; // token_embd: 1.5M elements, on the workers
  const a = tmp('inline');
  const b = tmp('workers');
  generateModel(spec, a, { threads: 0 });
  generateModel(spec, b, { threads: 2 });
  assert.equal(sha256(a), sha256(b));
});

test('weights have the intended scales', () => {
  const out = tmp('scales');
  generateModel({ ...presetSpec('tiny-llama', 'F32'), seed: 7 }, out);
  withFile(out, (f) => {
    const stats = (name: string) => {
      const v = new Float32Array(f.readTensorData(name).slice().buffer);
      let s = 0;
      let s2 = 0;
      for (const x of v) {
        assert.ok(Number.isFinite(x));
        s += x;
        s2 += x * x;
      }
      const mean = s / v.length;
      return { mean, std: Math.sqrt(s2 / v.length - mean * mean) };
    };
    const q = stats('blk.0.attn_q.weight'); // 64 x 64: std 1/8
    assert.ok(Math.abs(q.mean) < 0.01 && Math.abs(q.std - 0.125) < 0.01, JSON.stringify(q));
    const down = stats('blk.0.ffn_down.weight'); // fan-in 128
    assert.ok(Math.abs(down.std - 1 / Math.sqrt(128)) < 0.005, JSON.stringify(down));
    const norm = stats('blk.0.attn_norm.weight');
    assert.ok(Math.abs(norm.mean - 1) < 0.05 && norm.std < 0.2, JSON.stringify(norm));
    const emb = stats('token_embd.weight');
    assert.ok(Math.abs(emb.std - 1) < 0.02, JSON.stringify(emb));
  });
});

const STORIES = 'models/stories260K.gguf';
test('vocabulary copied from stories260K', { skip: sharedPath(STORIES) ? false : missingShared(STORIES) }, () => {
  const src = sharedPath(STORIES) as string;
  const out = tmp('copy');
  const spec = presetSpec('tiny-llama', 'Q8_0', { vocab: { kind: 'copy', from: src } });
  spec.shape.nVocab = 99; // ignored: the copy decides
  const r = generateModel(spec, out);
  assert.equal(r.nVocab, 512);
  withFile(src, (s) =>
    withFile(out, (g) => {
      const tk = [...s.metadata.keys()].filter((k) => k.startsWith('tokenizer.'));
      assert.deepEqual(
        [...g.metadata.keys()].filter((k) => k.startsWith('tokenizer.')),
        tk,
      );
      for (const k of tk) assert.deepEqual(valueToJSON(g.get(k)?.value ?? 0), valueToJSON(s.get(k)?.value ?? 0), k);
      assert.deepEqual([...(g.tensor('token_embd.weight')?.dims ?? [])], [64, 512]);
      assert.deepEqual([...(g.tensor('output.weight')?.dims ?? [])], [64, 512]);
    }),
  );
});

test('synthetic vocabularies are well formed', () => {
  for (const [arch, kind, size] of [
    ['llama', 'synthetic-spm', 700],
    ['qwen2', 'synthetic-bpe', 900],
    ['bert', 'synthetic-wpm', 600],
  ] as const) {
    const out = tmp(kind);
    generateModel(
      {
        arch,
        fileType: 'F32',
        seed: 1,
        shape: { nEmbd: 32, nLayer: 1, nHead: 2, nFf: 64, nVocab: size, nCtxTrain: 64 },
        vocab: { kind, size },
      },
      out,
    );
    withFile(out, (f) => {
      const tokens = f.getStringArray('tokenizer.ggml.tokens');
      assert.equal(tokens.length, size, kind);
      assert.equal(new Set(tokens).size, size, `${kind}: tokens are unique`);
      const types = f.getArray('tokenizer.ggml.token_type').items as Int32Array;
      assert.equal(types.length, size);
      assert.deepEqual([...(f.tensor('token_embd.weight')?.dims ?? [])], [32, size]);
      const special = (key: string) => {
        const id = f.getU32(`tokenizer.ggml.${key}_token_id`);
        assert.ok(id < size, `${kind}: ${key} id ${id}`);
        return tokens[id];
      };
      if (kind === 'synthetic-spm') {
        assert.equal(f.getString('tokenizer.ggml.model'), 'llama');
        assert.equal((f.getArray('tokenizer.ggml.scores').items as Float32Array).length, size);
        assert.deepEqual([special('unknown'), special('bos'), special('eos')], ['<unk>', '<s>', '</s>']);
        assert.equal(tokens[3 + 0x41], '<0x41>');
        assert.equal(types[3 + 0x41], TokenType.BYTE);
      } else if (kind === 'synthetic-bpe') {
        assert.equal(f.getString('tokenizer.ggml.model'), 'gpt2');
        assert.equal(f.getString('tokenizer.ggml.pre'), 'qwen2');
        assert.equal(special('eos'), '<|endoftext|>');
        const set = new Set(tokens);
        const merges = f.getStringArray('tokenizer.ggml.merges');
        assert.ok(merges.length > 500);
        for (const m of merges) {
          const [l, r] = m.split(' ') as [string, string];
          assert.ok(set.has(l) && set.has(r) && set.has(l + r), `merge '${m}'`);
        }
      } else {
        assert.equal(f.getString('tokenizer.ggml.model'), 'bert');
        assert.deepEqual(
          [special('unknown'), special('cls'), special('seperator'), special('padding'), special('mask')],
          ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]'],
        );
        assert.equal(f.getU32('tokenizer.ggml.token_type_count'), 2);
        assert.ok(tokens.includes('\u2581th') && tokens.includes('th'));
      }
      // llama-ts's own tokenizer accepts it and round-trips text.
      const vocab = loadVocab(out);
      const text = 'Hello world, the quick brown fox! 123';
      const ids = vocab.encode(text);
      assert.ok(ids.length > 0 && ids.every((id) => id >= 0 && id < size));
      const back = vocab.decode(ids);
      // SPM decodes with its word-start space; WordPiece lowercases.
      assert.equal(back.trim(), kind === 'synthetic-wpm' ? text.toLowerCase() : text);
    });
  }
});

test('ensureModel generates once into the cache, atomically', () => {
  const cache = join(dir, 'cache');
  const p1 = ensureModel('tiny-bert', 'Q8_0', cache);
  const m1 = statSync(p1).mtimeMs;
  const p2 = ensureModel('tiny-bert', 'Q8_0', cache);
  assert.equal(p2, p1);
  assert.equal(statSync(p2).mtimeMs, m1, 'not regenerated');
  const p3 = ensureModel('tiny-bert', 'Q8_0', cache, { seed: 5 });
  assert.notEqual(p3, p1);
  assert.deepEqual(
    readdirSync(cache).filter((n) => n.includes('.tmp')),
    [],
  );
  withFile(p1, (f) => assert.equal(f.architecture, 'bert'));
});

test('gen-model CLI', () => {
  const out = tmp('cli');
  const write = process.stdout.write;
  process.stdout.write = () => true;
  try {
    assert.equal(cliMain(['--preset', 'tiny-qwen3', '--type', 'q4_0', '-o', out, '--seed', '3', '--quiet']), 0);
  } finally {
    process.stdout.write = write;
  }
  withFile(out, (f) => assert.equal(f.getU32('general.file_type'), FILE_TYPES.Q4_0.ftype));
});

test('head counts and other shape fields override a preset (spec, cache, gen-model flags)', () => {
  const spec = presetSpec('tiny-llama', 'F32', { shape: { nHead: 8, nHeadKv: 1 } });
  assert.equal(spec.shape.nHead, 8);
  assert.equal(spec.shape.nHeadKv, 1);
  assert.equal(spec.shape.nEmbd, PRESETS['tiny-llama']!.shape.nEmbd, 'the rest is the preset’s');
  assert.throws(
    () => presetSpec('tiny-llama', 'F32', { shape: { nHead: 8, nHeadKv: 3 } }),
    /nHead 8 is not a multiple of nHeadKv 3/,
  );
  // a different shape is a different cached file
  const cache = join(dir, 'cache-heads');
  const mqa = ensureModel('tiny-llama', 'F32', cache, { shape: { nHead: 8, nHeadKv: 1 } });
  assert.notEqual(mqa, ensureModel('tiny-llama', 'F32', cache));
  withFile(mqa, (f) => {
    assert.equal(f.getU32('llama.attention.head_count'), 8);
    assert.equal(f.getU32('llama.attention.head_count_kv'), 1);
    assert.deepEqual(f.tensor('blk.0.attn_k.weight')?.dims, [64, 8]);
  });

  const out = tmp('cli-heads');
  const [stdout, stderr] = [process.stdout.write, process.stderr.write];
  const err: string[] = [];
  process.stdout.write = () => true;
  process.stderr.write = ((s: string) => err.push(s) > 0) as typeof process.stderr.write;
  try {
    const args = ['--preset', 'tiny-llama', '--type', 'F32', '-o', out, '--quiet'];
    assert.equal(cliMain([...args, '--n-embd', '128', '--n-head', '16', '--n-head-kv', '1', '--layers', '1']), 0);
    withFile(out, (f) => {
      assert.equal(f.getU32('llama.embedding_length'), 128);
      assert.equal(f.getU32('llama.attention.head_count'), 16);
      assert.equal(f.getU32('llama.attention.head_count_kv'), 1);
      assert.equal(f.getU32('llama.block_count'), 1);
    });
    assert.equal(cliMain([...args, '--n-head-kv', '0']), 2);
    assert.match(err.join(''), /--n-head-kv 0 is not a positive integer/);
    assert.equal(cliMain([...args, '--n-head', '5']), 2);
    assert.match(err.join(''), /headDim \(nEmbd \/ nHead unless given\) = 12.8 is not a positive integer/);
  } finally {
    process.stdout.write = stdout;
    process.stderr.write = stderr;
  }
});

test('K-quant file types generate when their quantizers are registered', {
  skip: canQuantize(GGMLType.Q4_K) && canQuantize(GGMLType.Q6_K) ? false : 'K-quant quantizers not registered',
}, () => {
  const spec = presetSpec('tiny-llama', 'Q4_K_M');
  spec.shape = { ...spec.shape, nEmbd: 256, nFf: 256, nVocab: 300 };
  const out = tmp('k');
  generateModel(spec, out);
  withFile(out, (f) => {
    assert.equal(f.tensor('output.weight')?.type, GGMLType.Q6_K);
    assert.equal(f.tensor('blk.0.attn_q.weight')?.type, GGMLType.Q4_K);
    assert.equal(f.tensor('blk.1.ffn_down.weight')?.type, GGMLType.Q6_K);
  });
});
