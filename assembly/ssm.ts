// Recurrent layers: SSM_CONV (causal depthwise convolution over the carried inputs and the
// ubatch), SSM_SCAN (Mamba's selective scan), GATED_DELTA_NET (the gated delta rule, one
// token after another whatever the ubatch size), and L2_NORM, SOFTPLUS, RELU, SQR.
//
// Work is split into independent units (channels, heads, rows) whose arithmetic does not
// depend on how many threads share them, so results are the same bits at any thread count,
// and a token's arithmetic does not depend on the ubatch it came in.

import { ldf, stf } from './access';
import { c1, c2, c3, extra, param, rowAt, rowPtr, share0, tAddr, tNb, tNe, tRows, tType } from './desc';
import { hsum, madd } from './dot';
import { exp64 } from './math';

// ---- row ops ------------------------------------------------------------------------

const U_SOFTPLUS: i32 = 0;
const U_RELU: i32 = 1;
const U_SQR: i32 = 2;

const LN2: f64 = 0.6931471805599453;
const SQRT2: f64 = 1.4142135623730951;

/** ln x for finite x > 0, to about 1 ulp (the standard library's needs data segments). */
function log64(x: f64): f64 {
  const bits = reinterpret<i64>(x);
  let e = <i32>((bits >> 52) & 0x7ff) - 1023;
  let m = reinterpret<f64>((bits & 0xfffffffffffff) | (<i64>1023 << 52));
  if (m > SQRT2) {
    m *= 0.5;
    e++;
  }
  // ln m = 2 atanh(z), z = (m - 1) / (m + 1), |z| < 0.172
  const z = (m - 1) / (m + 1);
  const z2 = z * z;
  let p: f64 = 1.0 / 21;
  p = p * z2 + 1.0 / 19;
  p = p * z2 + 1.0 / 17;
  p = p * z2 + 1.0 / 15;
  p = p * z2 + 1.0 / 13;
  p = p * z2 + 1.0 / 11;
  p = p * z2 + 1.0 / 9;
  p = p * z2 + 1.0 / 7;
  p = p * z2 + 1.0 / 5;
  p = p * z2 + 1.0 / 3;
  p = p * z2 + 1;
  return 2 * z * p + <f64>e * LN2;
}

/** ggml's softplus: x above 20, else log(1 + eˣ) (in double, rounded once). */
@inline function softplus(x: f32): f32 {
  return x > 20 ? x : <f32>log64(1 + exp64(<f64>x));
}

function unary(node: usize, ith: i32, nth: i32, kind: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    for (let i = 0; i < ne0; i++) {
      const x = ldf(pa + <usize>i * na0, ta);
      let y: f32;
      if (kind == U_SOFTPLUS) y = softplus(x);
      else if (kind == U_RELU) y = x > 0 ? x : 0;
      else y = x * x;
      stf(pd + <usize>i * nd0, td, y);
    }
  }
}

export function k_softplus(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_SOFTPLUS);
}

export function k_relu(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_RELU);
}

export function k_sqr(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_SQR);
}

/** L2_NORM: x / max(‖x‖, eps) per row; squares summed in double. */
export function k_l2_norm(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const eps = <f32>param(node, 0);
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    let sum: f64 = 0;
    for (let i = 0; i < ne0; i++) {
      const x = ldf(pa + <usize>i * na0, ta);
      sum += <f64>(x * x);
    }
    const n = <f32>Math.sqrt(sum);
    const s: f32 = 1 / (n > eps ? n : eps);
    for (let i = 0; i < ne0; i++) stf(pd + <usize>i * nd0, td, ldf(pa + <usize>i * na0, ta) * s);
  }
}

// ---- SSM_CONV ---------------------------------------------------------------------------

const CONV_BLOCK = 16;

/**
 * t1 = sx [dConv - 1 + nT, channels, nS], t2 = c [dConv, channels]; t0 = [channels, nT, nS].
 * Split by channels; each output is Σ_i sx · c summed in order, as ggml-cpu sums it.
 */
