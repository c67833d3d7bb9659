// GET_ROWS (gather rows of any readable type into F32), SET_ROWS (scatter F32 rows into
// any writable type: the KV-cache write), CPY and CONT (element k of the source to
// element k of the destination, any layouts, converting types).

import { ldf, ldIndex, stf } from './access';
import { dequantRow } from './dequant';
import { extra, LAYOUT_PLAIN, param, share0, tAddr, tLayout, tNb, tNe, tType } from './desc';
import { quantRow } from './quantize';
import { blockSize, T_F32, typeSize } from './types';

/** Whether rows of tensor t are contiguous inside (nb0 is the block size in bytes). */
@inline function contiguousRows(node: usize, t: i32): bool {
  return tNb(node, t, 0) == <usize>typeSize(tType(node, t));
}

/** Read row (i1, i2, i3) of tensor t (any readable type) into f32 at dst. */
export function readRow(node: usize, t: i32, i1: i32, i2: i32, i3: i32, dst: usize): void {
  const type = tType(node, t);
  const n = tNe(node, t, 0);
  const o = <usize>i1 * tNb(node, t, 1) + <usize>i2 * tNb(node, t, 2) + <usize>i3 * tNb(node, t, 3);
  if (blockSize(type) > 1 || contiguousRows(node, t)) {
    dequantRow(node, t, type, o, dst, n);
    return;
  }
  const p = tAddr(node, t) + o;
  const nb0 = tNb(node, t, 0);
  for (let i = 0; i < n; i++) store<f32>(dst + (<usize>i << 2), ldf(p + <usize>i * nb0, type));
}

/** Store f32 values at src as row (i1, i2, i3) of tensor t (any writable type). */
export function writeRow(node: usize, t: i32, i1: i32, i2: i32, i3: i32, src: usize): void {
  const type = tType(node, t);
  const n = tNe(node, t, 0);
  const o = <usize>i1 * tNb(node, t, 1) + <usize>i2 * tNb(node, t, 2) + <usize>i3 * tNb(node, t, 3);
  if (blockSize(type) > 1 || contiguousRows(node, t)) {
    quantRow(node, t, type, o, src, n);
    return;
  }
  const p = tAddr(node, t) + o;
  const nb0 = tNb(node, t, 0);
  for (let i = 0; i < n; i++) stf(p + <usize>i * nb0, type, load<f32>(src + (<usize>i << 2)));
}

/** GET_ROWS: t0 = dst F32 [n, k, ne2, ne3], t1 = a, t2 = indices I32 [k, ne2, ne3]. */
export function k_get_rows(node: usize, ith: i32, nth: i32): void {
  const k = tNe(node, 2, 0);
  const nb1 = tNe(node, 2, 1);
  const nr = k * nb1 * tNe(node, 2, 2);
  const rowsA = tNe(node, 1, 1);
  const ti = tType(node, 2);
  const scratch = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const direct = tType(node, 0) == T_F32 && tNb(node, 0, 0) == 4;
  // fewer rows than workers (a recurrent layer's state: one long F32 row per sequence):
  // every worker takes every row, and copies its share [e0, e1) of the row's elements
  const split = nr < nth && direct && tType(node, 1) == T_F32 && tNb(node, 1, 0) == 4;
  const r0 = split ? 0 : share0(nr, ith, nth);
  const r1 = split ? nr : share0(nr, ith + 1, nth);
  const e0 = share0(tNe(node, 1, 0), ith, nth);
  const e1 = share0(tNe(node, 1, 0), ith + 1, nth);
  for (let r = r0; r < r1; r++) {
    const i10 = r % k;
    const q = r / k;
    const i11 = q % nb1;
    const i12 = q / nb1;
    const pi = tAddr(node, 2) + <usize>i10 * tNb(node, 2, 0) + <usize>i11 * tNb(node, 2, 1) + <usize>i12 * tNb(node, 2, 2);
    const row = <i32>ldIndex(pi, ti);
    if (row < 0 || row >= rowsA) unreachable();
    if (direct) {
      const pd = tAddr(node, 0) + <usize>i10 * tNb(node, 0, 1) + <usize>i11 * tNb(node, 0, 2) + <usize>i12 * tNb(node, 0, 3);
      if (split) {
        const ps = tAddr(node, 1) + <usize>row * tNb(node, 1, 1) + <usize>i11 * tNb(node, 1, 2) + <usize>i12 * tNb(node, 1, 3);
        memory.copy(pd + (<usize>e0 << 2), ps + (<usize>e0 << 2), <usize>(e1 - e0) << 2);
      } else readRow(node, 1, row, i11, i12, pd);
    } else {
      readRow(node, 1, row, i11, i12, scratch);
      writeRow(node, 0, i10, i11, i12, scratch);
    }
  }
}

