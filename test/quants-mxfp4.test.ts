// MXFP4 against ggml: hard blocks (zeros, outliers, ties, subnormal and huge scales,
// infinities, NaN) quantized and dequantized to ggml's exact bytes and bits, and the
// shared gpt-oss fixture's MXFP4 experts reproduced from its F32 twin.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dequantize, quantize } from '../src/ggml/quants/index.js';
import { e8m0Half, KVALUES_MXFP4 } from '../src/ggml/quants/mxfp4.js';
import { GGMLType, traitsOf } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import { MXFP4_GGML_VECTORS } from './helpers/mxfp4-vectors.js';
import { missingShared, sharedPath } from './helpers/shared.js';

function bitsToF32(hex: string): Float32Array {
  const u = new Uint32Array(hex.length / 8);
  for (let i = 0; i < u.length; i++) u[i] = Number.parseInt(hex.slice(i * 8, i * 8 + 8), 16);
  return new Float32Array(u.buffer);
}

const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex');

test('MXFP4: 32 elements in 17 bytes, readable and writable', () => {
  const tr = traitsOf(GGMLType.MXFP4);
  assert.equal(tr.blockSize, 32);
  assert.equal(tr.typeSize, 17);
  assert.ok(tr.supported);
});

test('MXFP4: quantize reproduces ggml bytes on hard blocks', () => {
  for (const v of MXFP4_GGML_VECTORS) {
    const x = bitsToF32(v.input);
    const out = new Uint8Array(17);
    quantize(GGMLType.MXFP4, x, out, 32);
    assert.equal(hexOf(out), v.bytes, v.what);
  }
});

test('MXFP4: dequantize gives ggml float bits', () => {
  for (const v of MXFP4_GGML_VECTORS) {
    const bytes = Uint8Array.from(Buffer.from(v.bytes, 'hex'));
    const y = new Float32Array(32);
    dequantize(GGMLType.MXFP4, bytes, y, 32);
    const got = Buffer.from(new Uint8Array(y.buffer)).toString('hex');
    const want = Buffer.from(new Uint8Array(bitsToF32(v.dequantized).buffer)).toString('hex');
    assert.equal(got, want, v.what);
  }
});

test('MXFP4: every exponent byte scales by 2^(e-128), subnormals included', () => {
  const bytes = new Uint8Array(17);
  const y = new Float32Array(32);
  for (let e = 0; e < 256; e++) {
    bytes[0] = e;
    for (let j = 0; j < 16; j++) bytes[1 + j] = j | ((15 - j) << 4);
    dequantize(GGMLType.MXFP4, bytes, y, 32);
    for (let j = 0; j < 16; j++) {
      assert.equal(y[j], Math.fround(KVALUES_MXFP4[j] * e8m0Half(e)));
      assert.equal(y[16 + j], Math.fround(KVALUES_MXFP4[15 - j] * e8m0Half(e)));
    }
  }
  assert.equal(e8m0Half(0), 2 ** -128);
  assert.ok(e8m0Half(0) > 0 && Math.fround(e8m0Half(0)) === e8m0Half(0));
});

const F32 = 'fixtures/archs/gpt-oss-F32.gguf';
const MX = 'fixtures/archs/gpt-oss-MXFP4.gguf';

test('MXFP4: the gpt-oss fixture experts are its F32 experts quantized', {
  skip: sharedPath(F32) && sharedPath(MX) ? false : missingShared(MX),
}, () => {
  const f = openGGUF(sharedPath(F32)!);
  const m = openGGUF(sharedPath(MX)!);
  let n = 0;
  for (const t of m.tensors) {
    if (t.type !== GGMLType.MXFP4) continue;
    const src = f.tensor(t.name)!;
    const raw = f.readTensorData(src);
    const x = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const got = new Uint8Array(t.nBytes);
    quantize(GGMLType.MXFP4, x, got, src.nElements);
    assert.equal(hexOf(got), hexOf(m.readTensorData(t)), t.name);
    n++;
  }
  assert.equal(n, 6);
  f.close();
  m.close();
});
