// Arenas: shared WebAssembly memories that hold the CPU device's buffers. A wasm32
// memory addresses at most 4 GiB, so a device has as many arenas as its buffers need;
// every worker instantiates the kernel module once per arena. Inside an arena a simple
// first-fit allocator hands out aligned ranges; the memory grows on demand (a shared
// memory never moves, so views of it stay valid) and never shrinks.

import {
  GRID_IQ1S,
  GRID_IQ2S,
  GRID_IQ2XS,
  GRID_IQ2XXS,
  GRID_IQ3S,
  GRID_IQ3XXS,
  gridValues,
  signsOf7,
} from '../../ggml/quants/iq-grids.js';
import { engineFlags } from './engine-flags.js';
import { Wasm, type WasmMemory } from './wasm-api.js';

export const PAGE = 65536;
/** Bytes at the start of every arena that nothing is allocated in (address 0 stays unused). */
export const ARENA_HEADER = PAGE;

/**
 * Vector constants the kernels load from address 1024 of every arena (see
 * assembly/consts.ts): each entry is 16 bytes.
 */
export const CONSTANTS_AT = 1024;

/** The engine flags word (engine-flags.ts; assembly/consts.ts reads it). */
export const FLAGS_AT = 512;

/**
 * The f32 constants after the integer ones, in assembly/consts.ts's order (F_* indices):
 * as the kernels' literals were, rounded from these doubles to f32.
 */
const F32_CONSTANTS = [
  -87.3,
  88.3,
  Math.LOG2E,
  0.693145751953125,
  1.428606765330187e-6,
  1 / 5040,
  1 / 720,
  1 / 120,
  1 / 24,
  1 / 6,
  0.5,
  1,
  12583039,
  0.693359375,
  -2.1219444e-4,
  1.98756915e-4,
  1.3981999507e-3,
  8.3334519073e-3,
  4.1665795894e-2,
  1.6666665459e-1,
  5.0000001201e-1,
  -2 * Math.sqrt(2 / Math.PI),
  0.044715,
  10,
  -10,
  2,
  -5.70498872745e-3,
  2.06390887954e-2,
  -5.37397155531e-2,
  1.33314422036e-1,
  -3.33332819422e-1,
  0.625,
];

function f32Bits(v: number): number {
  return new Uint32Array(new Float32Array([v]).buffer)[0];
}

function constantTable(): Uint8Array {
  const t = new Uint8Array(16 * (31 + F32_CONSTANTS.length + 10));
  const dv = new DataView(t.buffer);
  const fill = (i: number, width: 1 | 2 | 4, v: number) => {
    for (let k = 0; k < 16; k += width) {
      if (width === 1) dv.setUint8(i * 16 + k, v);
      else if (width === 2) dv.setUint16(i * 16 + k, v, true);
      else dv.setUint32(i * 16 + k, v >>> 0, true);
    }
  };
  fill(0, 1, 0x0f);
  fill(1, 1, 0x30);
  fill(2, 2, 0x000f);
  fill(3, 2, 1);
  fill(4, 4, 0x7fff);
  fill(5, 4, 0x77800000); // 2^112 as f32
  fill(6, 4, 0x7bff);
  fill(7, 4, 0x70000000);
  fill(8, 2, 0x00ff);
  for (let j = 0; j < 8; j++) fill(9 + j, 2, 2 * j + ((2 * j + 1) << 8));
  fill(17, 4, 0x7fffffff);
  fill(18, 4, 0x00000fff);
  fill(19, 4, 1);
  fill(20, 4, 0xffffe000);
  fill(21, 4, 0x38800000); // 2^-14
  fill(22, 4, 0x3f400000); // 0.75
  fill(23, 4, 0x477ff000); // 65520
  fill(24, 4, 0x7f800000); // infinity
  // Q5_0 high bits: the byte of qh each element's bit is in (elements 0-15, 16-31), the bit
  for (let k = 0; k < 16; k++) {
    dv.setUint8(25 * 16 + k, k >> 3);
    dv.setUint8(26 * 16 + k, 2 + (k >> 3));
    dv.setUint8(27 * 16 + k, 1 << (k & 7));
  }
  fill(28, 1, 0x10);
  fill(29, 4, 0x8fffffff);
  fill(30, 2, 0x7c00);
  // f32 constants of the exp, tanh, SiLU, GELU and softmax kernels (assembly/consts.ts, C_F32)
  for (const [i, v] of F32_CONSTANTS.entries()) fill(31 + i, 4, f32Bits(v));
  // MXFP4's E2M1 values doubled, plus 12 (the relaxed build's unsigned operand) and as they are
  const mx = 31 + F32_CONSTANTS.length;
  const e2m1 = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];
  for (let k = 0; k < 16; k++) {
    dv.setUint8(mx * 16 + k, e2m1[k] + 12);
    dv.setInt8((mx + 1) * 16 + k, e2m1[k]);
  }
  // f16 to f32 without a float operation on a subnormal (assembly/consts.ts, f16x4)
  fill(mx + 2, 4, 0x38000000); // 112 << 23: the exponent rebias
  fill(mx + 3, 4, 0x33800000); // 2^-24
  fill(mx + 4, 4, 0x400); // the smallest normal f16's bits
  fill(mx + 5, 1, 0x3f); // Q6_K's six-bit quants (kquant.ts)
  fill(mx + 6, 1, 3); // TQ2_0's 2-bit fields (iquant.ts)
  fill(mx + 7, 2, 3); // TQ1_0's trits
  for (let k = 0; k < 8; k++) dv.setUint16((mx + 8) * 16 + 2 * k, 1 << (13 - 3 * (k & 3)), true); // IQ1_M's scales
  fill(mx + 9, 4, f32Bits(8193)); // Veltkamp's split at f16's precision (attention-row.ts)
  return t;
}