/** SET_ROWS: t0 = dst (view of the cache), t1 = b F32 rows, t2 = indices [k, ne2', ne3']. */
export function k_set_rows(node: usize, ith: i32, nth: i32): void {
  const k = tNe(node, 1, 1);
  const ne2 = tNe(node, 1, 2);
  const nr = k * ne2 * tNe(node, 1, 3);
  const rowsD = tNe(node, 0, 1);
  const ti = tType(node, 2);
  const cne1 = tNe(node, 2, 1);
  const cne2 = tNe(node, 2, 2);
  const scratch = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  // fewer rows than workers (a recurrent layer's new state): every worker takes every
  // row, and copies its share [e0, e1) of the row's elements
  const split = nr < nth && tType(node, 0) == T_F32 && tNb(node, 0, 0) == 4 && tType(node, 1) == T_F32 && tNb(node, 1, 0) == 4;
  const r0 = split ? 0 : share0(nr, ith, nth);
  const r1 = split ? nr : share0(nr, ith + 1, nth);
  const e0 = share0(tNe(node, 1, 0), ith, nth);
  const e1 = share0(tNe(node, 1, 0), ith + 1, nth);
  for (let r = r0; r < r1; r++) {
    const i = r % k;
    const q = r / k;
    const i12 = q % ne2;
    const i13 = q / ne2;
    const pi = tAddr(node, 2) + <usize>i * tNb(node, 2, 0) + <usize>(i12 % cne1) * tNb(node, 2, 1) + <usize>(i13 % cne2) * tNb(node, 2, 2);
    const dr = <i32>ldIndex(pi, ti);
    if (dr < 0 || dr >= rowsD) unreachable();
    if (split) {
      const ps = tAddr(node, 1) + <usize>i * tNb(node, 1, 1) + <usize>i12 * tNb(node, 1, 2) + <usize>i13 * tNb(node, 1, 3);
      const pd = tAddr(node, 0) + <usize>dr * tNb(node, 0, 1) + <usize>i12 * tNb(node, 0, 2) + <usize>i13 * tNb(node, 0, 3);
      memory.copy(pd + (<usize>e0 << 2), ps + (<usize>e0 << 2), <usize>(e1 - e0) << 2);
      continue;
    }
    readRow(node, 1, i, i12, i13, scratch);
    writeRow(node, 0, dr, i12, i13, scratch);
  }
}

/**
 * CPY / CONT: t0 = destination, t1 = source. Rows of the source are split over threads;
 * each is read as f32 and its elements go to the destination's elements of the same
 * linear index (whole rows when the destination is quantized, which then has the same ne0).
 */
