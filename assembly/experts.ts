// Kernels of mixture-of-experts routing besides the products (matmul.ts, k_mmid):
// ARGSORT (each row's indices ordered by value, ties as libstdc++'s std::sort leaves
// them, which is what ggml-cpu runs), ADD_ID (per-expert biases) and gpt-oss's clamped
// SwiGLU. Work is split by rows.

import { stf } from './access';
import { C_F32, F_ONE } from './consts';
import { param, share0, tAddr, tNb, tNe, tType } from './desc';
import { exp64, expf4 } from './math';
import { T_F32 } from './types';

// ---- ARGSORT: libstdc++'s introsort on i32 indices (see reference/ops/sort.ts) ----------

/** The row being sorted: values at sortVals (f32, contiguous), descending when sortDesc. */
let sortVals: usize = 0;
let sortDesc = false;

@inline function less(a: i32, b: i32): bool {
  const x = load<f32>(sortVals + (<usize>a << 2));
  const y = load<f32>(sortVals + (<usize>b << 2));
  return sortDesc ? x > y : x < y;
}

@inline function at(p: usize, i: i32): i32 {
  return load<i32>(p + (<usize>i << 2));
}

@inline function put(p: usize, i: i32, v: i32): void {
  store<i32>(p + (<usize>i << 2), v);
}

@inline function swap(p: usize, i: i32, j: i32): void {
  const t = at(p, i);
  put(p, i, at(p, j));
  put(p, j, t);
}

function pushHeap(p: usize, first: i32, hole: i32, top: i32, value: i32): void {
  let parent = (hole - 1) / 2;
  while (hole > top && less(at(p, first + parent), value)) {
    put(p, first + hole, at(p, first + parent));
    hole = parent;
    parent = (hole - 1) / 2;
  }
  put(p, first + hole, value);
}

function adjustHeap(p: usize, first: i32, hole: i32, len: i32, value: i32): void {
  const top = hole;
  let child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(at(p, first + child), at(p, first + child - 1))) child--;
    put(p, first + hole, at(p, first + child));
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    put(p, first + hole, at(p, first + child - 1));
    hole = child - 1;
  }
  pushHeap(p, first, hole, top, value);
}

function heapSort(p: usize, first: i32, last: i32): void {
  const len = last - first;
  if (len >= 2) {
    for (let parent = (len - 2) / 2; ; parent--) {
      adjustHeap(p, first, parent, len, at(p, first + parent));
      if (parent == 0) break;
    }
  }
  for (let end = last; end - first > 1; ) {
    end--;
    const value = at(p, end);
    put(p, end, at(p, first));
    adjustHeap(p, first, 0, end - first, value);
  }
}

function medianToFirst(p: usize, result: i32, a: i32, b: i32, c: i32): void {
  if (less(at(p, a), at(p, b))) {
    if (less(at(p, b), at(p, c))) swap(p, result, b);
    else if (less(at(p, a), at(p, c))) swap(p, result, c);
    else swap(p, result, a);
  } else if (less(at(p, a), at(p, c))) swap(p, result, a);
  else if (less(at(p, b), at(p, c))) swap(p, result, c);
  else swap(p, result, b);
}

function partition(p: usize, first: i32, last: i32, pivot: i32): i32 {
  while (true) {
    while (less(at(p, first), at(p, pivot))) first++;
    last--;
    while (less(at(p, pivot), at(p, last))) last--;
    if (!(first < last)) break;
    swap(p, first, last);
    first++;
  }
  return first;
}

function introsort(p: usize, first: i32, last: i32, depth: i32): void {
  while (last - first > 16) {
    if (depth == 0) {
      heapSort(p, first, last);
      return;
    }
    depth--;
    medianToFirst(p, first, first + 1, first + (last - first) / 2, last - 1);
    const cut = partition(p, first + 1, last, first);
    introsort(p, cut, last, depth);
    last = cut;
  }
}

function linearInsert(p: usize, i: i32): void {
  const value = at(p, i);
  let j = i - 1;
  while (less(value, at(p, j))) {
    put(p, j + 1, at(p, j));
    j--;
  }
  put(p, j + 1, value);
}

function insertionSort(p: usize, first: i32, last: i32): void {
  for (let i = first + 1; i < last; i++) {
    if (less(at(p, i), at(p, first))) {
      const value = at(p, i);
      memory.copy(p + (<usize>(first + 1) << 2), p + (<usize>first << 2), <usize>(i - first) << 2);
      put(p, first, value);
    } else linearInsert(p, i);
  }
}

/** std::sort of n indices at p (i32, contiguous) by the values at sortVals. */
function stdSort(p: usize, n: i32): void {
  if (n < 2) return;
  introsort(p, 0, n, 2 * (31 - clz<i32>(n)));
  if (n > 16) {
    insertionSort(p, 0, 16);
    for (let i = 16; i < n; i++) linearInsert(p, i);
  } else insertionSort(p, 0, n);
}

