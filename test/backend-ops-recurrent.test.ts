// The recurrent layers' ops on the reference device against independent formulations:
// the gated delta rule against the chunked form llama.cpp's graphs use on GPUs (a
// triangular solve per chunk, no state updates inside a chunk), Mamba-2's selective scan
// against its quadratic "state-space duality" form, the convolution against sliding
// windows over the carried inputs, one token at a time; and the activations against
// their definitions and ggml's cut-offs.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn, type Inputs } from '../src/backends/testing/compute.js';
import { rng } from '../src/backends/testing/op-harness.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, type Tensor, transpose } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

const { F32 } = GGMLType;

async function run(out: Tensor, inputs: Inputs): Promise<Float32Array> {
  return (await computeOn(referenceDevice, [out], inputs)).values[0];
}

function uniform(n: number, lo: number, hi: number, seed: number): Float32Array {
  const r = rng(seed);
  return new Float32Array(n).map(() => lo + (hi - lo) * r());
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i]));
    if (!(d <= tol)) assert.fail(`${what}[${i}] = ${actual[i]}, expected ${expected[i]}`);
    worst = Math.max(worst, d);
  }
}

test('SOFTPLUS, RELU, SQR and L2_NORM follow their definitions (softplus is x above 20)', async () => {
  const a = newTensor(F32, [6]);
  const xs = new Float32Array([-40, -1, 0, 3, 20.5, 50]);
  const sp = await run(ops.softplus(a), [[a, xs]]);
  assertClose(
    sp,
    [Math.log1p(Math.exp(-40)), Math.log1p(Math.exp(-1)), Math.log(2), Math.log1p(Math.exp(3)), 20.5, 50],
    1e-6,
    'softplus',
  );
  assert.deepEqual(Array.from(await run(ops.relu(a), [[a, xs]])), [0, 0, 0, 3, 20.5, 50]);
  assert.deepEqual(Array.from(await run(ops.sqr(a), [[a, xs]])), [1600, 1, 0, 9, 420.25, 2500]);
  const m = newTensor(F32, [3, 2]);
  const l2 = await run(ops.l2Norm(m, 1e-6), [[m, new Float32Array([3, 0, 4, 0, 0, 0])]]);
  assertClose(l2, [0.6, 0, 0.8, 0, 0, 0], 1e-7, 'l2_norm');
  // a column of a transposed matrix: rows of the view
  const t = newTensor(F32, [2, 3]);
  const l2t = await run(ops.l2Norm(transpose(t), 1e-6), [[t, new Float32Array([1, 2, 2, 0, 0, 0])]]);
  // rows of the view are t's columns: [1, 2, 0] and [2, 0, 0]
  assertClose(l2t, [1 / Math.sqrt(5), 2 / Math.sqrt(5), 0, 1, 0, 0], 1e-7, 'l2_norm of a transposed view');
});

test('SSM_CONV over carried inputs equals one token at a time with the window sliding', async () => {
  const dConv = 4;
  const ch = 5;
  const nT = 6;
  const carried = uniform((dConv - 1) * ch, -1, 1, 1);
  const xs = uniform(nT * ch, -1, 1, 2); // [ch, nT]: token t's channels at t*ch
  const kernel = uniform(dConv * ch, -1, 1, 3);
  // the whole ubatch at once: sx [dConv - 1 + nT, ch]
  const sxAll = new Float32Array((dConv - 1 + nT) * ch);
  for (let c = 0; c < ch; c++) {
    for (let i = 0; i < dConv - 1; i++) sxAll[c * (dConv - 1 + nT) + i] = carried[c * (dConv - 1) + i];
    for (let t = 0; t < nT; t++) sxAll[c * (dConv - 1 + nT) + dConv - 1 + t] = xs[t * ch + c];
  }
  const sx = newTensor(F32, [dConv - 1 + nT, ch, 1]);
  const c = newTensor(F32, [dConv, ch]);
  const all = await run(ops.ssmConv(sx, c), [
    [sx, sxAll],
    [c, kernel],
  ]);
  // token by token: the state is the last dConv - 1 inputs
  const state = Float32Array.from(carried);
  for (let t = 0; t < nT; t++) {
    const sx1 = newTensor(F32, [dConv, ch, 1]);
    const c1 = newTensor(F32, [dConv, ch]);
    const win = new Float32Array(dConv * ch);
    for (let k = 0; k < ch; k++) {
      for (let i = 0; i < dConv - 1; i++) win[k * dConv + i] = state[k * (dConv - 1) + i];
      win[k * dConv + dConv - 1] = xs[t * ch + k];
    }
    const one = await run(ops.ssmConv(sx1, c1), [
      [sx1, win],
      [c1, kernel],
    ]);
    assert.deepEqual(Array.from(one), Array.from(all.subarray(t * ch, (t + 1) * ch)), `token ${t}`);
    for (let k = 0; k < ch; k++)
      for (let i = 0; i < dConv - 1; i++) state[k * (dConv - 1) + i] = win[k * dConv + i + 1];
    // and the definition
    for (let k = 0; k < ch; k++) {
      let sum = 0;
      for (let i = 0; i < dConv; i++) sum += win[k * dConv + i] * kernel[k * dConv + i];
      assert.ok(Math.abs(one[k] - sum) < 1e-6);
    }
  }
});