export function k_cpy(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 1, 0);
  const ne1 = tNe(node, 1, 1);
  const ne2 = tNe(node, 1, 2);
  const nr = ne1 * ne2 * tNe(node, 1, 3);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const d0 = tNe(node, 0, 0);
  const d1 = tNe(node, 0, 1);
  const d2 = tNe(node, 0, 2);
  const dn0 = tNb(node, 0, 0);
  const dn1 = tNb(node, 0, 1);
  const dn2 = tNb(node, 0, 2);
  const dn3 = tNb(node, 0, 3);
  const dq = blockSize(td) > 1;
  const scratch = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const pd0 = tAddr(node, 0);
  if (
    td == T_F32 &&
    tType(node, 1) == T_F32 &&
    tLayout(node, 1) == LAYOUT_PLAIN &&
    dn0 == 4 &&
    dn1 == <usize>d0 * 4 &&
    dn2 == dn1 * <usize>d1 &&
    dn3 == dn2 * <usize>d2
  ) {
    // F32 to a contiguous F32 destination (CONT of a view: the recurrent layers' state
    // tails, gates): each source row, strided or not, to the next ne0 elements. Rows are
    // often a few elements long (a convolution state's 3), so the row's place is counted
    // up rather than divided out, and short rows are copied inline.
    const ps = tAddr(node, 1);
    const sn0 = tNb(node, 1, 0);
    const sn1 = tNb(node, 1, 1);
    const sn2 = tNb(node, 1, 2);
    const sn3 = tNb(node, 1, 3);
    let i1 = r0 % ne1;
    const q0 = r0 / ne1;
    let i2 = q0 % ne2;
    let i3 = q0 / ne2;
    let dst = pd0 + ((<usize>r0 * <usize>ne0) << 2);
    const rowBytes = <usize>ne0 << 2;
    const short = ne0 <= 4 && sn0 == 4;
    const srcEnd = extentEnd(node, 1);
    const dstEnd = pd0 + <usize>r1 * rowBytes;
    for (let r = r0; r < r1; r++) {
      const src = ps + <usize>i1 * sn1 + <usize>i2 * sn2 + <usize>i3 * sn3;
      // rows of up to four contiguous elements (a convolution state's tail) as one vector:
      // its store may pass the row's end into the next rows, only this range's, which it
      // writes next; its load stays within the source's extent
      if (short && dst + 16 <= dstEnd && src + 16 <= srcEnd) v128.store(dst, v128.load(src));
      else copyF32(dst, 4, src, sn0, ne0);
      dst += rowBytes;
      if (++i1 == ne1) {
        i1 = 0;
        if (++i2 == ne2) {
          i2 = 0;
          i3++;
        }
      }
    }
    return;
  }
  for (let r = r0; r < r1; r++) {
    const i1 = r % ne1;
    const q = r / ne1;
    const i2 = q % ne2;
    const i3 = q / ne2;
    readRow(node, 1, i1, i2, i3, scratch);
    if (dq) {
      const j1 = r % d1;
      const qq = r / d1;
      writeRow(node, 0, j1, qq % d2, qq / d2, scratch);
      continue;
    }
    // destination coordinates of linear element r * ne0
    const lin = <i64>r * ne0;
    let j0 = <i32>(lin % d0);
    let rest = lin / d0;
    let j1 = <i32>(rest % d1);
    rest /= d1;
    let j2 = <i32>(rest % d2);
    let j3 = <i32>(rest / d2);
    for (let i = 0; i < ne0; i++) {
      const p = pd0 + <usize>j0 * dn0 + <usize>j1 * dn1 + <usize>j2 * dn2 + <usize>j3 * dn3;
      stf(p, td, load<f32>(scratch + (<usize>i << 2)));
      if (++j0 == d0) {
        j0 = 0;
        if (++j1 == d1) {
          j1 = 0;
          if (++j2 == d2) {
            j2 = 0;
            j3++;
          }
        }
      }
    }
  }
}

/**
 * CONCAT: t0 = dst (contiguous), t1 = a, t2 = b (plain types, any layout); param 0 = the
 * dimension joined. Each dst row is split over threads; its elements come from a below
 * a's extent in that dimension, from b above it.
 */
export function k_concat(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = ne1 * ne2 * tNe(node, 0, 3);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const dim = <i32>param(node, 0);
  const cut = tNe(node, 1, dim);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const tb = tType(node, 2);
  if (td == T_F32 && ta == T_F32 && tb == T_F32 && tLayout(node, 1) == LAYOUT_PLAIN && tLayout(node, 2) == LAYOUT_PLAIN) {
    concatF32(node, r0, r1, dim, cut);
    return;
  }
  for (let r = r0; r < r1; r++) {
    const i1 = r % ne1;
    const q = r / ne1;
    const i2 = q % ne2;
    const i3 = q / ne2;
    const pd = tAddr(node, 0) + <usize>i1 * tNb(node, 0, 1) + <usize>i2 * tNb(node, 0, 2) + <usize>i3 * tNb(node, 0, 3);
    for (let i0 = 0; i0 < ne0; i0++) {
      let j0 = i0;
      let j1 = i1;
      let j2 = i2;
      let j3 = i3;
      let t = 1;
      const c = dim == 0 ? j0 : dim == 1 ? j1 : dim == 2 ? j2 : j3;
      if (c >= cut) {
        t = 2;
        if (dim == 0) j0 -= cut;
        else if (dim == 1) j1 -= cut;
        else if (dim == 2) j2 -= cut;
        else j3 -= cut;
      }
      const p =
        tAddr(node, t) + <usize>j0 * tNb(node, t, 0) + <usize>j1 * tNb(node, t, 1) + <usize>j2 * tNb(node, t, 2) +
        <usize>j3 * tNb(node, t, 3);
      stf(pd + <usize>i0 * tNb(node, 0, 0), td, ldf(p, t == 1 ? ta : tb));
    }
  }
}

/**
 * CONCAT of F32 tensors, dst rows r0..r1 (the recurrent layers' convolution inputs: rows of
 * a few elements, so the row's place is counted up rather than divided out).
 */
