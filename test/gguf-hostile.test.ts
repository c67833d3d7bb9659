// Hostile and corrupt files: each must end in a GGUFError naming the file, the byte
// offset and the problem; never another exception, a hang or a huge allocation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GGMLType } from '../src/ggml/types.js';
import { type GGUFArray, GGUFError, GGUFValueType, GGUFWriter, parseGGUF } from '../src/gguf/index.js';
import { sampleBytes } from './helpers/gguf-samples.js';

const good = sampleBytes();
const parsed = parseGGUF(good);
const NAME = 'bad.gguf';

function patched(edit: (dv: DataView, bytes: Uint8Array) => void, src = good): Uint8Array {
  const bytes = src.slice();
  edit(new DataView(bytes.buffer), bytes);
  return bytes;
}

function rejects(bytes: Uint8Array, message: RegExp, offset?: number): void {
  assert.throws(
    () => parseGGUF(bytes, NAME),
    (e: unknown) => {
      assert.ok(e instanceof GGUFError, `expected GGUFError, got ${String(e)}`);
      assert.equal(e.file, NAME);
      assert.match(e.message, message);
      if (offset !== undefined) assert.equal(e.offset, offset, e.message);
      assert.ok(e.message.startsWith(`${NAME}: at byte `), e.message);
      return true;
    },
  );
}

const kvOffset = (key: string) => parsed.get(key)!.offset;
const tensor = (name: string) => parsed.tensor(name)!;
/** Offset of the fields after a tensor's name in its info record. */
const afterName = (name: string) => tensor(name).infoOffset + 8 + name.length;