/**
 * The chunked gated delta rule (as llama.cpp's build_delta_net_chunking computes it), in
 * double precision: within a chunk the state is never updated; u (the values' corrections)
 * come from a forward substitution over the chunk's key products, and outputs from the
 * chunk's start state plus key-query products. One head, one sequence; state [dk][dv].
 */
function chunkedDeltaRule(
  S: number,
  q: number[][],
  k: number[][],
  v: number[][],
  g: number[],
  beta: number[],
  s0: number[][],
  chunk: number,
): { out: number[][]; state: number[][] } {
  const scale = 1 / Math.sqrt(S);
  let st = s0.map((r) => r.slice());
  const out: number[][] = [];
  const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
  for (let c0 = 0; c0 < q.length; c0 += chunk) {
    const n = Math.min(chunk, q.length - c0);
    const G: number[] = [];
    let acc = 0;
    for (let t = 0; t < n; t++) {
      acc += g[c0 + t];
      G.push(acc);
    }
    // S0ᵀ x for a key-space vector x: [dv]
    const s0T = (x: number[]) => Array.from({ length: S }, (_, j) => st.reduce((s, row, i) => s + row[j] * x[i], 0));
    const u: number[][] = [];
    for (let t = 0; t < n; t++) {
      const kt = k[c0 + t];
      const base = s0T(kt).map((x) => Math.exp(G[t]) * x);
      const ut = v[c0 + t].map((x, j) => x - base[j]);
      for (let s = 0; s < t; s++) {
        const w = Math.exp(G[t] - G[s]) * dot(k[c0 + s], kt);
        for (let j = 0; j < S; j++) ut[j] -= w * u[s][j];
      }
      u.push(ut.map((x) => x * beta[c0 + t]));
    }
    for (let t = 0; t < n; t++) {
      const qt = q[c0 + t];
      const o = s0T(qt).map((x) => Math.exp(G[t]) * x);
      for (let s = 0; s <= t; s++) {
        const w = Math.exp(G[t] - G[s]) * dot(k[c0 + s], qt);
        for (let j = 0; j < S; j++) o[j] += w * u[s][j];
      }
      out.push(o.map((x) => x * scale));
    }
    const last = G[n - 1];
    const next = st.map((row) => row.map((x) => Math.exp(last) * x));
    for (let s = 0; s < n; s++) {
      const w = Math.exp(last - G[s]);
      for (let i = 0; i < S; i++) for (let j = 0; j < S; j++) next[i][j] += w * k[c0 + s][i] * u[s][j];
    }
    st = next;
  }
  return { out, state: st };
}

