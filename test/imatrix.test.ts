// `llama-ts imatrix` against llama.cpp's llama-imatrix (built from node-llama-cpp 3.21.1's
// sources against its libraries, outside the repository) on the trained stories260K model:
// storyText(3000, 5), chunks of 128 tokens, 24 chunks. Pinned from llama-imatrix's file:
// per weight the rows counted, the sum of its column sums and five of them; ours must be
// within 1e-3 relative. And the definition itself: the sums equal, in float64, the squares
// of the matrix-product inputs the model's graph computes (read through the same hook).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Context, Model } from '../src/model/index.js';
import { computeImatrix, ImatrixCollector } from '../src/quantize/imatrix.js';
import { readImatrixFile } from '../src/quantize/imatrix-file.js';
import { storyText } from './helpers/quant-inputs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const REL = 'models/stories260K.gguf';
const path = sharedPath(REL);
const skip = path ? false : missingShared(REL);
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-imatrix-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const BIN = new URL('../../bin/llama-ts.js', import.meta.url).pathname;

// [weight, rows counted, Σ of the column sums, column sums at 0, 7, 13, n/2, n-1]
const REF: ReadonlyArray<[string, number, number, number[]]> = [
  ['blk.0.attn_k.weight', 3072, 251369.763, [1952.60327, 3852.4021, 2474.00293, 2622.82935, 1613.09583]],
  ['blk.0.attn_output.weight', 3072, 14887.8082, [254.170151, 169.191742, 247.527283, 316.737915, 168.530807]],
  ['blk.0.attn_q.weight', 3072, 251369.763, [1952.60327, 3852.4021, 2474.00293, 2622.82935, 1613.09583]],
  ['blk.0.attn_v.weight', 3072, 251369.763, [1952.60327, 3852.4021, 2474.00293, 2622.82935, 1613.09583]],
  ['blk.0.ffn_down.weight', 3072, 23546.1758, [57.7092514, 54.1498947, 49.4165916, 137.907333, 321.392303]],
  ['blk.0.ffn_gate.weight', 3072, 60414.2202, [801.93335, 1028.69202, 817.637695, 584.629639, 597.723633]],
  ['blk.0.ffn_up.weight', 3072, 60414.2202, [801.93335, 1028.69202, 817.637695, 584.629639, 597.723633]],
  ['blk.1.attn_k.weight', 3072, 327340.449, [3063.23975, 6981.72021, 3293.75488, 2373.28101, 1956.89941]],
  ['blk.1.attn_output.weight', 3072, 19553.7386, [158.802231, 209.588196, 175.104401, 462.432434, 184.381363]],
  ['blk.1.attn_q.weight', 3072, 327340.449, [3063.23975, 6981.72021, 3293.75488, 2373.28101, 1956.89941]],
  ['blk.1.attn_v.weight', 3072, 327340.449, [3063.23975, 6981.72021, 3293.75488, 2373.28101, 1956.89941]],
  ['blk.1.ffn_down.weight', 3072, 28480.3506, [152.600052, 112.437286, 95.9581223, 166.176147, 92.6602478]],
  ['blk.1.ffn_gate.weight', 3072, 98410.1574, [1180.56201, 1082.24207, 1211.76648, 892.49292, 1369.94153]],
  ['blk.1.ffn_up.weight', 3072, 98410.1574, [1180.56201, 1082.24207, 1211.76648, 892.49292, 1369.94153]],
  ['blk.2.attn_k.weight', 3072, 302646.708, [3326.19165, 4235.00684, 3117.89209, 1939.73389, 2778.42822]],
  ['blk.2.attn_output.weight', 3072, 17512.4945, [384.729889, 315.209778, 335.750458, 227.520569, 79.447937]],
  ['blk.2.attn_q.weight', 3072, 302646.708, [3326.19165, 4235.00684, 3117.89209, 1939.73389, 2778.42822]],
  ['blk.2.attn_v.weight', 3072, 302646.708, [3326.19165, 4235.00684, 3117.89209, 1939.73389, 2778.42822]],
  ['blk.2.ffn_down.weight', 3072, 37785.9041, [152.023209, 194.343506, 232.697311, 193.253708, 408.509735]],
  ['blk.2.ffn_gate.weight', 3072, 112717.549, [1181.04138, 1173.60474, 1599.78491, 1326.88647, 1623.85278]],
  ['blk.2.ffn_up.weight', 3072, 112717.549, [1181.04138, 1173.60474, 1599.78491, 1326.88647, 1623.85278]],
  ['blk.3.attn_k.weight', 3072, 319003.125, [2863.33325, 2194.63501, 3146.81689, 2867.67432, 2583.26563]],
  ['blk.3.attn_output.weight', 3072, 26984.4284, [199.632217, 643.921692, 757.291992, 583.081177, 509.716461]],
  ['blk.3.attn_q.weight', 3072, 319003.125, [2863.33325, 2194.63501, 3146.81689, 2867.67432, 2583.26563]],
  ['blk.3.attn_v.weight', 3072, 319003.125, [2863.33325, 2194.63501, 3146.81689, 2867.67432, 2583.26563]],
  ['blk.3.ffn_down.weight', 3072, 78297.0503, [423.546326, 269.56781, 153.3134, 351.808289, 388.432281]],
  ['blk.3.ffn_gate.weight', 3072, 137697.129, [1097.64307, 1500.28125, 2066.07813, 1736.68286, 1955.17651]],
  ['blk.3.ffn_up.weight', 3072, 137697.129, [1097.64307, 1500.28125, 2066.07813, 1736.68286, 1955.17651]],
  ['blk.4.attn_k.weight', 3072, 278619.942, [2246.58789, 1908.78357, 4421.41406, 3010.9187, 2623.86279]],
  ['blk.4.attn_output.weight', 3072, 20717.0577, [333.877075, 172.218262, 180.279114, 169.713486, 309.874603]],
  ['blk.4.attn_q.weight', 3072, 278619.942, [2246.58789, 1908.78357, 4421.41406, 3010.9187, 2623.86279]],
  ['blk.4.attn_v.weight', 3072, 278619.942, [2246.58789, 1908.78357, 4421.41406, 3010.9187, 2623.86279]],
  ['blk.4.ffn_down.weight', 3072, 142183.941, [242.640381, 515.616211, 778.885681, 144.833939, 1337.81116]],
  ['blk.4.ffn_gate.weight', 3072, 171720.867, [1158.0072, 1444.43811, 3774.23022, 2264.58765, 3036.3728]],
  ['blk.4.ffn_up.weight', 3072, 171720.867, [1158.0072, 1444.43811, 3774.23022, 2264.58765, 3036.3728]],
];

