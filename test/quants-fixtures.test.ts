// Codecs against llama.cpp-made files: every fixture tensor dequantizes to gguf-py's
// reference statistics, and the reference quantizers reproduce llama-quantize's bytes.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { canDequantize, dequantize, quantize } from '../src/ggml/quants/index.js';
import { GGMLType, typeName } from '../src/ggml/types.js';
import { type GGUFFile, openGGUF } from '../src/gguf/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

interface TensorRef {
  type: string;
  n: number;
  sum: number;
  sumsq: number;
  first8: number[];
  last4: number[];
}

const REF_REL = 'fixtures/dequant.ref.json';
const refPath = sharedPath(REF_REL);

function dequantTensor(f: GGUFFile, name: string): Float32Array {
  const info = f.tensor(name);
  assert.ok(info, `tensor ${name} missing`);
  const out = new Float32Array(info.nElements);
  dequantize(info.type, f.readTensorData(info), out, info.nElements);
  return out;
}

function close(got: number, want: number, rel: number, abs: number): boolean {
  return Math.abs(got - want) <= Math.max(abs, rel * Math.abs(want));
}

test('dequantize: every fixture tensor matches gguf-py (sum, sum of squares, first 8, last 4)', {
  skip: refPath ? false : missingShared(REF_REL),
}, (t) => {
  const ref = JSON.parse(readFileSync(refPath!, 'utf8')) as Record<string, Record<string, TensorRef>>;
  let checked = 0;
  const perType = new Map<string, number>();
  let worstSum = 0;
  for (const [file, tensors] of Object.entries(ref)) {
    const p = sharedPath(`fixtures/${file}`);
    if (!p) {
      t.diagnostic(`${file}: absent, skipped`);
      continue;
    }
    const f = openGGUF(p);
    try {
      assert.deepEqual(f.tensors.map((x) => x.name).sort(), Object.keys(tensors).sort(), `${file}: tensor set`);
      for (const [name, r] of Object.entries(tensors)) {
        const info = f.tensor(name)!;
        const where = `${file} ${name} (${r.type})`;
        assert.equal(typeName(info.type), r.type, where);
        assert.equal(info.nElements, r.n, where);
        const y = dequantTensor(f, name);
        let sum = 0;
        let sumsq = 0;
        let sumAbs = 0;
        for (let i = 0; i < y.length; i++) {
          const v = y[i]!;
          sum += v;
          sumsq += v * v;
          sumAbs += Math.abs(v);
        }
        // a sum that cancels is compared relative to the sum of magnitudes
        assert.ok(close(sum, r.sum, 1e-6, 1e-12 * sumAbs + 1e-9), `${where}: sum ${sum} vs ${r.sum}`);
        assert.ok(close(sumsq, r.sumsq, 1e-6, 1e-12), `${where}: sumsq ${sumsq} vs ${r.sumsq}`);
        worstSum = Math.max(worstSum, Math.abs(sum - r.sum) / Math.max(Math.abs(r.sum), 1e-30));
        const picks: [number, number][] = [
          ...r.first8.map((v, i): [number, number] => [i, v]),
          ...r.last4.map((v, i): [number, number] => [y.length - 4 + i, v]),
        ];
        for (const [k, v] of picks) assert.ok(close(y[k]!, v, 1e-6, 1e-6), `${where}: [${k}] ${y[k]} vs ${v}`);
        checked++;
        perType.set(r.type, (perType.get(r.type) ?? 0) + 1);
      }
    } finally {
      f.close();
    }
  }
  t.diagnostic(`${checked} tensors checked: ${[...perType].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  t.diagnostic(`largest relative sum difference ${worstSum.toExponential(2)}`);
  assert.ok(checked > 0);
});

test('dequantize: the models/ files decode to finite values', {
  skip: sharedPath('models') ? false : missingShared('models'),
}, (t) => {
  const dir = sharedPath('models')!;
  for (const file of readdirSync(dir).filter((x) => x.endsWith('.gguf'))) {
    const f = openGGUF(`${dir}/${file}`);
    try {
      let n = 0;
      for (const info of f.tensors) {
        assert.ok(canDequantize(info.type), `${file} ${info.name}: ${typeName(info.type)}`);
        const y = dequantTensor(f, info.name);
        for (let i = 0; i < y.length; i++) assert.ok(Number.isFinite(y[i]!), `${file} ${info.name}[${i}]`);
        n++;
      }
      t.diagnostic(`${file}: ${n} tensors decoded`);
    } finally {
      f.close();
    }
  }
});

// Types whose llama-quantize output the reference quantizers must reproduce byte for byte.
const QUANT_FILES: readonly [string, GGMLType][] = [
  ['F16', GGMLType.F16],
  ['BF16', GGMLType.BF16],
  ['Q8_0', GGMLType.Q8_0],
  ['Q4_0', GGMLType.Q4_0],
  ['Q4_1', GGMLType.Q4_1],
  ['Q5_0', GGMLType.Q5_0],
  ['Q5_1', GGMLType.Q5_1],
];

const F32_REL = 'fixtures/rand-llama-F32.gguf';

for (const [name, type] of QUANT_FILES) {
  const rel = `fixtures/rand-llama-${name}.gguf`;
  const missing = !sharedPath(F32_REL) ? F32_REL : !sharedPath(rel) ? rel : undefined;
  test(`quantize ${name}: byte-exact with llama-quantize (${rel})`, {
    skip: missing ? missingShared(missing) : false,
  }, (t) => {
    const src = openGGUF(sharedPath(F32_REL)!);
    const dst = openGGUF(sharedPath(rel)!);
    try {
      let exact = 0;
      const skipped: string[] = [];
      for (const info of dst.tensors) {
        if (info.type !== type) {
          // llama-quantize keeps 1-D norms in F32 and picks Q6_K for output.weight
          skipped.push(`${info.name} (${typeName(info.type)})`);
          continue;
        }
        const s = src.tensor(info.name);
        assert.ok(s && s.type === GGMLType.F32, `${info.name}: F32 source`);
        const raw = src.readTensorData(s);
        const x = new Float32Array(raw.buffer, raw.byteOffset, s.nElements);
        const want = dst.readTensorData(info);
        const got = new Uint8Array(info.nBytes);
        quantize(type, x, got, s.nElements);
        if (!Buffer.from(got.buffer, got.byteOffset, got.length).equals(want)) {
          let i = 0;
          while (got[i] === want[i]) i++;
          assert.fail(`${info.name}: first differing byte ${i} (got ${got[i]}, want ${want[i]}) of ${want.length}`);
        }
        exact++;
      }
      t.diagnostic(`${exact} tensors byte-exact; not ${name}, skipped: ${skipped.join(', ') || 'none'}`);
      assert.ok(exact > 0);
    } finally {
      src.close();
      dst.close();
    }
  });
}