test('GATED_DELTA_NET (token by token) equals the chunked delta rule, several heads and sequences', async () => {
  const S = 8;
  const Hk = 2;
  const Hv = 4;
  const nT = 11;
  const nS = 2;
  const q = newTensor(F32, [S, Hk, nT, nS]);
  const k = newTensor(F32, [S, Hk, nT, nS]);
  const v = newTensor(F32, [S, Hv, nT, nS]);
  const g = newTensor(F32, [1, Hv, nT, nS]);
  const beta = newTensor(F32, [1, Hv, nT, nS]);
  const state = newTensor(F32, [S, S, Hv, nS]);
  // unit-length keys and queries, as after the graph's L2 norm
  const unit = (n: number, seed: number) => {
    const x = uniform(n, -1, 1, seed);
    for (let r = 0; r < n / S; r++) {
      const len = Math.hypot(...x.subarray(r * S, (r + 1) * S));
      for (let i = 0; i < S; i++) x[r * S + i] /= len;
    }
    return x;
  };
  const data = {
    q: unit(q.nelements, 1),
    k: unit(k.nelements, 2),
    v: uniform(v.nelements, -1, 1, 3),
    g: uniform(g.nelements, -2, -0.01, 4),
    beta: uniform(beta.nelements, 0.1, 0.9, 5),
    s: uniform(state.nelements, -0.5, 0.5, 6),
  };
  const out = await run(ops.gatedDeltaNet(q, k, v, g, beta, state), [
    [q, data.q],
    [k, data.k],
    [v, data.v],
    [g, data.g],
    [beta, data.beta],
    [state, data.s],
  ]);
  const oCount = S * Hv * nT * nS;
  assert.equal(out.length, oCount + S * S * Hv * nS);
  for (let s = 0; s < nS; s++) {
    for (let h = 0; h < Hv; h++) {
      const hk = h % Hk;
      const vec = (arr: Float32Array, heads: number, hh: number, t: number) =>
        Array.from(arr.subarray(S * (hh + heads * (t + nT * s)), S * (hh + heads * (t + nT * s)) + S));
      const qs = Array.from({ length: nT }, (_, t) => vec(data.q, Hk, hk, t));
      const ks = Array.from({ length: nT }, (_, t) => vec(data.k, Hk, hk, t));
      const vs = Array.from({ length: nT }, (_, t) => vec(data.v, Hv, h, t));
      const gs = Array.from({ length: nT }, (_, t) => data.g[h + Hv * (t + nT * s)]);
      const bs = Array.from({ length: nT }, (_, t) => data.beta[h + Hv * (t + nT * s)]);
      // stored state row j = column j of the matrix: s0[i][j] = stored[j*S + i]
      const base = S * S * (h + Hv * s);
      const s0 = Array.from({ length: S }, (_, i) => Array.from({ length: S }, (_, j) => data.s[base + j * S + i]));
      for (const chunk of [4, 64]) {
        const ref = chunkedDeltaRule(S, qs, ks, vs, gs, bs, s0, chunk);
        for (let t = 0; t < nT; t++) {
          const got = out.subarray(S * (h + Hv * (t + nT * s)), S * (h + Hv * (t + nT * s)) + S);
          assertClose(got, ref.out[t], 2e-5, `seq ${s} head ${h} token ${t} chunk ${chunk}`);
        }
        const gotState = out.subarray(oCount + base, oCount + base + S * S);
        const want = new Float32Array(S * S);
        for (let i = 0; i < S; i++) for (let j = 0; j < S; j++) want[j * S + i] = ref.state[i][j];
        assertClose(gotState, want, 2e-5, `seq ${s} head ${h} final state chunk ${chunk}`);
      }
    }
  }
});

