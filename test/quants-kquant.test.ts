// K-quant and IQ4 quantizers against llama.cpp.
// 1. The F32 fixture's tensors, quantized here, must equal byte for byte the tensors of
//    the quantized fixtures (llama-quantize's output from the same weights, no imatrix).
// 2. Corner-case and Gaussian rows must hash to what ggml's own quantizer produced for
//    them (ggml_quantize_chunk with a null imatrix, from the libggml-base.so that
//    node-llama-cpp 3.21.1 ships, called through Python's ctypes when this was written).
// 3. quantize -> dequantize round trips stay within each type's usual error.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { dequantize, quantize } from '../src/ggml/quants/index.js';
import { quantizeIQ4NL, quantizeIQ4XS } from '../src/ggml/quants/quantize-iq.js';
import { quantizeQ2K, quantizeQ3K, quantizeQ4K, quantizeQ5K, quantizeQ6K } from '../src/ggml/quants/quantize-k.js';
import { GGMLType, rowSize, typeName } from '../src/ggml/types.js';
import { type GGUFFile, openGGUF } from '../src/gguf/index.js';
import { edgeCaseRows, gaussianRows } from './helpers/quant-inputs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

type Quantizer = (src: Float32Array, dst: Uint8Array, n: number) => void;

const QUANTIZERS: ReadonlyMap<number, { fn: Quantizer; blockSize: number; typeSize: number }> = new Map([
  [GGMLType.Q2_K, { fn: quantizeQ2K, blockSize: 256, typeSize: 84 }],
  [GGMLType.Q3_K, { fn: quantizeQ3K, blockSize: 256, typeSize: 110 }],
  [GGMLType.Q4_K, { fn: quantizeQ4K, blockSize: 256, typeSize: 144 }],
  [GGMLType.Q5_K, { fn: quantizeQ5K, blockSize: 256, typeSize: 176 }],
  [GGMLType.Q6_K, { fn: quantizeQ6K, blockSize: 256, typeSize: 210 }],
  [GGMLType.IQ4_NL, { fn: quantizeIQ4NL, blockSize: 32, typeSize: 18 }],
  [GGMLType.IQ4_XS, { fn: quantizeIQ4XS, blockSize: 256, typeSize: 136 }],
]);

const F32_REL = 'fixtures/rand-llama-F32.gguf';
const FILES = ['Q2_K', 'Q3_K_M', 'Q4_K_M', 'Q5_K_M', 'Q6_K', 'IQ4_NL', 'IQ4_XS'];

function f32Tensor(f: GGUFFile, name: string): Float32Array {
  const info = f.tensor(name);
  assert.ok(info, `F32 fixture lacks ${name}`);
  assert.equal(info.type, GGMLType.F32);
  const bytes = f.readTensorData(info);
  return new Float32Array(bytes.buffer, bytes.byteOffset, info.nElements);
}

const f32Path = sharedPath(F32_REL);
for (const label of FILES) {
  const rel = `fixtures/rand-llama-${label}.gguf`;
  const path = sharedPath(rel);
  test(`llama-quantize ${label}: byte-exact`, {
    skip: !f32Path ? missingShared(F32_REL) : path ? false : missingShared(rel),
  }, (t) => {
    const ref = openGGUF(path!);
    const orig = openGGUF(f32Path!);
    try {
      let checked = 0;
      for (const info of ref.tensors) {
        const q = QUANTIZERS.get(info.type);
        if (!q) continue;
        const src = f32Tensor(orig, info.name);
        const want = ref.readTensorData(info);
        const got = new Uint8Array(want.length);
        q.fn(src, got, info.nElements);
        const nb = info.nElements / q.blockSize;
        let differing = 0;
        let bytesDiff = 0;
        for (let b = 0; b < nb; b++) {
          let d = 0;
          for (let k = b * q.typeSize; k < (b + 1) * q.typeSize; k++) if (got[k] !== want[k]) d++;
          if (d) {
            differing++;
            bytesDiff += d;
          }
        }
        t.diagnostic(
          `${info.name} ${typeName(info.type)}: ${differing === 0 ? 'exact' : `${differing}/${nb} blocks differ (${bytesDiff} bytes)`}`,
        );
        assert.equal(differing, 0, `${info.name} (${typeName(info.type)}): ${differing}/${nb} blocks differ`);
        checked++;
      }
      assert.ok(checked > 0, `no tensor of ${label} has a type implemented here`);
    } finally {
      ref.close();
      orig.close();
    }
  });
}