test("llama-ts imatrix matches llama-imatrix's file within 1e-3", { skip }, () => {
  const text = join(dir, 'story.txt');
  writeFileSync(text, storyText(3000, 5));
  const out = join(dir, 'im.gguf');
  const r = spawnSync(
    process.execPath,
    [BIN, 'imatrix', '-m', path!, '-f', text, '-o', out, '-c', '128', '--chunks', '24'],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(r.status, 0, r.stderr);
  const im = readImatrixFile(out);
  assert.equal(im.chunkCount, 24);
  assert.equal(im.chunkSize, 128);
  assert.deepEqual(im.datasets, [text]);
  assert.deepEqual([...im.entries.keys()].sort(), REF.map((x) => x[0]).sort());
  const close = (a: number, b: number, what: string) =>
    assert.ok(Math.abs(a - b) <= 1e-3 * Math.abs(b), `${what}: ${a} vs llama-imatrix ${b}`);
  for (const [name, count, total, some] of REF) {
    const e = im.entries.get(name)!;
    assert.deepEqual(e.counts, [count], name);
    close(
      e.sums.reduce((a, b) => a + b, 0),
      total,
      `${name} total`,
    );
    const n = e.sums.length;
    for (const [k, i] of [0, 7, 13, n >> 1, n - 1].entries()) close(e.sums[i]!, some[k]!, `${name}[${i}]`);
  }
});

test('the sums are the squared matrix-product inputs (float64 check), short texts are refused', { skip }, async () => {
  const model = await Model.load(path!);
  const seen = new Map<string, Float64Array>();
  const collector = new ImatrixCollector();
  const ctx = new Context(model, {
    nCtx: 64,
    nBatch: 64,
    nUbatch: 64,
    onMatMulInput: (w, x, ne) => {
      collector.observe(w, x, ne);
      if (!w.startsWith('blk.')) return;
      const acc = seen.get(w) ?? new Float64Array(ne[0]!);
      for (let i = 0; i < x.length; i++) acc[i % ne[0]!]! += x[i]! * x[i]!;
      seen.set(w, acc);
    },
  });
  try {
    const tokens = Int32Array.from(model.vocab.encode(storyText(400, 9), { addSpecial: true }));
    const im = await computeImatrix(ctx, collector, tokens, model.vocab.bos, { chunkSize: 64, chunks: 3 });
    assert.equal(im.entries.size, 35);
    for (const [name, e] of im.entries) {
      assert.deepEqual(e.counts, [192], name);
      const want = seen.get(name)!;
      for (let i = 0; i < want.length; i++) {
        assert.ok(Math.abs(e.sums[i]! - want[i]!) <= 1e-5 * want[i]!, `${name}[${i}]: ${e.sums[i]} vs ${want[i]}`);
      }
    }
    await assert.rejects(
      computeImatrix(ctx, new ImatrixCollector(), tokens.slice(0, 100), undefined, { chunkSize: 64 }),
      /at least 128 tokens for chunks of 64 tokens; the text has only 100/,
    );
  } finally {
    ctx.free();
    model.free();
  }
});