export function k_ssm_conv(node: usize, ith: i32, nth: i32): void {
  const channels = tNe(node, 0, 0);
  const nT = tNe(node, 0, 1);
  const nS = tNe(node, 0, 2);
  const dConv = tNe(node, 2, 0);
  const ch0 = share0(channels, ith, nth);
  const ch1 = share0(channels, ith + 1, nth);
  const xs = tAddr(node, 1);
  const xs1 = tNb(node, 1, 1);
  const xs2 = tNb(node, 1, 2);
  const cw = tAddr(node, 2);
  const cw1 = tNb(node, 2, 1);
  const d = tAddr(node, 0);
  const d1 = tNb(node, 0, 1);
  const d2 = tNb(node, 0, 2);
  // channels in blocks of CONV_BLOCK, tokens inside: a token's outputs of a block are
  // neighbours (one cache line), where a channel at a time wrote each token's far apart
  for (let s = 0; s < nS; s++) {
    for (let cb = ch0; cb < ch1; cb += CONV_BLOCK) {
      const ce = min(cb + CONV_BLOCK, ch1);
      for (let t = 0; t < nT; t++) {
        const out = d + <usize>s * d2 + <usize>t * d1;
        let ch = cb;
        if (dConv == 4) {
          // four channels at once: their four taps' products, transposed so that each
          // lane adds its channel's products in the scalar loop's order
          for (; ch + 4 <= ce; ch += 4) {
            const row = xs + <usize>s * xs2 + <usize>ch * xs1 + (<usize>t << 2);
            const ker = cw + <usize>ch * cw1;
            const p0 = f32x4.mul(v128.load(row), v128.load(ker));
            const p1 = f32x4.mul(v128.load(row + xs1), v128.load(ker + cw1));
            const p2 = f32x4.mul(v128.load(row + 2 * xs1), v128.load(ker + 2 * cw1));
            const p3 = f32x4.mul(v128.load(row + 3 * xs1), v128.load(ker + 3 * cw1));
            const a = v128.shuffle<f32>(p0, p1, 0, 4, 1, 5);
            const b = v128.shuffle<f32>(p2, p3, 0, 4, 1, 5);
            const c = v128.shuffle<f32>(p0, p1, 2, 6, 3, 7);
            const e = v128.shuffle<f32>(p2, p3, 2, 6, 3, 7);
            let sum = f32x4.add(f32x4.splat(0), v128.shuffle<f32>(a, b, 0, 1, 4, 5));
            sum = f32x4.add(sum, v128.shuffle<f32>(a, b, 2, 3, 6, 7));
            sum = f32x4.add(sum, v128.shuffle<f32>(c, e, 0, 1, 4, 5));
            sum = f32x4.add(sum, v128.shuffle<f32>(c, e, 2, 3, 6, 7));
            v128.store(out + (<usize>ch << 2), sum);
          }
        }
        for (; ch < ce; ch++) {
          const row = xs + <usize>s * xs2 + <usize>ch * xs1 + (<usize>t << 2);
          const ker = cw + <usize>ch * cw1;
          let sum: f32 = 0;
          for (let i = 0; i < dConv; i++) sum += load<f32>(row + (<usize>i << 2)) * load<f32>(ker + (<usize>i << 2));
          store<f32>(out + (<usize>ch << 2), sum);
        }
      }
    }
  }
}

// ---- SSM_SCAN -----------------------------------------------------------------------------

/**
 * t1 = s [dState, headDim, nHead, nS], t2 = x [headDim, nHead, nT, nS], t3 = dt [nHead, nT,
 * nS], t4 = A [1|dState, nHead], t5 = B, t6 = C [dState, nGroup, nT, nS]. t0 holds y then
 * the final states. Split by rows of the state (sequence, head, channel): each row runs
 * through the ubatch's tokens on its own.
 */
