// Node records: what the host writes into wasm memory for each op, and how kernels read it.
//
// A record is 176 i32 words (704 bytes). Words 0..127 hold eight tensor descriptors of 16
// words each (0 = the node itself, 1..7 = its sources); words 128..159 hold 16 f64
// parameters; words 160..175 hold 16 i32 extras (scratch addresses and sizes).
//
// Descriptor words: 0 address, 1 type, 2..5 ne, 6..9 nb, 10 layout, 11 view offset,
// 12 root ne1, 13 root row bytes, 14 grouped rows per matrix, 15 unused.
// Layout 0 (plain): address is the byte of element [0,0,0,0]. Layout 1 (rep4, Q4_0 and
// Q8_0 only): address is the root tensor's first byte, and the view starts at logical
// byte `view offset` of the root, whose rows are stored four at a time interleaved
// (see qrow below and src/backends/cpu/layout.ts).

export const LAYOUT_PLAIN: i32 = 0;
export const LAYOUT_REP4: i32 = 1;
/** Q4_K, Q5_0 and Q6_K, 4-row interleaved (assembly/kquant.ts); words 11..14 as rep4. */
export const LAYOUT_K4: i32 = 2;

@inline export function tAddr(node: usize, t: i32): usize {
  return <usize>load<u32>(node + ((<usize>t * 16) << 2));
}
@inline export function tType(node: usize, t: i32): i32 {
  return load<i32>(node + ((<usize>t * 16 + 1) << 2));
}
@inline export function tNe(node: usize, t: i32, i: i32): i32 {
  return load<i32>(node + ((<usize>t * 16 + 2 + <usize>i) << 2));
}
@inline export function tNb(node: usize, t: i32, i: i32): usize {
  return <usize>load<u32>(node + ((<usize>t * 16 + 6 + <usize>i) << 2));
}

// Coordinates (i1, i2, i3) of flat row r of a tensor with ne1 x ne2 rows per i3, set by
// rowAt for the caller to read (globals of this instance: each worker has its own).
export let c1: i32 = 0;
export let c2: i32 = 0;
export let c3: i32 = 0;

@inline export function rowAt(r: i32, ne1: i32, ne2: i32): void {
  c1 = r % ne1;
  const q = r / ne1;
  c2 = q % ne2;
  c3 = q / ne2;
}

/** Address of row (i1, i2, i3) of tensor t of a node. */
@inline export function rowPtr(node: usize, t: i32, i1: i32, i2: i32, i3: i32): usize {
  return tAddr(node, t) + <usize>i1 * tNb(node, t, 1) + <usize>i2 * tNb(node, t, 2) + <usize>i3 * tNb(node, t, 3);
}
@inline export function tLayout(node: usize, t: i32): i32 {
  return load<i32>(node + ((<usize>t * 16 + 10) << 2));
}
@inline export function tWord(node: usize, t: i32, w: i32): i32 {
  return load<i32>(node + ((<usize>t * 16 + <usize>w) << 2));
}
@inline export function param(node: usize, i: i32): f64 {
  return load<f64>(node + 512 + (<usize>i << 3));
}
@inline export function extra(node: usize, i: i32): i32 {
  return load<i32>(node + 640 + (<usize>i << 2));
}

/** Number of rows (ne1*ne2*ne3) of tensor t. */
@inline export function tRows(node: usize, t: i32): i32 {
  return tNe(node, t, 1) * tNe(node, t, 2) * tNe(node, t, 3);
}

/** Byte offset of row (i1, i2, i3) of tensor t relative to its element [0,0,0,0]. */
@inline export function rowOff(node: usize, t: i32, i1: i32, i2: i32, i3: i32): usize {
  return <usize>i1 * tNb(node, t, 1) + <usize>i2 * tNb(node, t, 2) + <usize>i3 * tNb(node, t, 3);
}

/** First and one-past-last of the share of `n` items that thread ith of nth takes. */
@inline export function share0(n: i32, ith: i32, nth: i32): i32 {
  return <i32>((<i64>n * ith) / nth);
}

// ---- quantized rows of Q4_0 / Q8_0 in either layout ---------------------------------

/** Set by qrow: where block 0 of a row keeps its scale and its quants, and the block stride. */
export let qScale: usize = 0;
export let qQs: usize = 0;
export let qStride: usize = 0;

/**
 * Locate a Q4_0/Q8_0 row of tensor t starting `o` bytes (logical, ggml layout) after the
 * tensor's element [0,0,0,0]; `ts` is the block size in bytes (18 or 34).
 */
export function qrow(node: usize, t: i32, o: usize, ts: usize): void {
  const addr = tAddr(node, t);
  if (tLayout(node, t) != LAYOUT_REP4) {
    qScale = addr + o;
    qQs = addr + o + 2;
    qStride = ts;
    return;
  }
  const lo = <usize>tWord(node, t, 11) + o;
  const ne1 = <usize>tWord(node, t, 12);
  const rb = <usize>tWord(node, t, 13);
  const grouped = <usize>tWord(node, t, 14);
  const R = lo / rb;
  const col = lo - R * rb;
  const m = R / ne1;
  const r = R - m * ne1;
  if (r >= grouped) {
    qScale = addr + lo;
    qQs = addr + lo + 2;
    qStride = ts;
    return;
  }
  const b0 = col / ts;
  const chunk = addr + (m * ne1 + (r & ~3)) * rb + b0 * 4 * ts;
  const j = r & 3;
  qScale = chunk + 2 * j;
  qQs = chunk + 8 + j * (ts - 2);
  qStride = 4 * ts;
}
