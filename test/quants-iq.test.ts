// The IQ1/IQ2/IQ3 and ternary types against ggml.
// 1. The codebooks expanded from their compact tables equal ggml's byte grids
//    (iq2xxs_grid ... iq1s_grid in ggml-common.h), by SHA-256.
// 2. Random blocks dequantize to the bits ggml's dequantize_row_* gives (SHA-256 of the
//    float32 output of node-llama-cpp 3.21.1's libggml-base.so, computed by a harness
//    outside the repository: the library cannot run here).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { dequantize } from '../src/ggml/quants/index.js';
import {
  GRID_IQ1S,
  GRID_IQ2S,
  GRID_IQ2XS,
  GRID_IQ2XXS,
  GRID_IQ3S,
  GRID_IQ3XXS,
  type GridSpec,
  gridValues,
  signsOf7,
} from '../src/ggml/quants/iq-grids.js';
import { GGMLType, traitsOf, typeName } from '../src/ggml/types.js';
import { randomBlocks } from './helpers/quant-inputs.js';

function sha256(bytes: ArrayBufferView): string {
  return createHash('sha256')
    .update(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    .digest('hex');
}

test("expanded grids are ggml's byte grids", () => {
  // ggml stores each point as a little-endian u64 (IQ1/IQ2) or u32 (IQ3): coordinate k in byte k
  const want: Array<[string, GridSpec, number, string]> = [
    ['iq2xxs_grid', GRID_IQ2XXS, 256, '05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54'],
    ['iq2xs_grid', GRID_IQ2XS, 512, '06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de'],
    ['iq2s_grid', GRID_IQ2S, 1024, 'e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88'],
    ['iq3xxs_grid', GRID_IQ3XXS, 256, '46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d'],
    ['iq3s_grid', GRID_IQ3S, 512, 'bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f'],
    ['iq1s_grid', GRID_IQ1S, 2048, '07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a'],
  ];
  for (const [name, spec, points, hash] of want) {
    const g = gridValues(spec);
    assert.equal(g.length, points * spec.coords, name);
    assert.equal(sha256(g), hash, name);
  }
});

test('sign bytes complete 7 bits with the parity bit', () => {
  // ggml's ksigns_iq2xs starts 0, 129, 130, 3, 132, 5, 6, 135 and ends 126, 255
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map(signsOf7), [0, 129, 130, 3, 132, 5, 6, 135]);
  assert.equal(signsOf7(126), 126);
  assert.equal(signsOf7(127), 255);
  for (let i = 0; i < 128; i++) {
    let bits = 0;
    for (let v = signsOf7(i); v; v >>= 1) bits += v & 1;
    assert.equal(bits % 2, 0, `signs of ${i}`);
  }
});

// [type, byte offset of the f16 scale (none for IQ1_M), SHA-256 of ggml's dequantization
// of randomBlocks(typeSize, 64, 1000 + type, offset)]
const DEQUANT: ReadonlyArray<[GGMLType, number | undefined, string]> = [
  [GGMLType.IQ2_XXS, 0, 'ccb32e1ddfad6090550f99078697137c9de64c7ada35f95ba771e09667a04707'],
  [GGMLType.IQ2_XS, 0, 'a17973aaacdf5817cae0a8443d93a08612fa5309563c1a8f52ce800b75f004cd'],
  [GGMLType.IQ3_XXS, 0, '59bde0d95b79082df1307cc48ebca9a9c89fb6984d5c12657efb63133618ef70'],
  [GGMLType.IQ1_S, 0, 'f1fe08023424307f9633ef3a7adb1e7e037106ac30789eb849c0d2ff73ed2d7f'],
  [GGMLType.IQ3_S, 0, 'fb767bda17c623c7b4a02001807d13e8641dad122c774fcf0100f6f81ae8be1c'],
  [GGMLType.IQ2_S, 0, '378e1e3475290c32992db49a6de38d41fb5a82d97308c946625cef40d8da80a8'],
  [GGMLType.IQ1_M, undefined, '14790f0f36c28b4a02029b4a1820b0a07bc5bcaf52419102d0bc77f8b1d5c916'],
  [GGMLType.TQ1_0, 52, 'fe3219fd66f803453d813a48d39fc32856eb0f4d6b310408bbcd7515ea6bb8a4'],
  [GGMLType.TQ2_0, 64, 'd3a3ffda130dee25dfef7fe4a8996b1c87579b77b7e8488ba4ee0a5c45df95dd'],
];

test("random blocks dequantize to ggml's bits", () => {
  for (const [type, scaleOff, hash] of DEQUANT) {
    const tr = traitsOf(type);
    const bytes = randomBlocks(tr.typeSize, 64, 1000 + type, scaleOff);
    // IQ1_M spreads its f16 scale over nibbles: keep its exponent below 16 (finite)
    if (type === GGMLType.IQ1_M) for (let b = 0; b < 64; b++) bytes[b * 56 + 55]! &= 0xbf;
    const out = new Float32Array(64 * 256);
    dequantize(type, bytes, out, out.length);
    assert.equal(sha256(out), hash, typeName(type));
  }
});