export function k_ssm_scan(node: usize, ith: i32, nth: i32): void {
  const dState = tNe(node, 1, 0);
  const headDim = tNe(node, 1, 1);
  const nHead = tNe(node, 1, 2);
  const nS = tNe(node, 1, 3);
  const nT = tNe(node, 2, 2);
  const nGroup = tNe(node, 5, 1);
  const scalarA = tNe(node, 4, 0) == 1;
  const rows = nS * nHead * headDim;
  const r0 = share0(rows, ith, nth);
  const r1 = share0(rows, ith + 1, nth);
  const s0 = tAddr(node, 1);
  const dst = tAddr(node, 0);
  const yCount = <usize>headDim * nHead * nT * nS;
  const x0 = tAddr(node, 2);
  const dt0 = tAddr(node, 3);
  const a0 = tAddr(node, 4);
  const b0 = tAddr(node, 5);
  const c0 = tAddr(node, 6);
  const headsPerGroup = nHead / nGroup;
  const rowBytes = <usize>dState << 2;
  for (let r = r0; r < r1; r++) {
    const dd = r % headDim;
    const h = (r / headDim) % nHead;
    const s = r / (headDim * nHead);
    const g = h / headsPerGroup;
    const st = dst + ((yCount + <usize>r * dState) << 2);
    memory.copy(st, s0 + <usize>r * rowBytes, rowBytes);
    for (let t = 0; t < nT; t++) {
      const dtv = load<f32>(dt0 + ((<usize>h + <usize>nHead * (t + <usize>nT * s)) << 2));
      const dtSp = softplus(dtv);
      const xv = load<f32>(x0 + <usize>dd * 4 + <usize>h * tNb(node, 2, 1) + <usize>t * tNb(node, 2, 2) + <usize>s * tNb(node, 2, 3));
      const xdt = xv * dtSp;
      const pb = b0 + <usize>g * tNb(node, 5, 1) + <usize>t * tNb(node, 5, 2) + <usize>s * tNb(node, 5, 3);
      const pc = c0 + <usize>g * tNb(node, 6, 1) + <usize>t * tNb(node, 6, 2) + <usize>s * tNb(node, 6, 3);
      let y: f32 = 0;
      if (scalarA) {
        const dA = <f32>exp64(<f64>(dtSp * load<f32>(a0 + (<usize>h << 2))));
        const vdA = f32x4.splat(dA);
        const vxdt = f32x4.splat(xdt);
        let acc = f32x4.splat(0);
        let i = 0;
        for (; i + 4 <= dState; i += 4) {
          const o = <usize>i << 2;
          const v = f32x4.add(f32x4.mul(v128.load(st + o), vdA), f32x4.mul(v128.load(pb + o), vxdt));
          v128.store(st + o, v);
          acc = madd(v, v128.load(pc + o), acc);
        }
        y = hsum(acc);
        for (; i < dState; i++) {
          const o = <usize>i << 2;
          const v = load<f32>(st + o) * dA + load<f32>(pb + o) * xdt;
          store<f32>(st + o, v);
          y += v * load<f32>(pc + o);
        }
      } else {
        const pa = a0 + <usize>h * tNb(node, 4, 1);
        for (let i = 0; i < dState; i++) {
          const o = <usize>i << 2;
          const dA = <f32>exp64(<f64>(dtSp * load<f32>(pa + o)));
          const v = load<f32>(st + o) * dA + load<f32>(pb + o) * xdt;
          store<f32>(st + o, v);
          y += v * load<f32>(pc + o);
        }
      }
      store<f32>(dst + ((<usize>dd + <usize>headDim * (h + <usize>nHead * (t + <usize>nT * s))) << 2), y);
    }
  }
}

// ---- GATED_DELTA_NET ----------------------------------------------------------------------

/**
 * t1 = q, t2 = k [S, Hk, nT, nS], t3 = v [S, Hv, nT, nS], t4 = g [1|S, Hv, nT, nS], t5 =
 * beta [1, Hv, nT, nS], t6 = state [S, S, Hv, nS]. t0: outputs [S, Hv, nT, nS] then the
 * final states. Split by (sequence, head); the state is worked on in place in the result.
 * Per token, one pass per stored row j (column j of the state matrix): decay, dot with k,
 * the delta for j, the rank-one update, dot with q. Scratch: exp(g) per element (KDA).
 */