test('SSM_SCAN (Mamba-2) equals the quadratic state-space-duality form', async () => {
  const dState = 5;
  const headDim = 3;
  const nHead = 4;
  const nGroup = 2;
  const nT = 7;
  const s = newTensor(F32, [dState, headDim, nHead, 1]);
  const x = newTensor(F32, [headDim, nHead, nT, 1]);
  const dt = newTensor(F32, [nHead, nT, 1]);
  const A = newTensor(F32, [1, nHead]);
  const B = newTensor(F32, [dState, nGroup, nT, 1]);
  const C = newTensor(F32, [dState, nGroup, nT, 1]);
  const d = {
    s: uniform(s.nelements, -1, 1, 1),
    x: uniform(x.nelements, -1, 1, 2),
    dt: uniform(dt.nelements, -3, 3, 3),
    A: uniform(A.nelements, -2, -0.1, 4),
    B: uniform(B.nelements, -1, 1, 5),
    C: uniform(C.nelements, -1, 1, 6),
  };
  const out = await run(ops.ssmScan(s, x, dt, A, B, C), [
    [s, d.s],
    [x, d.x],
    [dt, d.dt],
    [A, d.A],
    [B, d.B],
    [C, d.C],
  ]);
  const sp = (z: number) => (z > 20 ? z : Math.log1p(Math.exp(z)));
  for (let h = 0; h < nHead; h++) {
    const grp = Math.floor(h / (nHead / nGroup));
    const delta = Array.from({ length: nT }, (_, t) => sp(d.dt[h + nHead * t]));
    // L[t][τ] = exp(A Σ_{σ=τ+1..t} Δσ): the decay from token τ to token t
    const cum = [0];
    for (let t = 0; t < nT; t++) cum.push(cum[t] + delta[t] * d.A[h]);
    const Bv = (t: number, i: number) => d.B[i + dState * (grp + nGroup * t)];
    const Cv = (t: number, i: number) => d.C[i + dState * (grp + nGroup * t)];
    for (let p = 0; p < headDim; p++) {
      for (let t = 0; t < nT; t++) {
        let y = 0;
        for (let i = 0; i < dState; i++) y += Cv(t, i) * Math.exp(cum[t + 1]) * d.s[i + dState * (p + headDim * h)];
        for (let tau = 0; tau <= t; tau++) {
          let cb = 0;
          for (let i = 0; i < dState; i++) cb += Cv(t, i) * Bv(tau, i);
          y += Math.exp(cum[t + 1] - cum[tau + 1]) * cb * delta[tau] * d.x[p + headDim * (h + nHead * tau)];
        }
        const got = out[p + headDim * (h + nHead * t)];
        assert.ok(
          Math.abs(got - y) <= 1e-5 * Math.max(1, Math.abs(y)),
          `head ${h} dim ${p} token ${t}: ${got} vs ${y}`,
        );
      }
      // the final state: decayed start plus every token's contribution
      for (let i = 0; i < dState; i++) {
        let st = Math.exp(cum[nT]) * d.s[i + dState * (p + headDim * h)];
        for (let tau = 0; tau < nT; tau++) {
          st += Math.exp(cum[nT] - cum[tau + 1]) * Bv(tau, i) * delta[tau] * d.x[p + headDim * (h + nHead * tau)];
        }
        const got = out[x.nelements + i + dState * (p + headDim * h)];
        assert.ok(Math.abs(got - st) <= 1e-5 * Math.max(1, Math.abs(st)), `state head ${h} dim ${p} elem ${i}`);
      }
    }
  }
});

test('CONCAT (b packed, or a transposed view as convInput joins it) and SIGMOID on the reference device', async () => {
  const ne: [number, number, number][] = [
    [3, 5, 2],
    [4, 5, 2],
  ];
  const a = newTensor(F32, ne[0]);
  const xa = uniform(30, -1, 1, 7);
  for (const dim of [0, 1, 2]) {
    const shapeB = [...ne[0]];
    shapeB[dim] = 4;
    const b = newTensor(F32, shapeB);
    const nB = shapeB[0] * shapeB[1] * shapeB[2];
    const xb = uniform(nB, -1, 1, 8 + dim);
    // packed rows, and b read through a transposed view (elements not packed)
    const bt = newTensor(F32, [shapeB[1], shapeB[0], shapeB[2]]);
    const xbt = new Float32Array(nB);
    for (let k = 0; k < shapeB[2]; k++)
      for (let j = 0; j < shapeB[1]; j++)
        for (let i = 0; i < shapeB[0]; i++)
          xbt[j + shapeB[1] * (i + shapeB[0] * k)] = xb[i + shapeB[0] * (j + shapeB[1] * k)];
    const outs = [
      await run(ops.concat(a, b, dim), [
        [a, xa],
        [b, xb],
      ]),
      await run(ops.concat(a, transpose(bt), dim), [
        [a, xa],
        [bt, xbt],
      ]),
    ];
    const ne2 = [...ne[0]];
    ne2[dim] += 4;
    for (const out of outs) {
      for (let k = 0; k < ne2[2]; k++)
        for (let j = 0; j < ne2[1]; j++)
          for (let i = 0; i < ne2[0]; i++) {
            const idx = [i, j, k];
            const fromB = idx[dim] >= ne[0][dim];
            if (fromB) idx[dim] -= ne[0][dim];
            const want = fromB
              ? xb[idx[0] + shapeB[0] * (idx[1] + shapeB[1] * idx[2])]
              : xa[idx[0] + ne[0][0] * (idx[1] + ne[0][1] * idx[2])];
            assert.equal(out[i + ne2[0] * (j + ne2[1] * k)], want, `dim ${dim} [${i}, ${j}, ${k}]`);
          }
    }
  }
  const s = await run(ops.sigmoid(a), [[a, xa]]);
  assertClose(
    s,
    Array.from(xa, (x) => 1 / (1 + Math.exp(-x))),
    1e-7,
    'sigmoid',
  );
});
