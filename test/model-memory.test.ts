// The memory kinds without a model: a KV cache's cells (placement, the sliding-window
// ring, masks, sequence operations, reusable prefixes, saved state) and the full +
// sliding-window pair. The cache tensors live on the reference device.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { type HParams, maskedBySwa, swaPattern } from '../src/model/hparams.js';
import { KVCache, KVCacheISWA, swaCacheSize, type UbatchSeqs } from '../src/model/memory/index.js';

function hparams(nLayer: number, swa: boolean[]): HParams {
  return {
    arch: 'test',
    nCtxTrain: 1024,
    nEmbd: 32,
    nLayer,
    nLayerNextn: 0,
    nFf: 64,
    nHead: 2,
    nHeadKv: 1,
    nEmbdHeadK: 16,
    nEmbdHeadV: 16,
    nRot: 16,
    normEps: 1e-5,
    normRmsEps: 1e-5,
    ropeFreqBase: 10000,
    ropeFreqScale: 1,
    ropeScaling: 'none',
    nCtxOrig: 1024,
    nVocab: 100,
    causal: true,
    pooling: 'none',
    nClsOut: 1,
    moe: null,
    nHeadArr: new Array(nLayer).fill(2),
    nHeadKvArr: new Array(nLayer).fill(1),
    nFfArr: new Array(nLayer).fill(64),
    swaType: swa.some((x) => x) ? 'standard' : 'none',
    nSwa: 8,
    swaLayers: swa,
    nEmbdHeadKSwa: 16,
    nEmbdHeadVSwa: 16,
    nRotSwa: 16,
    ropeFreqBaseSwa: 10000,
    ropeFreqScaleSwa: 1,
    attnSoftcap: 0,
    finalSoftcap: 0,
    nLayerKv: nLayer,
    ropeAttnFactor: 1,
    nEmbdPerLayer: 0,
    recurrentLayers: new Array(nLayer).fill(false),
    ssmDConv: 0,
    ssmDInner: 0,
    ssmDState: 0,
    ssmDtRank: 0,
    ssmNGroup: 0,
    shortConvL: 0,
    nDeepstack: 0,
    ropeSections: [],
    embeddingScale: 0,
    residualScale: 0,
    logitScale: 0,
    attentionScale: 0,
    ropeFinetuned: true,
  };
}

const bufts = new Array(8).fill(referenceDevice.bufferType());

function ring(size: number, window = 8): KVCache {
  const hp = hparams(1, [true]);
  return new KVCache(hp, {
    layers: [0],
    size,
    typeK: 'f32',
    typeV: 'f32',
    layerBufts: bufts,
    swa: { type: 'standard', window },
    label: 'swa',
  });
}

function ub(pos: number[], seq = 0): UbatchSeqs {
  return { pos: Int32Array.from(pos), seq: new Int32Array(pos.length).fill(seq) };
}

function range(a: number, b: number): number[] {
  return Array.from({ length: b - a }, (_, i) => a + i);
}

/** Positions of `seq` held, sorted. */
function held(c: KVCache, seq = 0): number[] {
  const out: number[] = [];
  for (let i = 0; i < c.size; i++) if (c.pos[i] >= 0 && c.seqs[i] & (1 << seq)) out.push(c.pos[i]);
  return out.sort((a, b) => a - b);
}

function place(c: KVCache, u: UbatchSeqs): number[] {
  const cells = c.findSlots(u);
  assert.ok(cells, `room for positions ${u.pos[0]}..${u.pos[u.pos.length - 1]}`);
  c.store(cells, u);
  return cells;
}

test('swa pattern and window rules are llama.cpp’s', () => {
  // period 6: layers 5, 11, ... are full; dense first: layers 0, 6, ...
  assert.deepEqual(swaPattern(7, 6), [true, true, true, true, true, false, true]);
  assert.deepEqual(swaPattern(4, 2, true), [false, true, false, true]);
  assert.deepEqual(swaPattern(3, 0), [true, true, true]);
  assert.equal(maskedBySwa('standard', 8, 2, 9), false);
  assert.equal(maskedBySwa('standard', 8, 1, 9), true);
  assert.equal(maskedBySwa('chunked', 8, 7, 9), true);
  assert.equal(maskedBySwa('chunked', 8, 8, 9), false);
  assert.equal(maskedBySwa('symmetric', 8, 13, 9), false);
  assert.equal(maskedBySwa('symmetric', 8, 14, 9), true);
  // W·nSeq + ubatch, padded to 256, at most the context
  assert.equal(swaCacheSize({ nCtx: 32768, window: 512, nSeqMax: 1, nUbatch: 512 }), 1024);
  assert.equal(swaCacheSize({ nCtx: 600, window: 512, nSeqMax: 1, nUbatch: 512 }), 768);
});

test('a sliding-window cache is a ring: out-of-window cells are reused, each sequence keeps one run', () => {
  const c = ring(16);
  for (let p = 0; p < 100; p++) {
    place(c, ub([p]));
    const h = held(c);
    // one run of consecutive positions ending at p, at least the window long
    assert.deepEqual(h, range(h[0], p + 1), `after ${p}`);
    assert.ok(h.length >= Math.min(p + 1, 8));
  }
  // a ubatch of 8 fits a 16-cell ring (window 8 + 8)
  place(c, ub(range(100, 108)));
  assert.deepEqual(held(c).slice(-8), range(100, 108));
  assert.ok(held(c)[0] <= 100 - 7);
  // the mask of a query at 108 shows exactly positions 101..108
  place(c, ub([108]));
  const mask = new Uint16Array(16);
  c.fillMask(mask, 0, 16, ub([108]), true);
  const seen: number[] = [];
  for (let j = 0; j < 16; j++) if (mask[j] === 0) seen.push(c.pos[j]);
  assert.deepEqual(
    seen.sort((a, b) => a - b),
    range(101, 109),
  );
  c.dispose();
});

