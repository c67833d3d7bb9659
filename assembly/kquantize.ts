// ggml's K-quant reference quantizers (quantize_row_q{2,3,4,5,6}_K_ref: what
// llama-quantize writes without an importance matrix), in f32 arithmetic operation for
// operation as the C code, so the bytes are ggml's (and src/ggml/quants/quantize-k.ts's,
// which emulates the same in JavaScript; a test checks the two agree). Scalar code: the
// searches' float sums must keep C's order. Called by the host on plain rows in a memory
// of its own: x (f32) in, y (blocks) out.

import { f32ToF16, f16ToF32 } from './math';

const QK_K: i32 = 256;
const GROUP_MAX_EPS: f32 = 1e-15;

// scratch in the module's own memory would need a data segment: the host passes it
let Lbuf: usize = 0; // 256 bytes
let Laux: usize = 0; // 32 bytes
let W: usize = 0; // 32 f32
let SC: usize = 0; // 16 f32
let MN: usize = 0; // 16 f32

/** Scratch for the quantizers: 1024 bytes at s. */
export function kqInit(s: usize): void {
  Lbuf = s;
  Laux = s + 256;
  W = s + 288;
  SC = s + 416;
  MN = s + 480;
}

@inline function nearestInt(v: f32): i32 {
  const t = v + <f32>12582912;
  return <i32>(reinterpret<u32>(t) & 0x007fffff) - 0x00400000;
}

@inline function clampI(v: i32, lo: i32, hi: i32): i32 {
  return v < lo ? lo : v > hi ? hi : v;
}

@inline function ldx(x: usize, i: i32): f32 {
  return load<f32>(x + (<usize>i << 2));
}

@inline function putF16(y: usize, v: f32): f32 {
  const h = f32ToF16(v);
  store<u16>(y, <u16>h);
  return f16ToF32(h);
}

let qkxMin: f32 = 0;

