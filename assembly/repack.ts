// Repacking weights at load (called on the main thread, not a kernel of the job table):
// one group of four Q4_0 / Q8_0 rows from ggml's layout at src to the 4-row interleaved
// layout at dst (src/backends/cpu/layout.ts): per block column, the four f16 scales, then
// the four rows' quants. Plain loads and stores at any alignment: memory speed, where the
// JavaScript loop moves 16-bit words one at a time.

/** ts: bytes per block (18 or 34); nb blocks per row of rowBytes bytes. */
export function repack4(src: usize, dst: usize, nb: i32, ts: i32, rowBytes: i32): void {
  const q = <usize>(ts - 2);
  for (let b = 0; b < nb; b++) {
    const c = dst + <usize>b * 4 * <usize>ts;
    for (let j = 0; j < 4; j++) {
      const p = src + <usize>j * <usize>rowBytes + <usize>b * <usize>ts;
      store<u16>(c + ((<usize>j) << 1), load<u16>(p));
      const o = c + 8 + <usize>j * q;
      v128.store(o, v128.load(p + 2));
      if (q == 32) v128.store(o + 16, v128.load(p + 18));
    }
  }
}

export { repackQ4_0, repackQ4K, repackQ5_0, repackQ6K } from './kquant';
export { repackMXFP4 } from './mxfp4';