function concatF32(node: usize, r0: i32, r1: i32, dim: i32, cut: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  // strides and bases in locals: the stores below may alias the node record for all the
  // compiler knows, so reading them there would reload them every row
  const pd0 = tAddr(node, 0);
  const nd0 = tNb(node, 0, 0);
  const nd1 = tNb(node, 0, 1);
  const nd2 = tNb(node, 0, 2);
  const nd3 = tNb(node, 0, 3);
  const pa0 = tAddr(node, 1);
  const na0 = tNb(node, 1, 0);
  const na1 = tNb(node, 1, 1);
  const na2 = tNb(node, 1, 2);
  const na3 = tNb(node, 1, 3);
  const pb0 = tAddr(node, 2);
  const nb0 = tNb(node, 2, 0);
  const nb1 = tNb(node, 2, 1);
  const nb2 = tNb(node, 2, 2);
  const nb3 = tNb(node, 2, 3);
  // b's coordinates are a's shifted back by a's extent in the joined dimension
  const s1 = dim == 1 ? <usize>cut * nb1 : 0;
  const s2 = dim == 2 ? <usize>cut * nb2 : 0;
  const s3 = dim == 3 ? <usize>cut * nb3 : 0;
  const quad = dim == 0 && ne0 == 4 && cut == 3 && nd0 == 4 && na0 == 4;
  const aEnd = extentEnd(node, 1);
  let i1 = r0 % ne1;
  const q0 = r0 / ne1;
  let i2 = q0 % ne2;
  let i3 = q0 / ne2;
  if (quad) {
    // a decode step's convolution input: per row the state's three elements and the
    // token's, as one vector (its load reads one element past a's row: within a's extent
    // but at the end), pointers stepped along runs of dim 1
    for (let r = r0; r < r1; ) {
      const run = min(ne1 - i1, r1 - r);
      let pd = pd0 + <usize>i1 * nd1 + <usize>i2 * nd2 + <usize>i3 * nd3;
      let pa = pa0 + <usize>i1 * na1 + <usize>i2 * na2 + <usize>i3 * na3;
      let pb = pb0 + <usize>i1 * nb1 + <usize>i2 * nb2 + <usize>i3 * nb3;
      for (let k = 0; k < run; k++) {
        if (pa + 16 <= aEnd) v128.store(pd, f32x4.replace_lane(v128.load(pa), 3, load<f32>(pb)));
        else {
          copyF32(pd, 4, pa, 4, 3);
          store<f32>(pd + 12, load<f32>(pb));
        }
        pd += nd1;
        pa += na1;
        pb += nb1;
      }
      r += run;
      i1 = 0;
      if (++i2 == ne2) {
        i2 = 0;
        i3++;
      }
    }
    return;
  }
  for (let r = r0; r < r1; r++) {
    const pd = pd0 + <usize>i1 * nd1 + <usize>i2 * nd2 + <usize>i3 * nd3;
    const pa = pa0 + <usize>i1 * na1 + <usize>i2 * na2 + <usize>i3 * na3;
    const pb = pb0 + <usize>i1 * nb1 + <usize>i2 * nb2 + <usize>i3 * nb3;
    if (dim == 0) {
      copyF32(pd, nd0, pa, na0, cut);
      copyF32(pd + <usize>cut * nd0, nd0, pb, nb0, ne0 - cut);
    } else {
      const inA = dim == 1 ? i1 < cut : dim == 2 ? i2 < cut : i3 < cut;
      if (inA) copyF32(pd, nd0, pa, na0, ne0);
      else copyF32(pd, nd0, pb - s1 - s2 - s3, nb0, ne0);
    }
    if (++i1 == ne1) {
      i1 = 0;
      if (++i2 == ne2) {
        i2 = 0;
        i3++;
      }
    }
  }
}

/** One past the last byte of tensor t's elements (plain F32 layout). */
@inline function extentEnd(node: usize, t: i32): usize {
  let end = tAddr(node, t) + 4;
  for (let d = 0; d < 4; d++) end += <usize>(tNe(node, t, d) - 1) * tNb(node, t, d);
  return end;
}

/**
 * n F32 elements from src (stride sn bytes) to dst (stride dn bytes). memory.copy is a call
 * out of the module in V8, which costs more than a few elements' loads and stores.
 */
@inline function copyF32(dst: usize, dn: usize, src: usize, sn: usize, n: i32): void {
  if (dn == 4 && sn == 4) {
    if (n >= 32) {
      memory.copy(dst, src, <usize>n << 2);
      return;
    }
    let i = 0;
    for (; i + 4 <= n; i += 4) v128.store(dst + (<usize>i << 2), v128.load(src + (<usize>i << 2)));
    for (; i < n; i++) store<f32>(dst + (<usize>i << 2), load<f32>(src + (<usize>i << 2)));
    return;
  }
  for (let i = 0; i < n; i++) store<f32>(dst + <usize>i * dn, load<f32>(src + <usize>i * sn));
}
