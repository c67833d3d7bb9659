// WebGPU memory: device storage buffers (every tensor byte range readable and writable at
// any offset, although WebGPU moves whole 4-byte words only) and the host buffer type of
// mapped staging buffers.
//
// Writes: the whole words of a range go through queue.writeBuffer; a partly covered first
// or last word is merged on the device by a tiny kernel (keep the bytes outside the range),
// so setTensor stays synchronous and ordered with the queue like everything else.
// Reads: the covering words are copied into a mappable buffer and mapped (asynchronous).

import type { Tensor } from '../../ggml/tensor.js';
import { alignUp, PreferredHostBufferType } from '../host.js';
import type { Buffer, BufferType, BufferUsage, Device } from '../impl.js';
import { MAP_READ, Usage } from './adapter.js';
import type { GpuContext, WordPatch } from './context.js';

/** Bytes [a, b) of one word as a mask, and `bytes` (starting at byte `a`) as its bits. */
function partialWord(a: number, b: number, bytes: (k: number) => number): WordPatch {
  const w = Math.floor(a / 4);
  let mask = 0;
  let bits = 0;
  for (let p = a; p < b; p++) {
    const sh = (p % 4) * 8;
    mask |= 0xff << sh;
    bits |= bytes(p - a) << sh;
  }
  return { word: w, mask: mask >>> 0, bits: bits >>> 0 };
}

/**
 * Splits bytes [a, a + n) into whole words [w0, w1) (byte addresses) and at most two
 * partial-word patches, `byteAt(k)` giving byte k of the range.
 */
export function splitWords(a: number, n: number, byteAt: (k: number) => number) {
  const end = a + n;
  const w0 = alignUp(a, 4);
  const w1 = Math.floor(end / 4) * 4;
  const patches: WordPatch[] = [];
  if (w0 > w1) {
    patches.push(partialWord(a, end, byteAt));
    return { w0, w1: w0, patches };
  }
  if (a < w0) patches.push(partialWord(a, w0, byteAt));
  if (w1 < end) patches.push(partialWord(w1, end, (k) => byteAt(w1 - a + k)));
  return { w0, w1, patches };
}

let nextId = 1;

export class WebGpuBuffer implements Buffer {
  usage: BufferUsage = 'any';
  readonly id = nextId++;
  private freed = false;

  constructor(
    readonly bufferType: WebGpuBufferType,
    readonly gpu: GPUBuffer,
    readonly size: number,
  ) {}

  private get ctx(): GpuContext {
    return this.bufferType.ctx;
  }

  private at(t: Tensor, offset: number): number {
    if (this.freed) throw new Error(`buffer of type ${this.bufferType.name} used after free`);
    return t.offset + offset;
  }

  initTensor(_t: Tensor): void {}

  setTensor(t: Tensor, data: Uint8Array, offset = 0): void {
    this.writeBytes(this.at(t, offset), data);
  }

  /** Write `data` at byte `addr` of this buffer (any alignment). */
  writeBytes(addr: number, data: Uint8Array): void {
    const { w0, w1, patches } = splitWords(addr, data.byteLength, (k) => data[k]);
    if (w1 > w0) {
      // Dawn copies from the view; a SharedArrayBuffer-backed one is copied first
      const src = data.buffer instanceof ArrayBuffer ? data : data.slice();
      const from = src === data ? data.byteOffset + (w0 - addr) : w0 - addr;
      this.ctx.queue.writeBuffer(this.gpu, w0, src.buffer as ArrayBuffer, from, w1 - w0);
    }
    this.ctx.patchWords(this.gpu, patches);
  }

