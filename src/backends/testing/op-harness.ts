// An op test harness in the spirit of llama.cpp's test-backend-ops: every op over its
// relevant types and shapes (odd sizes, non-contiguous views, broadcasting) is built
// twice, computed on two devices with the same pseudo-random inputs, and compared by
// normalized mean squared error. A faster device runs `compareDevices(fast, reference)`.

import { f32ToF16 } from '../../ggml/fp16.js';
import * as ops from '../../ggml/ops.js';
import { canQuantize, quantize } from '../../ggml/quants/index.js';
import { newTensor, permute, reshape, type Tensor, transpose, view } from '../../ggml/tensor.js';
import { GGMLType, rowSize, traitsOf } from '../../ggml/types.js';
import type { Device } from '../impl.js';
import { stdSort } from '../reference/ops/sort.js';
import { type ComputeOptions, computeOn } from './compute.js';

/** Σ(a − b)² / Σ b² (0 when both are all zeros). */
export function nmse(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let err = 0;
  let ref = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i] - b[i];
    if (Number.isNaN(d)) {
      if (Number.isNaN(a[i]) && Number.isNaN(b[i])) continue;
      if (a[i] === b[i]) continue; // equal infinities
      return Number.POSITIVE_INFINITY;
    }
    err += d * d;
    ref += b[i] * b[i];
  }
  return ref === 0 ? err : err / ref;
}