/** make_qkx2_quants (see quant-search.ts). L at l (bytes), weights at w (f32). */
function makeQkx2(n: i32, nmax: i32, x: usize, w: usize, l: usize, rmin: f32, rdelta: f32, nstep: i32, useMad: bool): f32 {
  let min = ldx(x, 0);
  let max = ldx(x, 0);
  let sumW = ldx(w, 0);
  let sumX: f32 = sumW * ldx(x, 0);
  for (let i = 1; i < n; i++) {
    const xi = ldx(x, i);
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const wi = ldx(w, i);
    sumW += wi;
    sumX += wi * xi;
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (let i = 0; i < n; i++) store<u8>(l + <usize>i, 0);
    qkxMin = -min;
    return 0;
  }
  let iscale: f32 = <f32>nmax / (max - min);
  let scale: f32 = <f32>1 / iscale;
  let bestError: f32 = 0;
  for (let i = 0; i < n; i++) {
    const xi = ldx(x, i);
    const li = clampI(nearestInt(iscale * (xi - min)), 0, nmax);
    store<u8>(l + <usize>i, <u8>li);
    let diff: f32 = scale * <f32>li + min - xi;
    diff = useMad ? Mathf.abs(diff) : diff * diff;
    bestError += ldx(w, i) * diff;
  }
  if (nstep < 1) {
    qkxMin = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * <f32>is + <f32>nmax) / (max - min);
    let sumL: f32 = 0;
    let sumL2: f32 = 0;
    let sumXL: f32 = 0;
    for (let i = 0; i < n; i++) {
      const xi = ldx(x, i);
      const li = clampI(nearestInt(iscale * (xi - min)), 0, nmax);
      store<u8>(Laux + <usize>i, <u8>li);
      const wl: f32 = ldx(w, i) * <f32>li;
      sumL += wl;
      sumL2 += wl * <f32>li;
      sumXL += wl * xi;
    }
    const D: f32 = sumW * sumL2 - sumL * sumL;
    if (D > 0) {
      let thisScale: f32 = (sumW * sumXL - sumX * sumL) / D;
      let thisMin: f32 = (sumL2 * sumX - sumL * sumXL) / D;
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = sumXL / sumL2;
      }
      let cur: f32 = 0;
      for (let i = 0; i < n; i++) {
        let diff: f32 = thisScale * <f32>load<u8>(Laux + <usize>i) + thisMin - ldx(x, i);
        diff = useMad ? Mathf.abs(diff) : diff * diff;
        cur += ldx(w, i) * diff;
      }
      if (cur < bestError) {
        for (let i = 0; i < n; i++) store<u8>(l + <usize>i, load<u8>(Laux + <usize>i));
        bestError = cur;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  qkxMin = -min;
  return scale;
}

/** make_qx_quants, rmse_type 1, weights x². L at l (bytes, values +nmax). */
function makeQx(n: i32, nmax: i32, x: usize, l: usize): f32 {
  let max: f32 = 0;
  let amax: f32 = 0;
  for (let i = 0; i < n; i++) {
    const ax = Mathf.abs(ldx(x, i));
    if (ax > amax) {
      amax = ax;
      max = ldx(x, i);
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) store<u8>(l + <usize>i, 0);
    return 0;
  }
  let iscale: f32 = <f32>-nmax / max;
  let sumlx: f32 = 0;
  let suml2: f32 = 0;
  for (let i = 0; i < n; i++) {
    const xi = ldx(x, i);
    const li = clampI(nearestInt(iscale * xi), -nmax, nmax - 1);
    store<u8>(l + <usize>i, <u8>(li + nmax));
    const w: f32 = xi * xi;
    sumlx += w * xi * <f32>li;
    suml2 += w * <f32>li * <f32>li;
  }
  let scale: f32 = suml2 != 0 ? sumlx / suml2 : 0;
  let best: f32 = scale * sumlx;
  for (let is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -(<f32>nmax + <f32>0.1 * <f32>is) / max;
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const xi = ldx(x, i);
      const li = clampI(nearestInt(iscale * xi), -nmax, nmax - 1);
      const w: f32 = xi * xi;
      sumlx += w * xi * <f32>li;
      suml2 += w * <f32>li * <f32>li;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (let i = 0; i < n; i++) {
        store<u8>(l + <usize>i, <u8>(nmax + clampI(nearestInt(iscale * ldx(x, i)), -nmax, nmax - 1)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

/** make_q3_quants with do_rmse. L at l (signed bytes, then +nmax). */
function makeQ3(n: i32, nmax: i32, x: usize, l: usize): f32 {
  let max: f32 = 0;
  let amax: f32 = 0;
  for (let i = 0; i < n; i++) {
    const ax = Mathf.abs(ldx(x, i));
    if (ax > amax) {
      amax = ax;
      max = ldx(x, i);
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) store<i8>(l + <usize>i, 0);
    return 0;
  }
  const iscale: f32 = <f32>-nmax / max;
  let sumlx: f32 = 0;
  let suml2: f32 = 0;
  for (let i = 0; i < n; i++) {
    const xi = ldx(x, i);
    const li = clampI(nearestInt(iscale * xi), -nmax, nmax - 1);
    store<i8>(l + <usize>i, <i8>li);
    const w: f32 = xi * xi;
    sumlx += w * xi * <f32>li;
    suml2 += w * <f32>li * <f32>li;
  }
  for (let itry = 0; itry < 5; itry++) {
    let nChanged = 0;
    for (let i = 0; i < n; i++) {
      const xi = ldx(x, i);
      const w: f32 = xi * xi;
      const li = <i32>load<i8>(l + <usize>i);
      let slx: f32 = sumlx - w * xi * <f32>li;
      if (slx > 0) {
        let sl2: f32 = suml2 - w * <f32>li * <f32>li;
        const newL = clampI(nearestInt((xi * sl2) / slx), -nmax, nmax - 1);
        if (newL != li) {
          slx += w * xi * <f32>newL;
          sl2 += w * <f32>newL * <f32>newL;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            store<i8>(l + <usize>i, <i8>newL);
            sumlx = slx;
            suml2 = sl2;
            nChanged++;
          }
        }
      }
    }
    if (nChanged == 0) break;
  }
  for (let i = 0; i < n; i++) store<i8>(l + <usize>i, <i8>(<i32>load<i8>(l + <usize>i) + nmax));
  return suml2 > 0 ? sumlx / suml2 : 0;
}

/** Four groups of 32 two-bit values per 128 into qs bytes. */
function pack2bit(y: usize): void {
  for (let j = 0; j < QK_K; j += 128) {
    const q = y + <usize>(j >> 2);
    for (let l = 0; l < 32; l++) {
      const b = Lbuf + <usize>(j + l);
      store<u8>(q + <usize>l, load<u8>(b) | (load<u8>(b, 32) << 2) | (load<u8>(b, 64) << 4) | (load<u8>(b, 96) << 6));
    }
  }
}

/** quantize_row_q2_K_ref over nb blocks. */
export function kqQ2_K(x: usize, y: usize, nb: i32): void {
  const q4scale: f32 = 15;
  for (let i = 0; i < nb; i++, x += 1024, y += 84) {
    let maxScale: f32 = 0;
    let maxMin: f32 = 0;
    for (let j = 0; j < 16; j++) {
      const xg = x + (<usize>j << 6);
      for (let l = 0; l < 16; l++) store<f32>(W + (<usize>l << 2), Mathf.abs(ldx(xg, l)));
      const s = makeQkx2(16, 3, xg, W, Lbuf + <usize>(16 * j), <f32>-0.5, <f32>0.1, 15, true);
      store<f32>(SC + (<usize>j << 2), s);
      store<f32>(MN + (<usize>j << 2), qkxMin);
      if (s > maxScale) maxScale = s;
      if (qkxMin > maxMin) maxMin = qkxMin;
    }
    let d: f32;
    if (maxScale > 0) {
      const iscale: f32 = q4scale / maxScale;
      for (let j = 0; j < 16; j++) store<u8>(y + <usize>j, <u8>nearestInt(iscale * ldx(SC, j)));
      d = putF16(y + 80, maxScale / q4scale);
    } else {
      for (let j = 0; j < 16; j++) store<u8>(y + <usize>j, 0);
      d = putF16(y + 80, 0);
    }
    let dmin: f32;
    if (maxMin > 0) {
      const iscale: f32 = q4scale / maxMin;
      for (let j = 0; j < 16; j++) {
        store<u8>(y + <usize>j, load<u8>(y + <usize>j) | <u8>(nearestInt(iscale * ldx(MN, j)) << 4));
      }
      dmin = putF16(y + 82, maxMin / q4scale);
    } else {
      dmin = putF16(y + 82, 0);
    }
    for (let j = 0; j < 16; j++) {
      const sc = <i32>load<u8>(y + <usize>j);
      const dl: f32 = d * <f32>(sc & 0xf);
      if (dl == 0) continue;
      const ml: f32 = dmin * <f32>(sc >> 4);
      for (let ii = 0; ii < 16; ii++) {
        store<u8>(Lbuf + <usize>(16 * j + ii), <u8>clampI(nearestInt((ldx(x, 16 * j + ii) + ml) / dl), 0, 3));
      }
    }
    pack2bit(y + 16);
  }
}

/** quantize_row_q3_K_ref over nb blocks. */
export function kqQ3_K(x: usize, y: usize, nb: i32): void {
  for (let i = 0; i < nb; i++, x += 1024, y += 110) {
    const so = y + 96;
    let maxScale: f32 = 0;
    let amax: f32 = 0;
    for (let j = 0; j < 16; j++) {
      const s = makeQ3(16, 4, x + (<usize>j << 6), Lbuf + <usize>(16 * j));
      store<f32>(SC + (<usize>j << 2), s);
      const as = Mathf.abs(s);
      if (as > amax) {
        amax = as;
        maxScale = s;
      }
    }
    for (let k = 0; k < 12; k++) store<u8>(so + <usize>k, 0);
    let d: f32;
    if (maxScale != 0) {
      const iscale: f32 = <f32>-32 / maxScale;
      for (let j = 0; j < 16; j++) {
        // C stores nearest_int into an int8_t before clamping
        let l = <i32>(<i8>nearestInt(iscale * ldx(SC, j)));
        l = clampI(l, -32, 31) + 32;
        if (j < 8) store<u8>(so + <usize>j, <u8>(l & 0xf));
        else store<u8>(so + <usize>(j - 8), load<u8>(so + <usize>(j - 8)) | <u8>((l & 0xf) << 4));
        const p = so + 8 + <usize>(j % 4);
        store<u8>(p, load<u8>(p) | <u8>((l >> 4) << (2 * (j >> 2))));
      }
      d = putF16(y + 108, <f32>1 / iscale);
    } else {
      d = putF16(y + 108, 0);
    }
    for (let j = 0; j < 16; j++) {
      const lo4 = j < 8 ? <i32>load<u8>(so + <usize>j) & 0xf : <i32>load<u8>(so + <usize>(j - 8)) >> 4;
      const sc = (lo4 | (((<i32>load<u8>(so + 8 + <usize>(j % 4)) >> (2 * (j >> 2))) & 3) << 4)) - 32;
      const dl: f32 = d * <f32>sc;
      if (dl == 0) continue;
      for (let ii = 0; ii < 16; ii++) {
        store<i8>(Lbuf + <usize>(16 * j + ii), <i8>(clampI(nearestInt(ldx(x, 16 * j + ii) / dl), -4, 3) + 4));
      }
    }
    for (let k = 0; k < 32; k++) store<u8>(y + <usize>k, 0);
    for (let j = 0; j < QK_K; j++) {
      const v = load<u8>(Lbuf + <usize>j);
      if (v > 3) {
        const p = y + <usize>(j & 31);
        const bit: i32 = 1 << (j >> 5);
        store<u8>(p, <u8>(<i32>load<u8>(p) | bit));
        store<u8>(Lbuf + <usize>j, v - 4);
      }
    }
    pack2bit(y + 32);
  }
}

/** The 8 groups of 32 of a Q4_K/Q5_K block: scales, mins, codes, d, dmin; values left in Lbuf. */
function scaleMin32(x: usize, y: usize, nmax: i32, rmin: f32, nstep: i32): void {
  let maxScale: f32 = 0;
  let maxMin: f32 = 0;
  for (let j = 0; j < 8; j++) {
    const xg = x + (<usize>j << 7);
    let sumX2: f32 = 0;
    for (let l = 0; l < 32; l++) sumX2 += ldx(xg, l) * ldx(xg, l);
    const avX = Mathf.sqrt(sumX2 / <f32>32);
    for (let l = 0; l < 32; l++) store<f32>(W + (<usize>l << 2), avX + Mathf.abs(ldx(xg, l)));
    const s = makeQkx2(32, nmax, xg, W, Lbuf + <usize>(32 * j), rmin, <f32>0.1, nstep, false);
    store<f32>(SC + (<usize>j << 2), s);
    store<f32>(MN + (<usize>j << 2), qkxMin);
    if (s > maxScale) maxScale = s;
    if (qkxMin > maxMin) maxMin = qkxMin;
  }
  const invScale: f32 = maxScale > 0 ? <f32>63 / maxScale : 0;
  const invMin: f32 = maxMin > 0 ? <f32>63 / maxMin : 0;
  const so = y + 4;
  for (let j = 0; j < 8; j++) {
    // C stores nearest_int into a uint8_t, then caps at 63
    const ls = min<i32>(63, nearestInt(invScale * ldx(SC, j)) & 0xff);
    const lm = min<i32>(63, nearestInt(invMin * ldx(MN, j)) & 0xff);
    if (j < 4) {
      store<u8>(so + <usize>j, <u8>ls);
      store<u8>(so + <usize>(j + 4), <u8>lm);
    } else {
      store<u8>(so + <usize>(j + 4), <u8>((ls & 0xf) | ((lm & 0xf) << 4)));
      store<u8>(so + <usize>(j - 4), load<u8>(so + <usize>(j - 4)) | <u8>((ls >> 4) << 6));
      store<u8>(so + <usize>j, load<u8>(so + <usize>j) | <u8>((lm >> 4) << 6));
    }
  }
  const d = putF16(y, maxScale / <f32>63);
  const dmin = putF16(y + 2, maxMin / <f32>63);
  for (let j = 0; j < 8; j++) {
    let sc: i32;
    let m: i32;
    if (j < 4) {
      sc = <i32>load<u8>(so + <usize>j) & 63;
      m = <i32>load<u8>(so + <usize>(j + 4)) & 63;
    } else {
      sc = (<i32>load<u8>(so + <usize>(j + 4)) & 0xf) | ((<i32>load<u8>(so + <usize>(j - 4)) >> 6) << 4);
      m = (<i32>load<u8>(so + <usize>(j + 4)) >> 4) | ((<i32>load<u8>(so + <usize>j) >> 6) << 4);
    }
    const dl: f32 = d * <f32>sc;
    if (dl == 0) continue;
    const ml: f32 = dmin * <f32>m;
    for (let ii = 0; ii < 32; ii++) {
      store<u8>(Lbuf + <usize>(32 * j + ii), <u8>clampI(nearestInt((ldx(x, 32 * j + ii) + ml) / dl), 0, nmax));
    }
  }
}

/** quantize_row_q4_K_ref over nb blocks. */
export function kqQ4_K(x: usize, y: usize, nb: i32): void {
  for (let i = 0; i < nb; i++, x += 1024, y += 144) {
    scaleMin32(x, y, 15, -1, 20);
    for (let j = 0; j < QK_K; j += 64) {
      const q = y + 16 + <usize>(j >> 1);
      for (let l = 0; l < 32; l++) {
        const b = Lbuf + <usize>(j + l);
        store<u8>(q + <usize>l, load<u8>(b) | (load<u8>(b, 32) << 4));
      }
    }
  }
}

/** quantize_row_q5_K_ref over nb blocks. */
export function kqQ5_K(x: usize, y: usize, nb: i32): void {
  for (let i = 0; i < nb; i++, x += 1024, y += 176) {
    scaleMin32(x, y, 31, <f32>-0.5, 15);
    const qh = y + 16;
    for (let k = 0; k < 32; k++) store<u8>(qh + <usize>k, 0);
    for (let n64 = 0, k = 0; n64 < QK_K; n64 += 64, k++) {
      const ql = y + 48 + <usize>(n64 >> 1);
      for (let j = 0; j < 32; j++) {
        let l1 = <i32>load<u8>(Lbuf + <usize>(n64 + j));
        let l2 = <i32>load<u8>(Lbuf + <usize>(n64 + j + 32));
        if (l1 > 15) {
          l1 -= 16;
          const bit: i32 = 1 << (2 * k);
          store<u8>(qh + <usize>j, <u8>(<i32>load<u8>(qh + <usize>j) | bit));
        }
        if (l2 > 15) {
          l2 -= 16;
          const bit: i32 = 2 << (2 * k);
          store<u8>(qh + <usize>j, <u8>(<i32>load<u8>(qh + <usize>j) | bit));
        }
        store<u8>(ql + <usize>j, <u8>(l1 | (l2 << 4)));
      }
    }
  }
}

/** quantize_row_q6_K_ref over nb blocks. */
export function kqQ6_K(x: usize, y: usize, nb: i32): void {
  for (let i = 0; i < nb; i++, x += 1024, y += 210) {
    let maxScale: f32 = 0;
    let maxAbsScale: f32 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const s = makeQx(16, 32, x + (<usize>ib << 6), Lbuf + <usize>(16 * ib));
      store<f32>(SC + (<usize>ib << 2), s);
      const as = Mathf.abs(s);
      if (as > maxAbsScale) {
        maxAbsScale = as;
        maxScale = s;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      for (let k = 0; k < 210; k++) store<u8>(y + <usize>k, 0);
      continue;
    }
    const iscale: f32 = <f32>-128 / maxScale;
    const d = putF16(y + 208, <f32>1 / iscale);
    const so = y + 192;
    for (let ib = 0; ib < 16; ib++) store<i8>(so + <usize>ib, <i8>min<i32>(127, nearestInt(iscale * ldx(SC, ib))));
    for (let j = 0; j < 16; j++) {
      const sc = <i32>load<i8>(so + <usize>j);
      const dl: f32 = d * <f32>sc;
      if (dl == 0) continue;
      for (let ii = 0; ii < 16; ii++) {
        store<u8>(Lbuf + <usize>(16 * j + ii), <u8>(clampI(nearestInt(ldx(x, 16 * j + ii) / dl), -32, 31) + 32));
      }
    }
    for (let j = 0; j < QK_K; j += 128) {
      const ql = y + <usize>(j >> 1);
      const qh = y + 128 + <usize>(j >> 2);
      for (let l = 0; l < 32; l++) {
        const b = Lbuf + <usize>(j + l);
        const q1 = <i32>load<u8>(b);
        const q2 = <i32>load<u8>(b, 32);
        const q3 = <i32>load<u8>(b, 64);
        const q4 = <i32>load<u8>(b, 96);
        store<u8>(ql + <usize>l, <u8>((q1 & 0xf) | ((q3 & 0xf) << 4)));
        store<u8>(ql + <usize>(l + 32), <u8>((q2 & 0xf) | ((q4 & 0xf) << 4)));
        store<u8>(qh + <usize>l, <u8>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)));
      }
    }
  }
}