// SHA-256 of ggml's output for edgeCaseRows(7) (80 blocks of 256) and gaussianRows(64, 11).
const GOLDEN: ReadonlyArray<[GGMLType, string, string]> = [
  [
    GGMLType.Q2_K,
    '7bac51fe78d6beef520c19db5c381062ced4a66e2305aecd3fdf601514f322fb',
    '021881db9a0eeece26d046b8b0162f58961bfd8b13283f1e6b62443937885bef',
  ],
  [
    GGMLType.Q3_K,
    '9e7c5720c7175a500955264838a92b3035b1b7b81bba3011388fc33ef03ed9f0',
    'a9619d57bd2352bbf56b100ebac480b31f74c6c53db6cd4a9fd079a3c1da095e',
  ],
  [
    GGMLType.Q4_K,
    '16c92b94cfe475888dd25605488dbb86d57d8c68f467c6129fe08b935f7f0db7',
    'a4836ce68978862c7dde5664a7576d7457fd7112072f3dea0035f35698e17e50',
  ],
  [
    GGMLType.Q5_K,
    'b1fcd1cab0c252910b29416989edfc5f4756310b911d9c24f95f75664aa2435d',
    'f67409da9e841806c139a554bc8a809c934f0897a7f899bb83b05ff905aceb17',
  ],
  [
    GGMLType.Q6_K,
    '7de4ef51dbaec9559436e175c46956b51bbb517b55d64f6a468438ff878a9eb8',
    '3a10f055e1eb102839d4075af8531f2fab782776eb9f7a096ed8570cba612421',
  ],
  [
    GGMLType.IQ4_NL,
    '337f86fdea5224c910dbd57102d822aa45132480f9490b31cccf514d08b785ea',
    'e8de19161e850ddaec43f26f4a7358d2ab8e71b144a52453bafdbf5bfd05df65',
  ],
  [
    GGMLType.IQ4_XS,
    'f50701eacf3cfcc3672310fe13b20744af5a93b671a69ec4b6881bfe0a51a6de',
    '48a8ef2b35060f0c13f3f58e1395459c6b21e425fd920397203150aa9a052bad',
  ],
];

test("corner cases and Gaussian rows hash to ggml's output", () => {
  const inputs = { edge: edgeCaseRows(7), gauss: gaussianRows(64, 11) };
  assert.equal(inputs.edge.length, 80 * 256);
  for (const [type, edgeHash, gaussHash] of GOLDEN) {
    for (const [label, x, want] of [
      ['edge', inputs.edge, edgeHash],
      ['gauss', inputs.gauss, gaussHash],
    ] as const) {
      const q = new Uint8Array(rowSize(type, x.length));
      quantize(type, x, q, x.length); // through the registry, as the rest of the code calls it
      const got = createHash('sha256').update(q).digest('hex');
      assert.equal(got, want, `${typeName(type)} on ${label} rows`);
      // the direct entry point writes the same bytes
      const q2 = new Uint8Array(q.length);
      QUANTIZERS.get(type)!.fn(x, q2, x.length);
      assert.deepEqual(q2, q);
    }
  }
});

// Relative RMS error (error RMS over signal RMS) on gaussianRows(64, 11): over all blocks,
// and for the worst block. Measured: Q2_K .275/.343, Q3_K .147/.168, Q4_K .067/.079,
// Q5_K .034/.040, Q6_K .017/.021, IQ4_NL .075/.084, IQ4_XS .076/.085.
const ROUND_TRIP: ReadonlyArray<[GGMLType, number, number]> = [
  [GGMLType.Q2_K, 0.3, 0.37],
  [GGMLType.Q3_K, 0.16, 0.185],
  [GGMLType.Q4_K, 0.075, 0.09],
  [GGMLType.Q5_K, 0.038, 0.045],
  [GGMLType.Q6_K, 0.019, 0.023],
  [GGMLType.IQ4_NL, 0.082, 0.093],
  [GGMLType.IQ4_XS, 0.083, 0.094],
];

test('quantize -> dequantize round trip error', () => {
  const x = gaussianRows(64, 11);
  const y = new Float32Array(x.length);
  for (const [type, maxAll, maxBlock] of ROUND_TRIP) {
    const q = new Uint8Array(rowSize(type, x.length));
    quantize(type, x, q, x.length);
    dequantize(type, q, y, x.length);
    let errAll = 0;
    let sigAll = 0;
    let worst = 0;
    for (let b = 0; b < x.length / 256; b++) {
      let e = 0;
      let s = 0;
      for (let i = b * 256; i < (b + 1) * 256; i++) {
        e += (y[i]! - x[i]!) ** 2;
        s += x[i]! ** 2;
      }
      worst = Math.max(worst, Math.sqrt(e / s));
      errAll += e;
      sigAll += s;
    }
    const rel = Math.sqrt(errAll / sigAll);
    assert.ok(rel < maxAll, `${typeName(type)}: relative RMSE ${rel.toFixed(4)} >= ${maxAll}`);
    assert.ok(worst < maxBlock, `${typeName(type)}: worst block ${worst.toFixed(4)} >= ${maxBlock}`);
  }
  // an all-zero block comes back as zeros (not NaN from a 0/0 scale)
  for (const [type] of ROUND_TRIP) {
    const z = new Float32Array(256);
    const q = new Uint8Array(rowSize(type, 256));
    quantize(type, z, q, 256);
    dequantize(type, q, y, 256);
    for (let i = 0; i < 256; i++) assert.equal(Math.abs(y[i]!), 0, `${typeName(type)}: zero block`);
  }
});