/**
 * The IQ1/IQ2/IQ3 codebooks the kernels read from address 16384 of every arena (see
 * assembly/iquant.ts, same offsets): 8 bytes per IQ2/IQ1 point (IQ1 signed), 4 per IQ3
 * point, then the 128 parity-completed sign bytes, then 8 mask bytes per sign byte, then
 * 8 mask bytes per 7 stored sign bits.
 */
export const IQ_TABLES_AT = 16384;

function iqTables(): Uint8Array {
  const t = new Uint8Array(34048 + 2048 + 1024 + 16 + 4096);
  const put = (at: number, v: Int8Array) => t.set(new Uint8Array(v.buffer, v.byteOffset, v.length), at);
  put(0, gridValues(GRID_IQ2XXS));
  put(2048, gridValues(GRID_IQ2XS));
  put(6144, gridValues(GRID_IQ2S));
  put(14336, gridValues(GRID_IQ1S));
  put(30720, gridValues(GRID_IQ3XXS));
  put(31744, gridValues(GRID_IQ3S));
  for (let i = 0; i < 128; i++) t[33792 + i] = signsOf7(i);
  // the 8 sign masks (0xff where bit k is set) of every sign byte
  for (let s = 0; s < 256; s++) for (let k = 0; k < 8; k++) t[34048 + 8 * s + k] = (s >> k) & 1 ? 0xff : 0;
  // the same masks indexed by the 7 stored bits (the parity completion folded in)
  for (let i = 0; i < 128; i++) t.copyWithin(36096 + 8 * i, 34048 + 8 * signsOf7(i), 34048 + 8 * signsOf7(i) + 8);
  // IQ1: the swizzle taking grid bytes -1, 0, 1 to 0, 8, 16, then 8 + δ per byte by IQ1_M's
  // high-bits byte (bit 3: δ = -1 for the low 8 values, bit 7: for the high 8)
  t[37120] = 8;
  t[37121] = 16;
  for (let b = 0; b < 256; b++) for (let j = 0; j < 16; j++) t[37136 + 16 * b + j] = b & (j < 8 ? 8 : 0x80) ? 7 : 9;
  return t;
}

function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

export class Arena {
  readonly memory: WasmMemory;
  /** Bytes the arena can address (its memory's maximum). */
  readonly capacity: number;
  /** Free ranges, sorted by offset. */
  private free: { offset: number; size: number }[];
  private view: Uint8Array;
  /** Bytes in allocated ranges. */
  used = 0;

  constructor(
    readonly index: number,
    maxPages: number,
  ) {
    this.memory = new Wasm.Memory({ initial: 1, maximum: maxPages, shared: true });
    this.capacity = maxPages * PAGE;
    this.free = [{ offset: ARENA_HEADER, size: this.capacity - ARENA_HEADER }];
    this.view = new Uint8Array(this.memory.buffer);
    this.view.set(constantTable(), CONSTANTS_AT);
    this.view.set(iqTables(), IQ_TABLES_AT);
    new Uint32Array(this.memory.buffer, FLAGS_AT, 1)[0] = engineFlags();
  }

  /** The whole memory as bytes (refreshed after growth). */
  bytes(): Uint8Array {
    const buf = this.memory.buffer;
    if (this.view.buffer !== buf || this.view.byteLength !== buf.byteLength) this.view = new Uint8Array(buf);
    return this.view;
  }

  /** Largest single range this arena could still hand out. */
  largestFree(): number {
    return this.free.reduce((m, f) => Math.max(m, f.size), 0);
  }

  /** An aligned range of `size` bytes, or null when none is free. */
  alloc(size: number, alignment = 64): number | null {
    size = alignUp(Math.max(size, 1), alignment);
    for (let i = 0; i < this.free.length; i++) {
      const f = this.free[i];
      const start = alignUp(f.offset, alignment);
      const pad = start - f.offset;
      if (f.size < size + pad) continue;
      const rest = f.offset + f.size - (start + size);
      const parts: { offset: number; size: number }[] = [];
      if (pad > 0) parts.push({ offset: f.offset, size: pad });
      if (rest > 0) parts.push({ offset: start + size, size: rest });
      this.free.splice(i, 1, ...parts);
      this.ensure(start + size);
      this.used += size;
      return start;
    }
    return null;
  }

  /** Return a range from alloc (same size). */
  release(offset: number, size: number, alignment = 64): void {
    size = alignUp(Math.max(size, 1), alignment);
    this.used -= size;
    let i = 0;
    while (i < this.free.length && this.free[i].offset < offset) i++;
    this.free.splice(i, 0, { offset, size });
    const next = this.free[i + 1];
    if (next && offset + size === next.offset) {
      this.free[i].size += next.size;
      this.free.splice(i + 1, 1);
    }
    const prev = this.free[i - 1];
    if (prev && prev.offset + prev.size === offset) {
      prev.size += this.free[i].size;
      this.free.splice(i, 1);
    }
  }

  /** Grow the memory to cover [0, end). */
  private ensure(end: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    this.memory.grow(Math.ceil((end - have) / PAGE));
  }
}
