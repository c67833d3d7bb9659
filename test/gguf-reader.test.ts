import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { GGMLType } from '../src/ggml/types.js';
import {
  type GGUFArray,
  GGUFError,
  GGUFValueType,
  GGUFWriter,
  isArrayValue,
  openGGUF,
  parseGGUF,
} from '../src/gguf/index.js';
import { sampleBytes, sampleWriter } from './helpers/gguf-samples.js';
import { missingShared, sharedPath } from './helpers/shared.js';

describe('GGUF reader on our own sample', () => {
  const f = parseGGUF(sampleBytes(), 'sample.gguf');

  test('scalar values of every type', () => {
    assert.equal(f.version, 3);
    assert.equal(f.getString('general.architecture'), 'llama');
    assert.equal(f.getInt('test.u8'), 200);
    assert.equal(f.getInt('test.i8'), -100);
    assert.equal(f.getInt('test.u16'), 60000);
    assert.equal(f.getInt('test.i16'), -30000);
    assert.equal(f.getU32('test.u32'), 4000000000);
    assert.equal(f.getI32('test.i32'), -2000000000);
    assert.equal(f.getF32('test.f32'), Math.fround(0.1));
    assert.equal(f.getBool('test.bool'), true);
    assert.equal(f.getString('test.string'), 'héllo ▁wörld 🦙');
    assert.equal(f.getU64('test.u64'), 18446744073709551615n);
    assert.equal(f.get('test.i64')?.value, -9223372036854775808n);
    assert.equal(f.getNumber('test.f64'), Math.PI);
  });

  test('arrays, including arrays of strings and of arrays', () => {
    assert.deepEqual([...(f.getArray('test.arr_f32').items as Float32Array)], [1.5, -2.25, 3]);
    assert.ok(f.getArray('test.arr_i32').items instanceof Int32Array);
    assert.deepEqual(f.getArray('test.arr_bool').items, [true, false, true]);
    assert.deepEqual(f.getStringArray('test.arr_str'), ['a', '', '\u2581b', 'ü']);
    const nested = f.getArray('test.arr_arr');
    assert.equal(nested.itemType, GGUFValueType.ARRAY);
    const [a, b, c] = nested.items as GGUFArray[];
    assert.deepEqual([...(a!.items as Uint8Array)], [1, 2]);
    assert.deepEqual(b!.items, ['x', 'yz']);
    const inner = (c!.items as GGUFArray[])[0]!;
    assert.deepEqual([...(inner.items as BigInt64Array)], [-1n]);
    assert.deepEqual([...(f.getArray('test.arr_u64').items as BigUint64Array)], [0n, 1n << 63n]);
    assert.equal(f.getArray('test.arr_empty').items.length, 0);
  });

  test('missing and mistyped keys give clear errors; fallbacks apply only when missing', () => {
    assert.throws(() => f.getU32('llama.block_count'), {
      name: 'GGUFError',
      message: "sample.gguf: missing metadata key 'llama.block_count'",
    });
    assert.throws(
      () => f.getU32('test.string'),
      (e: unknown) => {
        assert.ok(e instanceof GGUFError);
        assert.match(
          e.message,
          /^sample\.gguf: at byte \d+: metadata key 'test\.string' has type STRING, expected UINT32$/,
        );
        assert.equal(e.offset, f.get('test.string')!.offset);
        return true;
      },
    );
    assert.throws(() => f.getStringArray('test.arr_f32'), /has type ARRAY of FLOAT32, expected ARRAY of STRING/);
    assert.equal(f.getU32('nope', 7), 7);
    assert.throws(() => f.getU32('test.i32', 7), /expected UINT32/);
    assert.throws(() => f.getInt('test.f32'), /expected an integer/);
  });

  test('tensor table and data', () => {
    assert.deepEqual(
      f.tensors.map((t) => [t.name, t.type, t.dims, t.nBytes, t.offset]),
      [
        ['a.weight', GGMLType.F32, [64, 3], 768, 0],
        ['b.weight', GGMLType.Q8_0, [64, 2], 136, 768],
        ['c.bias', GGMLType.F16, [5], 10, 928],
      ],
    );
    assert.equal(f.dataOffset % 32, 0);
    const a = f.readTensorData('a.weight');
    const vals = new Float32Array(a.buffer, a.byteOffset, 192);
    assert.equal(vals[0], -7);
    assert.equal(vals[191], 191 * 0.5 - 7);
    // A sub-range read lands in the caller's buffer.
    const part = new Uint8Array(8);
    f.readTensorData('a.weight', part, 4);
    assert.deepEqual(new Float32Array(part.buffer), new Float32Array([-6.5, -6]));
    assert.throws(() => f.readTensorData('a.weight', new Uint8Array(8), 764), RangeError);
    assert.throws(() => f.readTensorData('zzz'), /no tensor named 'zzz'/);
  });

  test('unsupported tensor types are named at load', () => {
    const w = new GGUFWriter();
    w.setString('general.architecture', 'llama');
    w.addTensor('blk.0.attn_q.weight', GGMLType.F64, [256, 2], new Uint8Array(4096));
    w.addTensor('blk.0.attn_k.weight', GGMLType.IQ2_XXS, [256, 2], new Uint8Array(132));
    w.addTensor('blk.0.ffn_up_exps.weight', GGMLType.MXFP4, [256, 2], new Uint8Array(272));
    const g = parseGGUF(w.toBytes(), 'f64.gguf');
    assert.throws(
      () => g.assertSupportedType('blk.0.attn_q.weight'),
      /tensor blk\.0\.attn_q\.weight has type F64, which llama-ts does not support yet/,
    );
    g.assertSupportedType('blk.0.attn_k.weight');
    g.assertSupportedType('blk.0.ffn_up_exps.weight');
  });

  test('custom alignment is honoured and written as general.alignment', () => {
    const g = parseGGUF(sampleBytes(64));
    assert.equal(g.alignment, 64);
    assert.equal(g.getU32('general.alignment'), 64);
    assert.equal(g.dataOffset % 64, 0);
    assert.deepEqual(
      g.tensors.map((t) => t.offset),
      [0, 768, 960],
    );
  });

  test('write -> read -> write is bit-exact', () => {
    const bytes = sampleBytes();
    const again = GGUFWriter.fromFile(parseGGUF(bytes)).toBytes();
    assert.deepEqual(again, bytes);
  });

  test('async tensor reads from a file', async (t) => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/llama-ts-`);
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = `${dir}/s.gguf`;
    sampleWriter().write(path);
    assert.deepEqual(readFileSync(path), Buffer.from(sampleBytes()));
    const g = openGGUF(path);
    const data = await g.readTensorDataAsync('c.bias');
    assert.deepEqual([...data], new Array(10).fill(0x3c));
    g.close();
    writeFileSync(`${dir}/empty.gguf`, '');
    assert.throws(
      () => openGGUF(`${dir}/empty.gguf`),
      /empty\.gguf: at byte 0: file truncated: magic needs 4 bytes, 0 left/,
    );
    assert.throws(() => openGGUF(`${dir}/missing.gguf`), /missing\.gguf: cannot open/);
  });
});

describe('GGUF files in ../shared', () => {
  const dirs = ['models', 'fixtures', 'vocab'];
  const root = sharedPath('');
  test('every file parses, and rewriting it reproduces its bytes', { skip: root ? false : missingShared('') }, () => {
    let files = 0;
    for (const d of dirs) {
      for (const name of readdirSync(`${root}${d}`).filter((n) => n.endsWith('.gguf'))) {
        const path = `${root}${d}/${name}`;
        const f = openGGUF(path);
        assert.ok(f.getString('general.architecture').length > 0, path);
        const orig = readFileSync(path);
        const out = GGUFWriter.fromFile(f).toBytes();
        f.close();
        if (f.tensors.length === 0 && out.length > orig.length) {
          // Older writers of vocab-only files left the header unpadded; current ggml pads it.
          assert.ok(out.length - orig.length < f.alignment, path);
          assert.ok(
            out.subarray(orig.length).every((b) => b === 0),
            path,
          );
          assert.ok(Buffer.from(out.subarray(0, orig.length)).equals(orig), path);
        } else {
          assert.ok(Buffer.from(out).equals(orig), `${path}: rewritten bytes differ`);
        }
        files++;
      }
    }
    assert.ok(files >= 35, `only ${files} files`);
  });

  const stories = sharedPath('models/stories260K.gguf');
  test('stories260K metadata', { skip: stories ? false : missingShared('models/stories260K.gguf') }, () => {
    const f = openGGUF(stories!);
    assert.equal(f.architecture, 'llama');
    assert.equal(f.getU32('llama.embedding_length'), 64);
    assert.equal(f.getU32('llama.block_count'), 5);
    assert.equal(f.getU32('llama.attention.head_count'), 8);
    assert.equal(f.getU32('llama.attention.head_count_kv'), 4);
    assert.equal(f.getStringArray('tokenizer.ggml.tokens').length, 512);
    const scores = f.getArray('tokenizer.ggml.scores');
    assert.ok(isArrayValue(scores) && scores.items instanceof Float32Array);
    assert.equal(f.tensors.length, 48);
    f.close();
  });
});