export function k_gated_delta_net(node: usize, ith: i32, nth: i32): void {
  const S = tNe(node, 3, 0);
  const Hv = tNe(node, 3, 1);
  const nT = tNe(node, 3, 2);
  const nS = tNe(node, 3, 3);
  const Hk = tNe(node, 1, 1);
  const perElement = tNe(node, 4, 0) == S;
  const units = Hv * nS;
  const u0 = share0(units, ith, nth);
  const u1 = share0(units, ith + 1, nth);
  const dst = tAddr(node, 0);
  const oCount = <usize>S * Hv * nT * nS;
  const scale = <f32>(1 / Math.sqrt(<f64>S));
  const decay = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const gBase = tAddr(node, 4);
  const gStride = perElement ? <usize>S : 1;
  const bBase = tAddr(node, 5);
  const matBytes = <usize>S * S * 4;
  for (let u = u0; u < u1; u++) {
    const h = u % Hv;
    const s = u / Hv;
    const hk = h % Hk;
    const M = dst + (oCount << 2) + <usize>u * matBytes;
    memory.copy(M, tAddr(node, 6) + <usize>u * matBytes, matBytes);
    for (let t = 0; t < nT; t++) {
      const pq = tAddr(node, 1) + <usize>hk * tNb(node, 1, 1) + <usize>t * tNb(node, 1, 2) + <usize>s * tNb(node, 1, 3);
      const pk = tAddr(node, 2) + <usize>hk * tNb(node, 2, 1) + <usize>t * tNb(node, 2, 2) + <usize>s * tNb(node, 2, 3);
      const pv = tAddr(node, 3) + <usize>h * tNb(node, 3, 1) + <usize>t * tNb(node, 3, 2) + <usize>s * tNb(node, 3, 3);
      const tok = <usize>h + <usize>Hv * (t + <usize>nT * s);
      const pg = gBase + ((tok * gStride) << 2);
      const beta = load<f32>(bBase + (tok << 2));
      let g0: f32 = 1;
      if (perElement) {
        for (let i = 0; i < S; i++) store<f32>(decay + (<usize>i << 2), <f32>exp64(<f64>load<f32>(pg + (<usize>i << 2))));
      } else g0 = <f32>exp64(<f64>load<f32>(pg));
      const vg = f32x4.splat(g0);
      const po = dst + (tok << 2) * <usize>S;
      let j = 0;
      if ((S & 3) == 0) {
        // rows are independent: four at a time share the loads of k, q and the decay and
        // overlap their dependency chains; each row's sums keep the order of the loop below
        for (; j + 4 <= S; j += 4) {
          const r0 = M + ((<usize>j * S) << 2);
          const r1 = r0 + (<usize>S << 2);
          const r2 = r1 + (<usize>S << 2);
          const r3 = r2 + (<usize>S << 2);
          let a0 = f32x4.splat(0);
          let a1 = f32x4.splat(0);
          let a2 = f32x4.splat(0);
          let a3 = f32x4.splat(0);
          for (let i = 0; i < S; i += 4) {
            const o = <usize>i << 2;
            const dec = perElement ? v128.load(decay + o) : vg;
            const kk = v128.load(pk + o);
            const m0 = f32x4.mul(v128.load(r0 + o), dec);
            const m1 = f32x4.mul(v128.load(r1 + o), dec);
            const m2 = f32x4.mul(v128.load(r2 + o), dec);
            const m3 = f32x4.mul(v128.load(r3 + o), dec);
            v128.store(r0 + o, m0);
            v128.store(r1 + o, m1);
            v128.store(r2 + o, m2);
            v128.store(r3 + o, m3);
            a0 = madd(m0, kk, a0);
            a1 = madd(m1, kk, a1);
            a2 = madd(m2, kk, a2);
            a3 = madd(m3, kk, a3);
          }
          const pvj = pv + (<usize>j << 2);
          const vd0 = f32x4.splat((load<f32>(pvj) - hsum(a0)) * beta);
          const vd1 = f32x4.splat((load<f32>(pvj + 4) - hsum(a1)) * beta);
          const vd2 = f32x4.splat((load<f32>(pvj + 8) - hsum(a2)) * beta);
          const vd3 = f32x4.splat((load<f32>(pvj + 12) - hsum(a3)) * beta);
          a0 = f32x4.splat(0);
          a1 = f32x4.splat(0);
          a2 = f32x4.splat(0);
          a3 = f32x4.splat(0);
          for (let i = 0; i < S; i += 4) {
            const o = <usize>i << 2;
            const kk = v128.load(pk + o);
            const qq = v128.load(pq + o);
            const m0 = madd(kk, vd0, v128.load(r0 + o));
            const m1 = madd(kk, vd1, v128.load(r1 + o));
            const m2 = madd(kk, vd2, v128.load(r2 + o));
            const m3 = madd(kk, vd3, v128.load(r3 + o));
            v128.store(r0 + o, m0);
            v128.store(r1 + o, m1);
            v128.store(r2 + o, m2);
            v128.store(r3 + o, m3);
            a0 = madd(m0, qq, a0);
            a1 = madd(m1, qq, a1);
            a2 = madd(m2, qq, a2);
            a3 = madd(m3, qq, a3);
          }
          const poj = po + (<usize>j << 2);
          store<f32>(poj, hsum(a0) * scale);
          store<f32>(poj + 4, hsum(a1) * scale);
          store<f32>(poj + 8, hsum(a2) * scale);
          store<f32>(poj + 12, hsum(a3) * scale);
        }
      }
      for (; j < S; j++) {
        const row = M + ((<usize>j * S) << 2);
        // decay the row, then its dot with k
        let acc = f32x4.splat(0);
        let i = 0;
        for (; i + 4 <= S; i += 4) {
          const o = <usize>i << 2;
          const m = f32x4.mul(v128.load(row + o), perElement ? v128.load(decay + o) : vg);
          v128.store(row + o, m);
          acc = madd(m, v128.load(pk + o), acc);
        }
        let sk = hsum(acc);
        for (; i < S; i++) {
          const o = <usize>i << 2;
          const m = load<f32>(row + o) * (perElement ? load<f32>(decay + o) : g0);
          store<f32>(row + o, m);
          sk += m * load<f32>(pk + o);
        }
        const d = (load<f32>(pv + (<usize>j << 2)) - sk) * beta;
        // the rank-one update, then the row's dot with q
        const vd = f32x4.splat(d);
        acc = f32x4.splat(0);
        i = 0;
        for (; i + 4 <= S; i += 4) {
          const o = <usize>i << 2;
          const m = madd(v128.load(pk + o), vd, v128.load(row + o));
          v128.store(row + o, m);
          acc = madd(m, v128.load(pq + o), acc);
        }
        let sq = hsum(acc);
        for (; i < S; i++) {
          const o = <usize>i << 2;
          const m = load<f32>(row + o) + load<f32>(pk + o) * d;
          store<f32>(row + o, m);
          sq += m * load<f32>(pq + o);
        }
        store<f32>(po + (<usize>j << 2), sq * scale);
      }
    }
  }
}
