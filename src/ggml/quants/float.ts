// Plain float element types: F32 (copy), F16 and BF16.

import { f16Table, f32ToBF16, f32ToF16 } from '../fp16.js';

export function dequantizeF32(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, n: number): void {
  // a byte view of the destination copies at any source alignment
  new Uint8Array(dst.buffer, dst.byteOffset + dstOff * 4, n * 4).set(src.subarray(srcOff, srcOff + n * 4));
}

export function quantizeF32(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, n: number): void {
  dst.set(new Uint8Array(src.buffer, src.byteOffset + srcOff * 4, n * 4), dstOff);
}

export function dequantizeF16(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, n: number): void {
  const t = f16Table();
  for (let i = 0, o = srcOff; i < n; i++, o += 2) dst[dstOff + i] = t[src[o]! | (src[o + 1]! << 8)]!;
}

export function quantizeF16(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, n: number): void {
  for (let i = 0, o = dstOff; i < n; i++, o += 2) {
    const h = f32ToF16(src[srcOff + i]!);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
  }
}

const bf16Scratch = new Uint32Array(1024);
const bf16ScratchF = new Float32Array(bf16Scratch.buffer);

export function dequantizeBF16(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, n: number): void {
  // bf16 is the top half of an f32: build bit patterns in a scratch chunk, then copy
  for (let base = 0; base < n; base += 1024) {
    const m = Math.min(1024, n - base);
    for (let i = 0, o = srcOff + base * 2; i < m; i++, o += 2) bf16Scratch[i] = (src[o]! << 16) | (src[o + 1]! << 24);
    dst.set(m === 1024 ? bf16ScratchF : bf16ScratchF.subarray(0, m), dstOff + base);
  }
}

export function quantizeBF16(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, n: number): void {
  for (let i = 0, o = dstOff; i < n; i++, o += 2) {
    const h = f32ToBF16(src[srcOff + i]!);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
  }
}
