// The WebAssembly K-quant quantizers (assembly/kquantize.ts) write the same bytes as the
// JavaScript ones (pinned to ggml's in quants-kquant.test.ts and quants-imatrix.test.ts),
// on Gaussian rows, the hard rows and every tensor of rand-llama-F32.gguf; and once
// registered they are what quantize() and quantizeRows() run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { QuantizeFn } from '../src/ggml/quants/codec.js';
import { quantizerOf } from '../src/ggml/quants/index.js';
import { quantizeQ2_K, quantizeQ3_K, quantizeQ4_K, quantizeQ5_K, quantizeQ6_K } from '../src/ggml/quants/quantize-k.js';
import { GGMLType, traitsOf, typeName } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import { useWasmQuantizers, wasmQuantizer } from '../src/quantize/wasm-quantizers.js';
import { edgeCaseRows, gaussianRows } from './helpers/quant-inputs.js';
import { sharedPath } from './helpers/shared.js';

const JS: ReadonlyArray<[GGMLType, QuantizeFn]> = [
  [GGMLType.Q2_K, quantizeQ2_K],
  [GGMLType.Q3_K, quantizeQ3_K],
  [GGMLType.Q4_K, quantizeQ4_K],
  [GGMLType.Q5_K, quantizeQ5_K],
  [GGMLType.Q6_K, quantizeQ6_K],
];

function inputs(): Float32Array[] {
  const out = [gaussianRows(300, 21), edgeCaseRows(7)];
  const path = sharedPath('fixtures/rand-llama-F32.gguf');
  if (path) {
    const f = openGGUF(path);
    for (const t of f.tensors) {
      if (t.nElements % 256 !== 0) continue;
      const b = f.readTensorData(t);
      out.push(new Float32Array(b.buffer, b.byteOffset, t.nElements));
    }
    f.close();
  }
  return out;
}

test('WebAssembly K-quant quantizers write the JavaScript ones’ bytes', () => {
  const xs = inputs();
  for (const [type, js] of JS) {
    const wasm = wasmQuantizer(type);
    assert.ok(wasm, `${typeName(type)}: no WebAssembly quantizer`);
    const ts = traitsOf(type).typeSize;
    for (const [i, x] of xs.entries()) {
      const nb = x.length / 256;
      const a = new Uint8Array(nb * ts);
      const b = new Uint8Array(nb * ts);
      js(x, 0, a, 0, nb);
      wasm(x, 0, b, 0, nb);
      assert.deepEqual(b, a, `${typeName(type)} on input ${i}`);
    }
  }
  useWasmQuantizers();
  for (const [type, js] of JS) assert.notEqual(quantizerOf(type), js, `${typeName(type)} is registered`);
});
