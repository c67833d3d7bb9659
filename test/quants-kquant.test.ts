// K-quant and IQ4 quantizers against llama-quantize's output: the F32 fixture's tensors,
// quantized here, must equal byte for byte the tensors of the quantized fixtures (which
// llama.cpp's llama-quantize wrote from the same F32 weights, without an imatrix).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quantizeIQ4NL, quantizeIQ4XS } from '../src/ggml/quants/quantize-iq.js';
import { quantizeQ2K, quantizeQ3K, quantizeQ4K, quantizeQ5K, quantizeQ6K } from '../src/ggml/quants/quantize-k.js';
import { GGMLType, typeName } from '../src/ggml/types.js';
import { type GGUFFile, openGGUF } from '../src/gguf/index.js';
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