  async getTensor(t: Tensor, dst: Uint8Array, offset = 0): Promise<void> {
    const addr = this.at(t, offset);
    const n = dst.byteLength;
    if (n === 0) return;
    const r0 = Math.floor(addr / 4) * 4;
    const r1 = alignUp(addr + n, 4);
    const staging = this.ctx.takeStaging(r1 - r0);
    const enc = this.ctx.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.gpu, r0, staging, 0, r1 - r0);
    this.ctx.queue.submit([enc.finish()]);
    await staging.mapAsync(MAP_READ, 0, r1 - r0);
    dst.set(new Uint8Array(staging.getMappedRange(0, r1 - r0), addr - r0, n));
    staging.unmap();
    this.ctx.giveStaging(staging);
  }

  memsetTensor(t: Tensor, value: number, offset: number, size: number): void {
    this.fill(this.at(t, offset), size, value & 0xff);
  }

  private fill(addr: number, size: number, value: number): void {
    const { w0, w1, patches } = splitWords(addr, size, () => value);
    if (w1 > w0) {
      if (value === 0) {
        const enc = this.ctx.device.createCommandEncoder();
        enc.clearBuffer(this.gpu, w0, w1 - w0);
        this.ctx.queue.submit([enc.finish()]);
      } else {
        const chunk = new Uint8Array(Math.min(w1 - w0, 1 << 24)).fill(value);
        for (let p = w0; p < w1; p += chunk.byteLength) {
          this.ctx.queue.writeBuffer(this.gpu, p, chunk.buffer, 0, Math.min(chunk.byteLength, w1 - p));
        }
      }
    }
    this.ctx.patchWords(this.gpu, patches);
  }

  copyTensor(src: Tensor, dst: Tensor): boolean {
    const from = src.buffer;
    if (!(from instanceof WebGpuBuffer) || from.bufferType.ctx !== this.ctx) return false;
    if (!src.isContiguous() || !dst.isContiguous() || src.nbytes !== dst.nbytes) return false;
    const a = src.offset;
    const b = this.at(dst, 0);
    if (a % 4 !== 0 || b % 4 !== 0 || src.nbytes % 4 !== 0) return false;
    const enc = this.ctx.device.createCommandEncoder();
    enc.copyBufferToBuffer(from.gpu, a, this.gpu, b, src.nbytes);
    this.ctx.queue.submit([enc.finish()]);
    return true;
  }

  clear(value: number): void {
    this.fill(0, this.size, value & 0xff);
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.bufferType.released(this);
    this.gpu.destroy();
  }

  hostBytes(): undefined {
    return undefined;
  }
}

/** Device storage buffers: alignment and largest size from the adapter's limits. */
export class WebGpuBufferType implements BufferType {
  readonly isHost = false;
  readonly alignment: number;
  readonly maxSize: number;
  /** Bytes in live buffers of this type. */
  allocated = 0;

  constructor(
    readonly name: string,
    readonly device: Device,
    readonly ctx: GpuContext,
  ) {
    const l = ctx.device.limits;
    this.alignment = l.minStorageBufferOffsetAlignment;
    // kernels bind whole buffers: one is at most a storage binding
    this.maxSize = Math.min(l.maxBufferSize, l.maxStorageBufferBindingSize);
  }

  alloc(size: number, usage: BufferUsage = 'any'): Buffer {
    if (size > this.maxSize)
      throw new RangeError(`${this.name}: ${size} bytes exceed the buffer limit ${this.maxSize}`);
    const bytes = alignUp(Math.max(size, 4), 4);
    const gpu = this.ctx.device.createBuffer({
      size: bytes,
      usage: Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST,
      label: `${this.name} ${usage}`,
    });
    const b = new WebGpuBuffer(this, gpu, size);
    b.usage = usage;
    this.allocated += bytes;
    return b;
  }

  /** Bookkeeping when a buffer is freed (its bind groups go too). */
  released(b: WebGpuBuffer): void {
    this.allocated -= alignUp(Math.max(b.size, 4), 4);
    this.ctx.forgetBuffer(b.gpu);
  }

  allocSize(t: Tensor): number {
    return t.nbytes;
  }
}

/**
 * The device's host buffer type: buffers mapped at creation (staging memory the GPU copies
 * from), falling back to plain host memory with one warning where they cannot be had.
 */
export function webGpuHostBufferType(name: string, device: Device, ctx: GpuContext): BufferType {
  const limit = ctx.device.limits.maxBufferSize;
  return new PreferredHostBufferType({ name, device, alignment: 64 }, (size) => {
    if (size > limit) throw new Error(`${size} bytes exceed the mapped-buffer limit ${limit}`);
    const b = ctx.device.createBuffer({
      size: alignUp(size, 4),
      usage: Usage.MAP_WRITE | Usage.COPY_SRC,
      mappedAtCreation: true,
    });
    return new Uint8Array(b.getMappedRange(), 0, size);
  });
}