test('a cell two sequences share is not reused, though out of both windows', () => {
  const c = ring(8);
  place(c, ub(range(0, 8)));
  c.seqCp(0, 1);
  assert.equal(c.findSlots(ub([8])), null);
  c.seqRm(1);
  assert.deepEqual(place(c, ub([8])), [0]);
  assert.deepEqual(held(c), range(1, 9));
  c.dispose();
});

test('reusable prefix: a full cache keeps any prefix; a window only where it still holds what follows', () => {
  const full = new KVCache(hparams(1, [false]), {
    layers: [0],
    size: 64,
    typeK: 'f16',
    typeV: 'f16',
    layerBufts: bufts,
  });
  place(full, ub(range(0, 40)));
  assert.equal(full.reusablePrefix(0, 30), 30);
  assert.equal(full.reusablePrefix(0, 50), 40);
  assert.equal(full.reusablePrefix(1, 10), 0);
  full.dispose();

  const c = ring(16);
  for (let p = 0; p < 40; p++) place(c, ub([p]));
  const lo = held(c)[0];
  // a continuation at n reads positions n-7 .. n-1
  assert.equal(c.reusablePrefix(0, 40), 40);
  assert.equal(c.reusablePrefix(0, lo + 7), lo + 7);
  assert.equal(c.reusablePrefix(0, lo + 6), 0);
  assert.equal(c.reusablePrefix(0, 5), 0);
  c.dispose();
});

test('full + sliding-window memory: sequence operations reach both caches', () => {
  const hp = hparams(4, [true, false, true, false]);
  const m = new KVCacheISWA(hp, {
    fullLayers: [1, 3],
    swaLayers: [0, 2],
    swa: { type: 'standard', window: 8 },
    nCtx: 512,
    nSeqMax: 1,
    nUbatch: 8,
    swaFull: false,
    typeK: 'f16',
    typeV: 'f16',
    layerBufts: bufts,
  });
  assert.equal(m.base.size, 512);
  assert.equal(m.swa.size, 256);
  assert.deepEqual([m.layer(0)?.cache, m.layer(1)?.cache, m.layer(2)?.cache], [1, 0, 1]);
  for (let p = 0; p < 300; p += 4) {
    const u = ub(range(p, p + 4));
    assert.ok(m.fits([u]));
    for (const c of m.caches) place(c, u);
  }
  assert.equal(m.seqPosMax(0), 299);
  assert.ok(m.seqPosMin(0) > 0, 'the window cache dropped old cells');
  assert.equal(m.base.seqPosMin(0), 0);
  assert.equal(m.reusablePrefix(0, 296), 296);
  assert.equal(m.reusablePrefix(0, 20), 0, 'the window has moved past a 20-token prefix');
  m.seqRm(0, 296);
  assert.equal(m.seqPosMax(0), 295);
  m.seqAdd(0, 100, 296, -50);
  assert.equal(m.seqPosMax(0), 245);
  assert.ok(m.base.hasShift && m.swa.hasShift);
  m.dispose();

  const full = new KVCacheISWA(hp, {
    fullLayers: [1, 3],
    swaLayers: [0, 2],
    swa: { type: 'standard', window: 8 },
    nCtx: 512,
    nSeqMax: 1,
    nUbatch: 8,
    swaFull: true,
    typeK: 'f16',
    typeV: 'f16',
    layerBufts: bufts,
  });
  assert.equal(full.swa.size, 512);
  full.dispose();
});

test('saved state round-trips; a smaller ring keeps the newest cells', async () => {
  const a = ring(32);
  for (let p = 0; p < 24; p++) place(a, ub([p]));
  // distinct K/V rows per cell
  const { tensorGet, tensorSet } = await import('../src/backends/api.js');
  const k = a.k(0);
  const rowF = new Float32Array(k.ne[0]);
  for (let i = 0; i < a.size; i++) {
    rowF.fill(a.pos[i]);
    tensorSet(k, rowF, i * k.nb[1]);
  }
  const chunks: Uint8Array[] = [];
  await a.stateWrite(0, async (b) => {
    chunks.push(b.slice());
  });
  const all = Buffer.concat(chunks);
  let at = 0;
  const source = async (n: number) => {
    const b = all.subarray(at, at + n);
    at += n;
    return new Uint8Array(b);
  };
  const b = ring(16);
  await b.stateRead(0, source, a.stateCells(0));
  assert.equal(at, all.length);
  const h = held(b);
  assert.deepEqual(h, range(24 - 16, 24));
  for (let i = 0; i < b.size; i++) {
    const row = new Float32Array((await tensorGet(b.k(0), i * k.nb[1], k.nb[1])).buffer);
    assert.equal(row[0], b.pos[i]);
  }
  // it continues like the original
  place(b, ub([24]));
  assert.equal(b.seqPosMax(0), 24);
  a.dispose();
  b.dispose();
});
