// ARGSORT (ggml_argsort): each row's indices ordered by value. ggml-cpu sorts them with
// std::sort, which is not stable: equal values (a router's tied experts) come out in the
// order libstdc++'s introsort leaves them, and which of them a top-k keeps depends on it.
// stdSort below is that algorithm step for step (median-of-three quicksort down to
// 16-element runs, heapsort past 2·log2(n) levels, then insertion sort), so ties resolve
// exactly as in llama.cpp.

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

/** Sorts `idx` in place with libstdc++'s std::sort under the strict weak order `less`. */
export function stdSort(idx: Int32Array, less: (a: number, b: number) => boolean): void {
  const n = idx.length;
  if (n < 2) return;
  const swap = (i: number, j: number) => {
    const t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  };
  const pushHeap = (first: number, hole: number, top: number, value: number) => {
    let parent = Math.floor((hole - 1) / 2);
    while (hole > top && less(idx[first + parent], value)) {
      idx[first + hole] = idx[first + parent];
      hole = parent;
      parent = Math.floor((hole - 1) / 2);
    }
    idx[first + hole] = value;
  };
  const adjustHeap = (first: number, hole: number, len: number, value: number) => {
    const top = hole;
    let child = hole;
    while (child < Math.floor((len - 1) / 2)) {
      child = 2 * (child + 1);
      if (less(idx[first + child], idx[first + child - 1])) child--;
      idx[first + hole] = idx[first + child];
      hole = child;
    }
    if ((len & 1) === 0 && child === Math.floor((len - 2) / 2)) {
      child = 2 * (child + 1);
      idx[first + hole] = idx[first + child - 1];
      hole = child - 1;
    }
    pushHeap(first, hole, top, value);
  };
  const heapSort = (first: number, last: number) => {
    const len = last - first;
    if (len >= 2) {
      for (let parent = Math.floor((len - 2) / 2); ; parent--) {
        adjustHeap(first, parent, len, idx[first + parent]);
        if (parent === 0) break;
      }
    }
    for (let end = last; end - first > 1; ) {
      end--;
      const value = idx[end];
      idx[end] = idx[first];
      adjustHeap(first, 0, end - first, value);
    }
  };
  const medianToFirst = (result: number, a: number, b: number, c: number) => {
    if (less(idx[a], idx[b])) {
      if (less(idx[b], idx[c])) swap(result, b);
      else if (less(idx[a], idx[c])) swap(result, c);
      else swap(result, a);
    } else if (less(idx[a], idx[c])) swap(result, a);
    else if (less(idx[b], idx[c])) swap(result, c);
    else swap(result, b);
  };
  const partition = (first: number, last: number, pivot: number) => {
    for (;;) {
      while (less(idx[first], idx[pivot])) first++;
      last--;
      while (less(idx[pivot], idx[last])) last--;
      if (!(first < last)) return first;
      swap(first, last);
      first++;
    }
  };
  const introsort = (first: number, last: number, depth: number) => {
    while (last - first > 16) {
      if (depth === 0) {
        heapSort(first, last);
        return;
      }
      depth--;
      const mid = first + Math.floor((last - first) / 2);
      medianToFirst(first, first + 1, mid, last - 1);
      const cut = partition(first + 1, last, first);
      introsort(cut, last, depth);
      last = cut;
    }
  };
  const linearInsert = (i: number) => {
    const value = idx[i];
    let j = i - 1;
    while (less(value, idx[j])) {
      idx[j + 1] = idx[j];
      j--;
    }
    idx[j + 1] = value;
  };
  const insertionSort = (first: number, last: number) => {
    for (let i = first + 1; i < last; i++) {
      if (less(idx[i], idx[first])) {
        const value = idx[i];
        idx.copyWithin(first + 1, first, i);
        idx[first] = value;
      } else linearInsert(i);
    }
  };
  introsort(0, n, 2 * Math.floor(Math.log2(n)));
  if (n > 16) {
    insertionSort(0, 16);
    for (let i = 16; i < n; i++) linearInsert(i);
  } else insertionSort(0, n);
}

export function argsort(dst: Tensor): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const desc = dst.params.order === 1;
  const row = new Float32Array(n);
  const idx = new Int32Array(n);
  const less = desc ? (a: number, b: number) => row[a] > row[b] : (a: number, b: number) => row[a] < row[b];
  forEachRow(dst.ne, (i1, i2, i3) => {
    va.readRow(row, i1, i2, i3);
    for (let j = 0; j < n; j++) idx[j] = j;
    stdSort(idx, less);
    for (let j = 0; j < n; j++) vd.set(idx[j], j, i1, i2, i3);
  });
}