/** ARGSORT: t0 = dst I32 (contiguous rows), t1 = a F32 (contiguous rows); param 0: 1 = descending. */
export function k_argsort(node: usize, ith: i32, nth: i32): void {
  const n = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = ne1 * ne2 * tNe(node, 0, 3);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  sortDesc = <i32>param(node, 0) == 1;
  for (let r = r0; r < r1; r++) {
    const i1 = r % ne1;
    const q = r / ne1;
    const i2 = q % ne2;
    const i3 = q / ne2;
    const pd = tAddr(node, 0) + <usize>i1 * tNb(node, 0, 1) + <usize>i2 * tNb(node, 0, 2) + <usize>i3 * tNb(node, 0, 3);
    sortVals = tAddr(node, 1) + <usize>i1 * tNb(node, 1, 1) + <usize>i2 * tNb(node, 1, 2) + <usize>i3 * tNb(node, 1, 3);
    for (let j = 0; j < n; j++) put(pd, j, j);
    stdSort(pd, n);
  }
}

/** ADD_ID: t0 = dst [n, nUsed, nT], t1 = a, t2 = b [n, nExpert], t3 = ids I32 [nUsed, nT]. */
export function k_add_id(node: usize, ith: i32, nth: i32): void {
  const n = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const nr = ne1 * tNe(node, 0, 2);
  const nE = tNe(node, 2, 1);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  for (let r = r0; r < r1; r++) {
    const i = r % ne1;
    const t = r / ne1;
    const e = load<i32>(tAddr(node, 3) + <usize>i * tNb(node, 3, 0) + <usize>t * tNb(node, 3, 1));
    if (e < 0 || e >= nE) unreachable();
    const pd = tAddr(node, 0) + <usize>i * tNb(node, 0, 1) + <usize>t * tNb(node, 0, 2);
    const pa = tAddr(node, 1) + <usize>i * tNb(node, 1, 1) + <usize>t * tNb(node, 1, 2);
    const pb = tAddr(node, 2) + <usize>e * tNb(node, 2, 1);
    const d0 = tNb(node, 0, 0);
    const a0 = tNb(node, 1, 0);
    const b0 = tNb(node, 2, 0);
    for (let k = 0; k < n; k++) {
      store<f32>(pd + <usize>k * d0, load<f32>(pa + <usize>k * a0) + load<f32>(pb + <usize>k * b0));
    }
  }
}

@inline function rowAddr(node: usize, t: i32, i1: i32, i2: i32, i3: i32): usize {
  return tAddr(node, t) + <usize>i1 * tNb(node, t, 1) + <usize>i2 * tNb(node, t, 2) + <usize>i3 * tNb(node, t, 3);
}

/**
 * SWIGLU_OAI: t0 = dst, t1 = gate, t2 = up (F32, contiguous rows); params alpha, limit.
 * x = min(g, limit), y = clamp(u, ±limit): x / (1 + e^(-alpha·x)) · (y + 1), in f32 as
 * ggml-cpu (four lanes at a time with expf4 where the rows are f32; the tail in double).
 */
export function k_swiglu_oai(node: usize, ith: i32, nth: i32): void {
  const n = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = ne1 * ne2 * tNe(node, 0, 3);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const alpha = param(node, 0);
  const limit = param(node, 1);
  const td = tType(node, 0);
  const fast = td == T_F32 && tNb(node, 0, 0) == 4 && tType(node, 1) == T_F32 && tNb(node, 1, 0) == 4 && tType(node, 2) == T_F32 && tNb(node, 2, 0) == 4;
  const lim = f32x4.splat(<f32>limit);
  const nlim = f32x4.splat(-(<f32>limit));
  const nalpha = f32x4.splat(-(<f32>alpha));
  for (let r = r0; r < r1; r++) {
    const i1 = r % ne1;
    const q = r / ne1;
    const i2 = q % ne2;
    const i3 = q / ne2;
    const pd = rowAddr(node, 0, i1, i2, i3);
    const pg = rowAddr(node, 1, i1, i2, i3);
    const pu = rowAddr(node, 2, i1, i2, i3);
    let k = 0;
    if (fast) {
      for (; k + 4 <= n; k += 4) {
        const o = <usize>k << 2;
        // pmin / pmax are std::min / std::clamp's comparisons (a NaN gate stays NaN)
        const x = f32x4.pmin(v128.load(pg + o), lim);
        const y = f32x4.pmin(f32x4.pmax(v128.load(pu + o), nlim), lim);
        const g = f32x4.div(x, f32x4.add(C_F32(F_ONE), expf4(f32x4.mul(nalpha, x))));
        v128.store(pd + o, f32x4.mul(g, f32x4.add(y, C_F32(F_ONE))));
      }
    }
    for (; k < n; k++) {
      const x = Math.min(<f64>load<f32>(pg + (<usize>k << 2)), limit);
      const y = Math.min(Math.max(<f64>load<f32>(pu + (<usize>k << 2)), -limit), limit);
      stf(pd + (<usize>k << 2), td, <f32>((x / (1 + exp64(-alpha * x))) * (y + 1)));
    }
  }
}