/** Deterministic generator in [0, 1). */
export function rng(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

// offsets of the f16 scale fields per block, for random blocks of types with no quantizer
// (IQ1_M's one scale is spread over the top nibbles of four u16 words)
const F16_FIELDS: Record<string, number[]> = {
  Q2_K: [80, 82],
  Q3_K: [108],
  Q4_K: [0, 2],
  Q5_K: [0, 2],
  Q6_K: [208],
  IQ4_NL: [0],
  IQ4_XS: [0],
  IQ2_XXS: [0],
  IQ2_XS: [0],
  IQ2_S: [0],
  IQ3_XXS: [0],
  IQ3_S: [0],
  IQ1_S: [0],
};

/**
 * Gives random quantized blocks sane scales (random f16 bits would include NaN and huge
 * values): scale field j of block b becomes f16(scale(b, j)).
 */
export function setBlockScales(type: number, bytes: Uint8Array, scale: (block: number, field: number) => number): void {
  const tr = traitsOf(type);
  for (let b = 0; b < bytes.length / tr.typeSize; b++) {
    if (type === GGMLType.IQ1_M) {
      const h = f32ToF16(scale(b, 0));
      for (let i = 0; i < 4; i++) {
        const p = b * tr.typeSize + 49 + 2 * i;
        bytes[p] = (bytes[p]! & 0x0f) | (((h >> (4 * i)) & 0xf) << 4);
      }
      continue;
    }
    const fields = F16_FIELDS[tr.name];
    if (!fields) throw new Error(`setBlockScales: no scale fields known for ${tr.name}`);
    fields.forEach((off, j) => {
      const h = f32ToF16(scale(b, j));
      bytes[b * tr.typeSize + off] = h & 0xff;
      bytes[b * tr.typeSize + off + 1] = h >> 8;
    });
  }
}

/** Random data for a contiguous tensor of any supported weight type, values roughly in [-1, 1]. */
export function randomData(t: Tensor, seed: number): ArrayBufferView {
  const r = rng(seed);
  const tr = traitsOf(t.type);
  const n = t.nelements;
  if (t.type === GGMLType.F32) return new Float32Array(n).map(() => r() * 2 - 1);
  if (!tr.quantized && tr.typeSize === 2 && t.type !== GGMLType.I16) {
    const f = new Float32Array(n).map(() => r() * 2 - 1);
    const bytes = new Uint8Array(n * 2);
    quantize(t.type, f, bytes, n);
    return bytes;
  }
  if (tr.quantized && canQuantize(t.type)) {
    const f = new Float32Array(n).map(() => r() * 2 - 1);
    const bytes = new Uint8Array(rowSize(t.type, t.ne[0]) * t.nrows);
    quantize(t.type, f, bytes, n);
    return bytes;
  }
  const bytes = new Uint8Array(t.nbytes).map(() => Math.floor(r() * 256));
  setBlockScales(t.type, bytes, () => 0.002 + r() * 0.01);
  return bytes;
}

export interface BuiltCase {
  out: Tensor;
  /** Input leafs; data is random unless given. */
  inputs: (Tensor | [Tensor, ArrayBufferView])[];
}

export interface OpCase {
  name: string;
  build(): BuiltCase;
  /** Largest acceptable NMSE (default 1e-7, as test-backend-ops). */
  maxNmse?: number;
}

/**
 * A row that makes std::sort's median-of-three quicksort recurse past its depth limit
 * (McIlroy's adversary: values fixed lazily, as the comparisons of stdSort ask for them).
 */
function medianOfThreeKiller(n: number): Int32Array {
  const gas = n;
  const val = new Int32Array(n).fill(gas);
  let solid = 0;
  let candidate = 0;
  const cmp = (x: number, y: number) => {
    if (val[x] === gas && val[y] === gas) val[x === candidate ? x : y] = solid++;
    if (val[x] === gas) candidate = x;
    else if (val[y] === gas) candidate = y;
    return val[x] - val[y];
  };
  stdSort(
    Int32Array.from({ length: n }, (_, i) => i),
    (a, b) => cmp(a, b) < 0,
  );
  return val;
}

function causalMaskF16(nKV: number, nQ: number, past: number): Uint16Array {
  const m = new Uint16Array(nKV * nQ);
  for (let q = 0; q < nQ; q++) {
    for (let k = 0; k < nKV; k++) m[q * nKV + k] = f32ToF16(k <= past + q ? 0 : Number.NEGATIVE_INFINITY);
  }
  return m;
}

const { F32, F16, I32, I64 } = GGMLType;

export const WEIGHT_TYPES: readonly number[] = [
  GGMLType.F32,
  GGMLType.F16,
  GGMLType.BF16,
  GGMLType.Q4_0,
  GGMLType.Q4_1,
  GGMLType.Q5_0,
  GGMLType.Q5_1,
  GGMLType.Q8_0,
  GGMLType.Q2_K,
  GGMLType.Q3_K,
  GGMLType.Q4_K,
  GGMLType.Q5_K,
  GGMLType.Q6_K,
  GGMLType.IQ4_NL,
  GGMLType.IQ4_XS,
  GGMLType.MXFP4,
  GGMLType.IQ2_XXS,
  GGMLType.IQ2_XS,
  GGMLType.IQ2_S,
  GGMLType.IQ3_XXS,
  GGMLType.IQ3_S,
  GGMLType.IQ1_S,
  GGMLType.IQ1_M,
  GGMLType.TQ1_0,
  GGMLType.TQ2_0,
];

/** The catalogue: every op the models need, over its types and awkward shapes. */
export function opCases(): OpCase[] {
  const cases: OpCase[] = [];
  const add = (name: string, build: () => BuiltCase, maxNmse?: number) => cases.push({ name, build, maxNmse });
  const tname = (t: number) => traitsOf(t).name;

  for (const wt of WEIGHT_TYPES) {
    const K = traitsOf(wt).blockSize === 256 ? 256 : traitsOf(wt).quantized ? 64 : 37;
    add(`GET_ROWS(${tname(wt)}) [${K},5] idx [3,2]`, () => {
      const a = newTensor(wt, [K, 5, 2]);
      const idx = newTensor(I32, [3, 2]);
      return { out: ops.getRows(a, idx), inputs: [a, [idx, new Int32Array([4, 0, 2, 1, 1, 3])]] };
    });
    for (const [M, N, b2, b3, r2, r3] of [
      [5, 1, 1, 1, 1, 1],
      [3, 7, 2, 1, 2, 3],
    ]) {
      add(`MUL_MAT(${tname(wt)} x F32) K=${K} M=${M} N=${N} batch ${b2}x${b3} bcast ${r2}x${r3}`, () => {
        const a = newTensor(wt, [K, M, b2, b3]);
        const b = newTensor(F32, [K, N, b2 * r2, b3 * r3]);
        return { out: ops.mulMat(a, b), inputs: [a, b] };
      });
    }
  }
  // F16 activations (the vision encoders' patches, rounded to F16 as ggml_conv_2d's im2col)
  for (const wt of [F16, F32]) {
    for (const [M, N] of [
      [5, 1],
      [3, 7],
    ]) {
      add(`MUL_MAT(${tname(wt)} x F16) K=37 M=${M} N=${N}`, () => {
        const a = newTensor(wt, [37, M]);
        const b = newTensor(F16, [37, N]);
        return { out: ops.mulMat(a, b), inputs: [a, b] };
      });
    }
  }
  add('MUL_MAT(F32) transposed b', () => {
    const a = newTensor(F32, [9, 4]);
    const c = newTensor(F32, [6, 9]);
    return { out: ops.mulMat(a, transpose(c)), inputs: [a, c] };
  });
  add('MUL_MAT(F16) permuted a and b (attention layout)', () => {
    const k = newTensor(F16, [8, 3, 5]); // [D, heads, tokens]
    const q = newTensor(F32, [8, 3, 2]);
    return { out: ops.mulMat(permute(k, [0, 2, 1, 3]), permute(q, [0, 2, 1, 3])), inputs: [k, q] };
  });

  for (const op of ['ADD', 'MUL'] as const) {
    const f = op === 'ADD' ? ops.add : ops.mul;
    for (const bne of [
      [7, 5, 3],
      [7, 1, 3],
      [1, 5, 1],
      [7, 1, 1],
    ]) {
      add(`${op} [7,5,3] + [${bne}]`, () => {
        const a = newTensor(F32, [7, 5, 3]);
        const b = newTensor(F32, bne);
        return { out: f(a, b), inputs: [a, b] };
      });
    }
    add(`${op} permuted a`, () => {
      const a = newTensor(F32, [5, 7, 3]);
      const b = newTensor(F32, [7, 1, 3]);
      return { out: f(permute(a, [1, 0, 2, 3]), b), inputs: [a, b] };
    });
  }
  const unaries: [string, (t: Tensor) => Tensor][] = [
    ['SCALE', (t) => ops.scale(t, 0.37, 0.1)],
    ['SILU', ops.silu],
    ['GELU', ops.gelu],
    ['TANH', ops.tanh],
    ['RMS_NORM', (t) => ops.rmsNorm(t, 1e-6)],
    ['NORM', (t) => ops.norm(t, 1e-5)],
  ];
  for (const [name, f] of unaries) {
    add(`${name} [33,4,2]`, () => {
      const a = newTensor(F32, [33, 4, 2]);
      return { out: f(a), inputs: [a] };
    });
    add(`${name} transposed view`, () => {
      const a = newTensor(F32, [6, 9]);
      return { out: f(transpose(a)), inputs: [a] };
    });
  }
  // GELU and TANH beyond [-1, 1]: GELU's cut-offs at ±10, tanh's saturation
  for (const [name, f] of unaries.filter(([n]) => n === 'GELU' || n === 'TANH')) {
    add(`${name} over -12..12 [64,5]`, () => {
      const a = newTensor(F32, [64, 5]);
      const r = rng(77);
      const x = new Float32Array(64 * 5).map(() => r() * 24 - 12);
      return { out: f(a), inputs: [[a, x]] };
    });
  }

  for (const mode of [ops.RopeMode.NORMAL, ops.RopeMode.NEOX]) {
    for (const [hd, nDims, fs, ext, ff] of [
      [64, 64, 1, 0, false],
      [32, 16, 0.25, 0, false],
      [32, 32, 0.5, 1, false],
      [32, 32, 1, 0, true],
    ] as [number, number, number, number, boolean][]) {
      add(`ROPE mode ${mode} head ${hd} dims ${nDims} scale ${fs} ext ${ext} ff ${ff}`, () => {
        const a = newTensor(F32, [hd, 3, 5]);
        const pos = newTensor(I32, [5]);
        const factors = ff ? newTensor(F32, [nDims / 2]) : undefined;
        const out = ops.rope(a, pos, {
          nDims,
          mode,
          freqBase: 10000,
          freqScale: fs,
          extFactor: ext,
          nCtxOrig: 4096,
          freqFactors: factors,
        });
        const inputs: BuiltCase['inputs'] = [a, [pos, new Int32Array([0, 1, 7, 100, 3000])]];
        if (factors) inputs.push([factors, new Float32Array(nDims / 2).map((_, i) => 1 + i * 0.1)]);
        return { out, inputs };
      });
    }
  }

  // YaRN with every parameter away from its default (attn_factor, beta_fast/slow, a
  // freq_scale that is no power of two, ext_factor below 1), on a permuted view of odd rows
  for (const mode of [ops.RopeMode.NORMAL, ops.RopeMode.NEOX]) {
    add(`ROPE mode ${mode} YaRN ext 0.75 attn 1.3 beta 24/2 scale 0.3 of a [40,5,7] view`, () => {
      const a0 = newTensor(F32, [40, 7, 5]);
      const pos = newTensor(I32, [7]);
      const out = ops.rope(permute(a0, [0, 2, 1, 3]), pos, {
        nDims: 32,
        mode,
        freqBase: 500000,
        freqScale: 0.3,
        extFactor: 0.75,
        attnFactor: 1.3,
        betaFast: 24,
        betaSlow: 2,
        nCtxOrig: 8192,
      });
      return { out, inputs: [a0, [pos, new Int32Array([0, 5, 9, 63, 1000, 4095, 20000])]] };
    });
  }
  // the multi-section RoPE modes as the graphs build them from NEOX rotations: MROPE
  // (graph.ts ropeMulti: one rotation per position component, positions a view into the
  // [4n] input at offset k·n, each kept on its sectors by a 0/1 mask), the vision 2-D rope
  // (encoder.ts rope2d: frequency factors 1/base on the x half) and IMROPE text (qwen35:
  // +∞ divisors freeze the fourth section's pairs)
  add('ROPE multi-section (MROPE sections [3,2,2,1]) of [16,3,5], positions a view at offset k·n', () => {
    const [hd, n, sections] = [16, 5, [3, 2, 2, 1]];
    const x = newTensor(F32, [hd, 3, n]);
    const all = newTensor(I32, [4 * n]);
    const half = hd / 2;
    const component = (j: number) => {
      let end = 0;
      for (let k = 0; k < 4; k++) {
        end += sections[k];
        if ((j % half) % 8 < end) return k;
      }
      return 3;
    };
    const inputs: BuiltCase['inputs'] = [x, [all, new Int32Array(4 * n).map((_, i) => (i * 37) % 101)]];
    let out: Tensor | undefined;
    for (let k = 0; k < 4; k++) {
      const mask = newTensor(F32, [hd]);
      inputs.push([mask, Float32Array.from({ length: hd }, (_, j) => (component(j) === k ? 1 : 0))]);
      const pos = view(all, [n], [], k * n * 4);
      const part = ops.mul(ops.rope(x, pos, { nDims: hd, mode: ops.RopeMode.NEOX, freqBase: 1e6 }), mask);
      out = out ? ops.add(out, part) : part;
    }
    return { out: out!, inputs };
  });
  add('ROPE multi-section (vision 2-D) of [16,2,6], factors 1/base on the x half', () => {
    const [d, n, base] = [16, 6, 10000];
    const x = newTensor(F32, [d, 2, n]);
    const [py, px] = [newTensor(I32, [n]), newTensor(I32, [n])];
    const [ff, my, mx] = [newTensor(F32, [d / 2]), newTensor(F32, [d]), newTensor(F32, [d])];
    const isY = (j: number) => j % (d / 2) < d / 4;
    const o = { nDims: d, mode: ops.RopeMode.NEOX, freqBase: base * base };
    const out = ops.add(ops.mul(ops.rope(x, py, o), my), ops.mul(ops.rope(x, px, { ...o, freqFactors: ff }), mx));
    return {
      out,
      inputs: [
        x,
        [py, new Int32Array([0, 0, 1, 1, 2, 2])],
        [px, new Int32Array([0, 1, 0, 1, 0, 1])],
        [ff, Float32Array.from({ length: d / 2 }, (_, i) => (i < d / 4 ? 1 : 1 / base))],
        [my, Float32Array.from({ length: d }, (_, j) => (isY(j) ? 1 : 0))],
        [mx, Float32Array.from({ length: d }, (_, j) => (isY(j) ? 0 : 1))],
      ],
    };
  });
  add('ROPE multi-section (IMROPE text, +inf divisors) of [24,3,4], 16 dims', () => {
    const x = newTensor(F32, [24, 3, 4]);
    const pos = newTensor(I32, [4]);
    const ff = newTensor(F32, [8]);
    const out = ops.rope(x, pos, { nDims: 16, mode: ops.RopeMode.NEOX, freqBase: 1e7, freqFactors: ff });
    const f = Float32Array.from([1, 1, 1, Number.POSITIVE_INFINITY, 1, 1, Number.POSITIVE_INFINITY, 1]);
    return { out, inputs: [x, [pos, new Int32Array([0, 3, 77, 2048])], [ff, f]] };
  });

  for (const [mt, mne] of [
    [null, null],
    [F16, [13, 6, 1]],
    [F32, [13, 8, 2]],
  ] as [number | null, number[] | null][]) {
    add(`SOFT_MAX [13,6,4] mask ${mt === null ? 'none' : tname(mt)} ${mne ? `[${mne}]` : ''}`, () => {
      const a = newTensor(F32, [13, 6, 4]);
      const mask = mt === null ? null : newTensor(mt, mne!);
      const inputs: BuiltCase['inputs'] = [a];
      if (mask) inputs.push(mask);
      return { out: ops.softMax(a, mask, 0.125), inputs };
    });
  }

  // ALiBi: 6 heads (4 on m0's slopes, 2 on m1's), a broadcast F16 mask of odd width and
  // a view of the scores
  for (const maxBias of [8, 0.5]) {
    add(`SOFT_MAX ALiBi max_bias ${maxBias} of a [21,5,6] view, mask F16 [21,7,1]`, () => {
      const a0 = newTensor(F32, [21, 6, 5]);
      const mask = newTensor(F16, [21, 7, 1]);
      return { out: ops.softMax(permute(a0, [0, 2, 1, 3]), mask, 0.3, maxBias), inputs: [a0, mask] };
    });
  }
  for (const [from, to] of [
    [F32, F16],
    [F16, F32],
    [F32, GGMLType.BF16],
    [F32, GGMLType.Q8_0],
    [F32, GGMLType.Q4_0],
  ]) {
    add(`CPY ${tname(from)} -> ${tname(to)}`, () => {
      const a = newTensor(from, [64, 3]);
      const b = newTensor(to, [64, 3]);
      return { out: ops.cont(ops.cpy(a, b)), inputs: [a, b] };
    });
  }
  add('CPY F32 -> F16 into a strided cache view', () => {
    const cache = newTensor(F16, [8, 6]);
    const a = newTensor(F32, [8, 2]);
    const dst = view(cache, [8, 2], [cache.nb[1] * 2], cache.nb[1]);
    return { out: ops.cpy(ops.cpy(a, dst), newTensor(F32, [8, 2])), inputs: [cache, a] };
  });
  // one long F32 row, as a recurrent layer's state is read from and written to its cache
  // (fewer rows than workers: each worker copies a share of the row)
  add('GET_ROWS(F32) of one 40000-element row, then SET_ROWS of it into another row', () => {
    const states = newTensor(F32, [40000, 3]);
    const idx = newTensor(I32, [1]);
    const row = ops.getRows(states, idx);
    const back = ops.setRows(states, ops.scale(row, 2), newTensor(I32, [1], 'to'));
    return {
      out: ops.cpy(back, newTensor(F32, [40000, 3])),
      inputs: [states, [idx, new Int32Array([2])], [back.src[1], new Int32Array([0])]],
    };
  });
  // rows of one and three elements cut from wider rows, enough of them to be split over the
  // workers (the short-row copy must not write past its share)
  for (const [w, at] of [
    [1, 2],
    [3, 1],
  ]) {
    add(`CONT of a [${w},40000] column view of [4,40000] (offset ${at})`, () => {
      const a = newTensor(F32, [4, 40000]);
      return { out: ops.cont(view(a, [w, 40000], [a.nb[1]], at * 4)), inputs: [a] };
    });
  }
  add('CONT permuted [5,4,3] -> [3,5,4]', () => {
    const a = newTensor(F32, [5, 4, 3]);
    return { out: ops.cont(permute(a, [1, 2, 0, 3])), inputs: [a] };
  });

  for (const it of [I64, I32]) {
    add(`SET_ROWS F32 -> F16 cache, ${tname(it)} indices, broadcast over heads`, () => {
      const cache = newTensor(F16, [16, 10, 2]);
      const src = newTensor(F32, [16, 3, 2]);
      const idx = newTensor(it, [3, 1]);
      const data = it === I64 ? new BigInt64Array([7n, 0n, 3n]) : new Int32Array([7, 0, 3]);
      const set = ops.setRows(cache, src, idx);
      return { out: ops.cpy(set, newTensor(F32, [16, 10, 2])), inputs: [cache, src, [idx, data]] };
    });
  }

  // a q8_0 KV cache: rows quantized on write (two blocks of 32 a row, 3 tokens into a
  // 10-cell cache), read back through CPY, and flash attention over Q8_0 K and V (GQA,
  // a causal mask, soft-capping)
  add('SET_ROWS F32 -> Q8_0 cache [64,10,2], I64 indices, broadcast over heads', () => {
    const cache = newTensor(GGMLType.Q8_0, [64, 10, 2]);
    const src = newTensor(F32, [64, 3, 2]);
    const idx = newTensor(I64, [3, 1]);
    const set = ops.setRows(cache, src, idx);
    return {
      out: ops.cpy(set, newTensor(F32, [64, 10, 2])),
      inputs: [cache, src, [idx, new BigInt64Array([9n, 0n, 4n])]],
    };
  });
  for (const softcap of [0, 20]) {
    add(
      `FLASH_ATTN_EXT K/V Q8_0 D 64, heads 6/2, 5 queries, 37 KV positions, softcap ${softcap}`,
      () => {
        const [D, nKV, nQ] = [64, 37, 5];
        const q = newTensor(F32, [D, nQ, 6]);
        const k = newTensor(GGMLType.Q8_0, [D, nKV, 2]);
        const v = newTensor(GGMLType.Q8_0, [D, nKV, 2]);
        const mask = newTensor(F16, [nKV, nQ]);
        const out = ops.flashAttnExt(q, k, v, mask, 0.125, 0, softcap);
        return { out, inputs: [q, k, v, [mask, causalMaskF16(nKV, nQ, 30)]] };
      },
      5e-4,
    );
  }

  for (const [kvt, nHead, nHeadKV, softcap, masked] of [
    [F16, 4, 2, 0, true],
    [F16, 2, 2, 0, false],
    [F32, 4, 1, 0, true],
    [F16, 4, 4, 30, true],
  ] as [number, number, number, number, boolean][]) {
    add(
      `FLASH_ATTN_EXT K/V ${tname(kvt)} heads ${nHead}/${nHeadKV} softcap ${softcap} mask ${masked}`,
      () => {
        const D = 16;
        const nKV = 7;
        const nQ = 3;
        const q = newTensor(F32, [D, nQ, nHead]);
        const k = newTensor(kvt, [D, nKV, nHeadKV]);
        const v = newTensor(kvt, [D, nKV, nHeadKV]);
        const mask = masked ? newTensor(F16, [nKV, nQ]) : null;
        const inputs: BuiltCase['inputs'] = [q, k, v];
        if (mask) inputs.push([mask, causalMaskF16(nKV, nQ, 4)]);
        return { out: ops.flashAttnExt(q, k, v, mask, 0.25, 0, softcap), inputs };
      },
      5e-4,
    );
  }
  // ggml-cpu's two paths: row by row below 64 query rows, tiled from 64 (several key
  // blocks, the last partial, fully masked blocks, a GQA group of 7 over several tiles:
  // 4-row and 1-row kernels); a strided query view
  for (const [nQ, past] of [
    [37, 60],
    [1, 90],
    [70, 20],
  ] as [number, number][]) {
    add(
      `FLASH_ATTN_EXT D 64, heads 14/2, ${nQ} queries, 100 KV positions, causal mask`,
      () => {
        const D = 64;
        const nKV = 100;
        const q0 = newTensor(F32, [D, 14, nQ]);
        const q = permute(q0, [0, 2, 1, 3]);
        const k = newTensor(F16, [D, nKV, 2]);
        const v = newTensor(F16, [D, nKV, 2]);
        const mask = newTensor(F16, [nKV, nQ]);
        const out = ops.flashAttnExt(q, k, v, mask, 0.5);
        return { out, inputs: [q0, k, v, [mask, causalMaskF16(nKV, nQ, past)]] };
      },
      5e-4,
    );
  }
  // the split case: one query token against 512+ keys (key chunks merged), F16 and F32
  // caches, GQA 6/2, a window's mask (keys outside it hidden: whole chunks skipped), a
  // last partial chunk and block; a soft-capped F16 one
  for (const [kvt, softcap] of [
    [F16, 0],
    [F32, 0],
    [F16, 30],
  ] as const) {
    add(
      `FLASH_ATTN_EXT split: 1 query, 700 KV positions, heads 6/2, K/V ${tname(kvt)} softcap ${softcap}`,
      () => {
        const D = 32;
        const nKV = 700;
        const q = newTensor(F32, [D, 1, 6]);
        const k = newTensor(kvt, [D, nKV, 2]);
        const v = newTensor(kvt, [D, nKV, 2]);
        const mask = newTensor(F16, [nKV, 1]);
        const m = new Uint16Array(nKV);
        for (let j = 0; j < nKV; j++) m[j] = f32ToF16(j < 300 || j === 512 ? Number.NEGATIVE_INFINITY : 0);
        return { out: ops.flashAttnExt(q, k, v, mask, 0.3, 0, softcap), inputs: [q, k, v, [mask, m]] };
      },
      5e-4,
    );
  }
  recurrentCases(add);
  moeCases(add);
  return cases;
}

/** Values evenly spread over [lo, hi] (inputs whose range matters: softplus's cut at 20, decays). */
function spread(n: number, lo: number, hi: number, seed: number): Float32Array {
  const r = rng(seed);
  return new Float32Array(n).map(() => lo + (hi - lo) * r());
}

/** The recurrent layers' ops: convolution with its carried inputs, selective scan, delta rule. */
function recurrentCases(add: AddCase): void {
  add('L2_NORM [33,4,2]', () => {
    const a = newTensor(F32, [33, 4, 2]);
    return { out: ops.l2Norm(a, 1e-6), inputs: [a] };
  });
  add('L2_NORM transposed view, a zero row (eps)', () => {
    const a = newTensor(F32, [6, 9]);
    const data = spread(54, -1, 1, 5);
    for (let i = 0; i < 9; i++) data[i * 6 + 2] = 0;
    return { out: ops.l2Norm(transpose(a), 1e-6), inputs: [[a, data]] };
  });
  for (const [name, f, lo, hi] of [
    ['SOFTPLUS', ops.softplus, -30, 30],
    ['RELU', ops.relu, -1, 1],
    ['SQR', ops.sqr, -3, 3],
  ] as [string, (t: Tensor) => Tensor, number, number][]) {
    add(`${name} [33,4,2]`, () => {
      const a = newTensor(F32, [33, 4, 2]);
      return { out: f(a), inputs: [[a, spread(a.nelements, lo, hi, 7)]] };
    });
    add(`${name} transposed view`, () => {
      const a = newTensor(F32, [6, 9]);
      return { out: f(transpose(a)), inputs: [[a, spread(54, lo, hi, 8)]] };
    });
  }
  for (const [dConv, ch, nT, nS] of [
    [4, 37, 1, 1],
    [4, 37, 7, 2],
    [3, 64, 5, 1],
  ]) {
    add(`SSM_CONV d_conv ${dConv} channels ${ch} tokens ${nT} seqs ${nS}`, () => {
      const sx = newTensor(F32, [dConv - 1 + nT, ch, nS]);
      const c = newTensor(F32, [dConv, ch]);
      return { out: ops.ssmConv(sx, c), inputs: [sx, c] };
    });
  }
  // Mamba-2 (one decay per head, groups) and Mamba-1 (a decay per state element); x, B, C
  // as views of one projection, as the graphs make them
  for (const [dState, headDim, nHead, nGroup, nT, nS, perState] of [
    [16, 4, 6, 2, 1, 1, false],
    [16, 4, 6, 2, 7, 2, false],
    [13, 3, 4, 1, 5, 1, false],
    [16, 1, 8, 1, 3, 2, true],
  ] as [number, number, number, number, number, number, boolean][]) {
    add(
      `SSM_SCAN state ${dState} head_dim ${headDim} heads ${nHead} groups ${nGroup} tokens ${nT} seqs ${nS}${perState ? ' (Mamba-1 A)' : ''}`,
      () => {
        const width = headDim * nHead + 2 * nGroup * dState;
        const xbc = newTensor(F32, [width, nT, nS]);
        const e = 4;
        const x = view(xbc, [headDim, nHead, nT, nS], [headDim * e, xbc.nb[1], xbc.nb[2]], 0);
        const B = view(xbc, [dState, nGroup, nT, nS], [dState * e, xbc.nb[1], xbc.nb[2]], headDim * nHead * e);
        const C = view(
          xbc,
          [dState, nGroup, nT, nS],
          [dState * e, xbc.nb[1], xbc.nb[2]],
          (headDim * nHead + nGroup * dState) * e,
        );
        const s = newTensor(F32, [dState, headDim, nHead, nS]);
        const dt = newTensor(F32, [nHead, nT, nS]);
        const A = newTensor(F32, [perState ? dState : 1, nHead]);
        const out = ops.ssmScan(s, x, dt, A, B, C);
        return {
          out,
          inputs: [xbc, s, [dt, spread(dt.nelements, -4, 25, 11)], [A, spread(A.nelements, -2, -0.05, 12)]],
        };
      },
    );
  }
  // gated delta rule: scalar gates (Qwen3.5) and per-element ones (KDA), more value heads
  // than key heads, strided q/k/v views of one tensor, odd head sizes
  for (const [S, Hk, Hv, nT, nS, perElement] of [
    [16, 2, 4, 1, 1, false],
    [16, 2, 4, 9, 2, false],
    [6, 1, 3, 5, 1, false],
    [8, 2, 2, 4, 2, true],
  ] as [number, number, number, number, number, boolean][]) {
    add(
      `GATED_DELTA_NET S ${S} heads ${Hk}/${Hv} tokens ${nT} seqs ${nS}${perElement ? ' (per-element gates)' : ''}`,
      () => {
        const width = 2 * S * Hk + S * Hv;
        const qkv = newTensor(F32, [width, nT, nS]);
        const e = 4;
        const q = view(qkv, [S, Hk, nT, nS], [S * e, qkv.nb[1], qkv.nb[2]], 0);
        const k = view(qkv, [S, Hk, nT, nS], [S * e, qkv.nb[1], qkv.nb[2]], S * Hk * e);
        const v = view(qkv, [S, Hv, nT, nS], [S * e, qkv.nb[1], qkv.nb[2]], 2 * S * Hk * e);
        const g = newTensor(F32, [perElement ? S : 1, Hv, nT, nS]);
        const beta = newTensor(F32, [1, Hv, nT, nS]);
        const state = newTensor(F32, [S, S, Hv, nS]);
        return {
          out: ops.gatedDeltaNet(q, k, v, g, beta, state),
          inputs: [qkv, [g, spread(g.nelements, -3, -0.01, 21)], [beta, spread(beta.nelements, 0.05, 0.95, 22)], state],
        };
      },
    );
  }
}

type AddCase = (name: string, build: () => BuiltCase, maxNmse?: number) => void;

/** Expert ids [nUsed, nTokens] for 9 tokens over 4 experts: expert 2 unused, repeats, gaps. */
const EXPERT_IDS = new Int32Array([0, 1, 1, 3, 3, 0, 1, 3, 0, 3, 3, 1, 1, 0, 0, 1, 3, 1]);

/** The ops of mixtures of experts, gpt-oss and DeepSeek's latent attention. */
function moeCases(add: AddCase): void {
  const tname = (t: number) => traitsOf(t).name;
  for (const wt of WEIGHT_TYPES) {
    const K = traitsOf(wt).blockSize === 256 ? 256 : traitsOf(wt).quantized ? 64 : 37;
    for (const [M, nB, nT] of [
      [5, 1, 3],
      [8, 2, 9],
    ]) {
      add(`MUL_MAT_ID(${tname(wt)}) K=${K} M=${M} 4 experts, ${nB} row(s) per token, ${nT} tokens, 2 used`, () => {
        const as = newTensor(wt, [K, M, 4]);
        const b = newTensor(F32, [K, nB, nT]);
        const ids = newTensor(I32, [2, nT]);
        return { out: ops.mulMatId(as, b, ids), inputs: [as, b, [ids, EXPERT_IDS.slice(0, 2 * nT)]] };
      });
    }
  }
  add('MUL_MAT_ID(Q4_0) 12 rows, 40 tokens on one expert (whole column chunks)', () => {
    const as = newTensor(GGMLType.Q4_0, [64, 12, 3]);
    const b = newTensor(F32, [64, 1, 40]);
    const ids = newTensor(I32, [1, 40]);
    return { out: ops.mulMatId(as, b, ids), inputs: [as, b, [ids, new Int32Array(40).fill(2)]] };
  });
  add('ADD_ID [6,2,9] + [6,4] by expert', () => {
    const a = newTensor(F32, [6, 2, 9]);
    const b = newTensor(F32, [6, 4]);
    const ids = newTensor(I32, [2, 9]);
    return { out: ops.addId(a, b, ids), inputs: [a, b, [ids, EXPERT_IDS]] };
  });
  // ties: values on a coarse grid, so rows hold equal values (ggml's std::sort order)
  const grid = (n: number, levels: number, seed: number) => {
    const r = rng(seed);
    return new Float32Array(n).map(() => Math.floor(r() * levels) / levels);
  };
  // (1 and 17: no sort, just past the 16-element runs; odd lengths; one value only)
  for (const [n, rows, levels] of [
    [8, 5, 3],
    [128, 3, 9],
    [60, 2, 1000],
    [1, 3, 1],
    [17, 4, 2],
    [33, 3, 4],
    [255, 2, 5],
    [100, 1, 1],
  ]) {
    for (const order of [ops.SortOrder.DESC, ops.SortOrder.ASC]) {
      // (indices: exactly, NMSE 0)
      add(
        `ARGSORT ${order === ops.SortOrder.DESC ? 'desc' : 'asc'} [${n},${rows}], ${levels} levels`,
        () => {
          const a = newTensor(F32, [n, rows]);
          return { out: ops.argsort(a, order), inputs: [[a, grid(n * rows, levels, n + order)]] };
        },
        0,
      );
    }
  }
  // a row that drives std::sort's quicksort to its depth limit (then heapsort), values in tied pairs
  for (const order of [ops.SortOrder.DESC, ops.SortOrder.ASC]) {
    add(
      `ARGSORT ${order === ops.SortOrder.DESC ? 'desc' : 'asc'} [64,1] past the quicksort depth (heapsort), ties`,
      () => {
        const a = newTensor(F32, [64, 1]);
        const v = medianOfThreeKiller(64).map((x) => Math.floor(x / 2) * (order === ops.SortOrder.DESC ? -1 : 1));
        return { out: ops.argsort(a, order), inputs: [[a, Float32Array.from(v)]] };
      },
      0,
    );
  }
  add('ARGSORT top 2 of [8,6], then GET_ROWS of [1,8,6] by them (router selection)', () => {
    const probs = newTensor(F32, [8, 6]);
    const top = ops.argsortTopK(probs, 2);
    const w = ops.getRows(reshape(probs, [1, 8, 6]), top);
    return { out: w, inputs: [[probs, grid(48, 4, 7)]] };
  });
  add('SUM_ROWS [13,4,3]', () => {
    const a = newTensor(F32, [13, 4, 3]);
    return { out: ops.sumRows(a), inputs: [a] };
  });
  add('DIV [7,5,3] / [1,5,3]', () => {
    const a = newTensor(F32, [7, 5, 3]);
    const b = newTensor(F32, [1, 5, 3]);
    const bd = new Float32Array(15).map((_, i) => 0.5 + i * 0.1);
    return { out: ops.div(a, b), inputs: [a, [b, bd]] };
  });
  add('SIGMOID [33,4,2]', () => {
    const a = newTensor(F32, [33, 4, 2]);
    return { out: ops.sigmoid(ops.scale(a, 8)), inputs: [a] };
  });
  add('CLAMP [33,4] to [-0.3, 0.5]', () => {
    const a = newTensor(F32, [33, 4]);
    return { out: ops.clamp(a, -0.3, 0.5), inputs: [a] };
  });
  add('SWIGLU_OAI [37,3,2] alpha 1.702 limit 0.6', () => {
    const g = newTensor(F32, [37, 3, 2]);
    const u = newTensor(F32, [37, 3, 2]);
    return { out: ops.swigluOai(ops.scale(g, 3), u, 1.702, 0.6), inputs: [g, u] };
  });
  for (const dim of [0, 1, 2, 3]) {
    add(`CONCAT dim ${dim} of a permuted [4,3,2] view and [4,3,2]`, () => {
      const a0 = newTensor(F32, [3, 4, 2]);
      const a = permute(a0, [1, 0, 2, 3]);
      const b = newTensor(F32, [4, 3, 2]);
      return { out: ops.concat(a, b, dim), inputs: [a0, b] };
    });
  }
  // the recurrent layers' convolution input and state tail (graph.ts convInput): the state's
  // rows of dConv - 1 joined with the transposed new inputs, then the last dConv - 1 columns
  // made contiguous (rows of a few elements: the kernels' short-row paths)
  for (const [nT, nS] of [
    [1, 2],
    [5, 1],
  ]) {
    add(`CONCAT dim 0 of a [3,37,${nS}] state and transposed [37,${nT},${nS}] inputs, CONT of its tail`, () => {
      const state = newTensor(F32, [3, 37, nS]);
      const x = newTensor(F32, [37, nT, nS]);
      const sx = ops.concat(state, transpose(x), 0);
      const tail = view(sx, [3, 37, nS], [sx.nb[1], sx.nb[2]], nT * sx.nb[0]);
      return { out: ops.add(ops.cont(tail), ops.scale(state, 0.5)), inputs: [state, x] };
    });
  }
  // gpt-oss's sinks in ggml-cpu's other two paths: tiled (64 query rows or more) and
  // split (one query against 512+ keys: the sink joins once, with the first key chunk,
  // here one whose keys are all hidden, or all visible), small sinks and ones above every
  // score (x8)
  for (const [nQ, nKV, hidden, sinkScale] of [
    [70, 100, 0, 1],
    [70, 100, 0, 8],
    [1, 700, 300, 1],
    [1, 700, 300, 8],
    [1, 700, 0, 1],
    [1, 700, 0, 8],
  ]) {
    add(
      `FLASH_ATTN_EXT ${nQ} queries, ${nKV} KV positions (first ${hidden} hidden), heads 6/2, sinks x${sinkScale}`,
      () => {
        const D = 32;
        const q = newTensor(F32, [D, nQ, 6]);
        const k = newTensor(F16, [D, nKV, 2]);
        const v = newTensor(F16, [D, nKV, 2]);
        const mask = newTensor(F16, [nKV, nQ]);
        const m = causalMaskF16(nKV, nQ, nKV - nQ);
        for (let i = 0; i < nQ; i++) m.fill(f32ToF16(Number.NEGATIVE_INFINITY), i * nKV, i * nKV + hidden);
        const sinks = newTensor(F32, [6]);
        const out = ops.flashAttnExtAddSinks(ops.flashAttnExt(q, k, v, mask, 0.3), sinks);
        const sv = new Float32Array(6).map((_, h) => (h - 2.5) * sinkScale);
        return { out, inputs: [q, k, v, [mask, m], [sinks, sv]] };
      },
      5e-4,
    );
  }
  // gpt-oss: sinks; DeepSeek's latent attention: K rows of D = 40 whose first 32 are V
  for (const [D, Dv, nHead, sinkScale] of [
    [16, 16, 4, 1],
    [16, 16, 4, 8],
    [40, 32, 4, 0],
  ]) {
    add(
      `FLASH_ATTN_EXT D ${D} Dv ${Dv} ${sinkScale ? `sinks x${sinkScale}` : 'V a view of K (latent cache)'}`,
      () => {
        const nKV = 37;
        const nQ = 5;
        const nHeadKV = sinkScale ? 2 : 1;
        const q = newTensor(F32, [D, nQ, nHead]);
        const k = newTensor(F16, [D, nKV, nHeadKV]);
        const v = sinkScale ? newTensor(F16, [Dv, nKV, nHeadKV]) : view(k, [Dv, nKV, 1], [k.nb[1], k.nb[2]], 0);
        const mask = newTensor(F16, [nKV, nQ]);
        let out = ops.flashAttnExt(q, k, v, mask, 0.3);
        const inputs: BuiltCase['inputs'] = [q, k, [mask, causalMaskF16(nKV, nQ, 30)]];
        if (sinkScale) {
          inputs.push(v);
          const sinks = newTensor(F32, [nHead]);
          out = ops.flashAttnExtAddSinks(out, sinks);
          inputs.push([sinks, new Float32Array(nHead).map((_, h) => (h - 1.5) * sinkScale)]);
        }
        return { out, inputs };
      },
      5e-4,
    );
  }
}

export interface CaseResult {
  name: string;
  /** NMSE of `device` against `reference`; undefined when skipped. */
  nmse?: number;
  ok: boolean;
  skipped?: string;
}

function unsupported(dev: Device, out: Tensor): string | undefined {
  const seen = new Set<Tensor>();
  const stack = [out];
  while (stack.length) {
    const t = stack.pop()!;
    if (seen.has(t)) continue;
    seen.add(t);
    if (!dev.supportsOp(t)) return `${dev.name} does not support ${t.op} ${t}`;
    stack.push(...t.src);
  }
  return undefined;
}

async function runCase(dev: Device, c: OpCase, opts: ComputeOptions): Promise<Float32Array | string> {
  const { out, inputs } = c.build();
  const why = unsupported(dev, out);
  if (why) return why;
  const data = inputs.map((x, i): [Tensor, ArrayBufferView] => (Array.isArray(x) ? x : [x, randomData(x, 1000 + i)]));
  const r = await computeOn(dev, [out], data, opts);
  return r.values[0];
}

/**
 * Run every case (or those whose name matches `filter`) on `device` and on `reference`;
 * a case passes when NMSE ≤ its limit. Cases either device cannot run are skipped.
 * `opts.ownBuffers` puts each input in a buffer of its own (computeOn).
 */
export async function compareDevices(
  device: Device,
  reference: Device,
  filter?: RegExp,
  cases: OpCase[] = opCases(),
  opts: ComputeOptions = {},
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const c of cases) {
    if (filter && !filter.test(c.name)) continue;
    const a = await runCase(device, c, opts);
    const b = await runCase(reference, c, opts);
    if (typeof a === 'string' || typeof b === 'string') {
      results.push({ name: c.name, ok: true, skipped: typeof a === 'string' ? a : (b as string) });
      continue;
    }
    const e = nmse(a, b);
    results.push({ name: c.name, nmse: e, ok: e <= (c.maxNmse ?? 1e-7) });
  }
  return results;
}
