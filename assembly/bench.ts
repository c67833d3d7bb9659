// Memory read bandwidth probe for the kernel benchmark: thread ith sums its share of
// the bytes [extra 0, extra 0 + extra 1) and stores the sum at extra 2 + 16 * ith.

import { extra, share0 } from './desc';

export function k_read_bw(node: usize, ith: i32, nth: i32): void {
  const base = <usize>extra(node, 0);
  const n = extra(node, 1) >> 6;
  const b0 = share0(n, ith, nth);
  const b1 = share0(n, ith + 1, nth);
  let a0 = i32x4.splat(0);
  let a1 = i32x4.splat(0);
  let a2 = i32x4.splat(0);
  let a3 = i32x4.splat(0);
  for (let b = b0; b < b1; b++) {
    const p = base + ((<usize>b) << 6);
    a0 = i32x4.add(a0, v128.load(p));
    a1 = i32x4.add(a1, v128.load(p, 16));
    a2 = i32x4.add(a2, v128.load(p, 32));
    a3 = i32x4.add(a3, v128.load(p, 48));
  }
  v128.store(<usize>extra(node, 2) + ((<usize>ith) << 4), i32x4.add(i32x4.add(a0, a1), i32x4.add(a2, a3)));
}