describe('hostile GGUF files', () => {
  test('bad magic', () => {
    rejects(
      patched((dv) => dv.setUint32(0, 0x4c4d4747, true)),
      /not a GGUF file: magic is 'GGML', expected 'GGUF'/,
      0,
    );
    rejects(
      patched((dv) => dv.setUint32(0, 0xdeadbeef, true)),
      /magic is 0xdeadbeef/,
      0,
    );
  });

  test('unsupported versions', () => {
    rejects(
      patched((dv) => dv.setUint32(4, 1, true)),
      /unsupported GGUF version 1 \(supported: 2, 3\)/,
      4,
    );
    rejects(
      patched((dv) => dv.setUint32(4, 4, true)),
      /unsupported GGUF version 4/,
      4,
    );
    rejects(
      patched((dv) => dv.setUint32(4, 3, false)),
      /big-endian GGUF files are not supported/,
      4,
    );
    // Version 2 has the same layout and is read.
    assert.equal(parseGGUF(patched((dv) => dv.setUint32(4, 2, true))).version, 2);
  });

  test('truncation at every byte of the header and inside tensor data', () => {
    for (let n = 0; n < parsed.dataOffset; n++) {
      assert.throws(() => parseGGUF(good.subarray(0, n), NAME), GGUFError, `truncated at ${n}`);
    }
    rejects(good.subarray(0, good.length - 30), /tensor 'c\.bias' data .* extends past the end of the file/);
  });

  test('counts larger than the file', () => {
    rejects(
      patched((dv) => dv.setBigUint64(8, 1n << 60n, true)),
      /tensor count is 1152921504606846976, but only \d+ bytes remain/,
      8,
    );
    rejects(
      patched((dv) => dv.setBigUint64(16, 0xffffffffffffffffn, true)),
      /metadata key-value count is 18446744073709551615/,
      16,
    );
  });

  test('string and array lengths larger than the file', () => {
    const strAt = kvOffset('test.string');
    rejects(
      patched((dv) => dv.setBigUint64(strAt, 1n << 40n, true)),
      /length of string value is 1099511627776, but only/,
      strAt,
    );
    // The key itself: its length field sits before the key bytes.
    const keyAt = kvOffset('test.u8') - 4 - 8 - 'test.u8'.length;
    rejects(
      patched((dv) => dv.setBigUint64(keyAt, 1n << 62n, true)),
      /length of key of metadata entry 1/,
      keyAt,
    );
    const arrAt = kvOffset('test.arr_i32');
    rejects(
      patched((dv) => dv.setBigUint64(arrAt + 4, 1n << 33n, true)),
      /array length is 8589934592, but only \d+ bytes remain \(at least 4 per item\)/,
      arrAt + 4,
    );
    const strArr = kvOffset('test.arr_str');
    rejects(
      patched((dv) => dv.setBigUint64(strArr + 4, 0x7fffffffffffffffn, true)),
      /array length is 9223372036854775807/,
      strArr + 4,
    );
  });

  test('unknown value types, bad bools, deep nesting', () => {
    const u8At = kvOffset('test.u8');
    rejects(
      patched((dv) => dv.setUint32(u8At - 4, 13, true)),
      /metadata key 'test\.u8' has unknown value type 13/,
      u8At - 4,
    );
    const arrAt = kvOffset('test.arr_f32');
    rejects(
      patched((dv) => dv.setUint32(arrAt, 99, true)),
      /unknown array item type 99/,
      arrAt,
    );
    rejects(
      patched((dv) => dv.setUint8(kvOffset('test.bool'), 7)),
      /bool value is 7, expected 0 or 1/,
    );
    // 100 nested arrays, each of one item: a small file asking for deep recursion.
    const w = new GGUFWriter();
    let nested: GGUFArray = { itemType: GGUFValueType.UINT8, items: new Uint8Array([1]) };
    for (let i = 0; i < 100; i++) nested = { itemType: GGUFValueType.ARRAY, items: [nested] };
    w.set('deep', GGUFValueType.ARRAY, nested);
    rejects(w.toBytes(), /arrays nested deeper than 16/);
  });

  test('duplicate keys and tensor names', () => {
    const w = new GGUFWriter();
    w.setU32('a', 1);
    w.setU32('b', 2);
    const bytes = w.toBytes();
    // Rename key 'b' to 'a'.
    const at = bytes.lastIndexOf(0x62);
    rejects(
      patched((_, b) => {
        b[at] = 0x61;
      }, bytes),
      /duplicate metadata key 'a'/,
    );
    const at2 = tensor('b.weight').infoOffset + 8;
    rejects(
      patched((_, b) => {
        b[at2] = 0x61; // 'b.weight' -> 'a.weight'
      }),
      /duplicate tensor name 'a\.weight'/,
      tensor('b.weight').infoOffset,
    );
  });

  test('tensor infos: dims, types, overflow', () => {
    const a = afterName('a.weight');
    rejects(
      patched((dv) => dv.setUint32(a, 5, true)),
      /tensor 'a\.weight' has 5 dimensions, at most 4 allowed/,
      a,
    );
    rejects(
      patched((dv) => dv.setBigInt64(a + 4, -64n, true)),
      /tensor 'a\.weight' has negative dimension 0: -64/,
      a + 4,
    );
    rejects(
      patched((dv) => {
        dv.setBigInt64(a + 4, 1n << 40n, true);
        dv.setBigInt64(a + 12, 1n << 40n, true);
      }),
      /tensor 'a\.weight' element count overflows int64 \(dimension 1 is 1099511627776\)/,
      a + 12,
    );
    rejects(
      patched((dv) => {
        dv.setBigInt64(a + 4, 1n << 31n, true);
        dv.setBigInt64(a + 12, 1n << 31n, true);
      }),
      /tensor 'a\.weight' is too large|extends past the end/,
    );
    rejects(
      patched((dv) => dv.setUint32(a + 20, 99, true)),
      /tensor 'a\.weight' has unknown type id 99, which is not a ggml type this reader knows/,
      a + 20,
    );
    rejects(
      patched((dv) => dv.setUint32(a + 20, 31, true)),
      /has Q4_0_4_4 \(removed from ggml/,
    );
    const b = afterName('b.weight');
    rejects(
      patched((dv) => dv.setBigInt64(b + 4, 48n, true)),
      /tensor 'b\.weight' of type Q8_0: row length 48 is not a multiple of the block size 32/,
    );
  });

  test('tensor data placement: misaligned, overlapping, past the end', () => {
    const offsetField = (name: string) => afterName(name) + 4 + 8 * tensor(name).dims.length + 4;
    rejects(
      patched((dv) => dv.setBigUint64(offsetField('b.weight'), 770n, true)),
      /tensor 'b\.weight' data offset 770 is not a multiple of the alignment 32/,
      tensor('b.weight').infoOffset,
    );
    rejects(
      patched((dv) => dv.setBigUint64(offsetField('b.weight'), 736n, true)),
      /tensor 'b\.weight' \(data offset 736\) overlaps tensor 'a\.weight' \(data offset 0, 768 bytes\)/,
    );
    rejects(
      patched((dv) => dv.setBigUint64(offsetField('c.bias'), 1n << 50n, true)),
      /tensor 'c\.bias' data \(10 bytes at file offset \d+\) extends past the end of the file/,
    );
    rejects(
      patched((dv) => dv.setBigUint64(offsetField('c.bias'), 0xffffffffffffffe0n, true)),
      /data offset 18446744073709551584 is out of range/,
    );
  });

  test('general.alignment must be a power-of-two UINT32', () => {
    const w = new GGUFWriter();
    w.set('general.alignment', GGUFValueType.UINT32, 48);
    w.addTensor('t', GGMLType.F32, [4], new Uint8Array(16));
    rejects(w.toBytes(), /general\.alignment is 48, which is not a power of two/);
    const w2 = new GGUFWriter();
    w2.set('general.alignment', GGUFValueType.UINT64, 64n);
    rejects(w2.toBytes(), /general\.alignment has type UINT64, expected UINT32/);
  });

  test('long tensor names are rejected as ggml rejects them', () => {
    const w = new GGUFWriter();
    w.addTensor('x'.repeat(63), GGMLType.F32, [1], new Uint8Array(4));
    const bytes = w.toBytes();
    assert.equal(parseGGUF(bytes).tensors[0]!.name.length, 63);
    // Grow the name in place to 64 bytes by claiming one more byte (the type's first byte).
    const at = 24;
    rejects(
      patched((dv) => dv.setBigUint64(at, 64n, true), bytes),
      /is 64 bytes, the limit is 63/,
      at,
    );
  });
});
