// Host memory buffers: the bytes live in an ArrayBuffer (or a SharedArrayBuffer or a
// WebAssembly.Memory's buffer: anything a Uint8Array can view), and every transfer is a
// byte copy. Devices that compute on the host build on these; the preferred-host-memory
// buffer type with fallback (ggml's pinned host buffers) is here too.

import type { Tensor } from '../ggml/tensor.js';
import { logger } from '../log.js';
import { platform } from '../platform/index.js';
import type { Buffer, BufferType, BufferUsage, Device } from './impl.js';

const log = logger('backend');

/** Largest host buffer: typed arrays past 2 GiB are not safe on every engine. */
export const HOST_MAX_BUFFER = 2 ** 31;

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

export class HostBuffer implements Buffer {
  usage: BufferUsage = 'any';
  private freed = false;

  constructor(
    readonly bufferType: BufferType,
    readonly bytes: Uint8Array,
  ) {}

  get size(): number {
    return this.bytes.byteLength;
  }

  /** Where byte `offset` of `t` is (the range was checked by the caller: api.ts). */
  private at(t: Tensor, offset: number): number {
    if (this.freed) throw new Error(`buffer of type ${this.bufferType.name} used after free`);
    return t.offset + offset;
  }

  initTensor(_t: Tensor): void {}

  setTensor(t: Tensor, data: Uint8Array, offset = 0): void {
    this.bytes.set(data, this.at(t, offset));
  }

  getTensor(t: Tensor, dst: Uint8Array, offset = 0): void {
    const p = this.at(t, offset);
    dst.set(this.bytes.subarray(p, p + dst.byteLength));
  }

  memsetTensor(t: Tensor, value: number, offset: number, size: number): void {
    const p = this.at(t, offset);
    this.bytes.fill(value, p, p + size);
  }

  copyTensor(src: Tensor, dst: Tensor): boolean {
    // only plain host buffers hold tensors in ggml's layout: anything else goes through getTensor
    if (!(src.buffer instanceof HostBuffer)) return false;
    const from = src.buffer.bytes;
    if (!src.isContiguous() || !dst.isContiguous() || src.nbytes !== dst.nbytes || src.type !== dst.type) return false;
    const p = this.at(dst, 0);
    this.bytes.set(from.subarray(src.offset, src.offset + src.nbytes), p);
    return true;
  }

  clear(value: number): void {
    this.bytes.fill(value);
  }

  free(): void {
    this.freed = true;
  }

  hostBytes(): Uint8Array {
    return this.bytes;
  }
}

export interface HostBufferTypeOptions {
  name: string;
  device: Device;
  alignment?: number;
  maxSize?: number;
}

/** Plain host memory (ggml's CPU buffer type). */
export class HostBufferType implements BufferType {
  readonly name: string;
  readonly device: Device;
  readonly alignment: number;
  readonly maxSize: number;
  readonly isHost = true;

  constructor(o: HostBufferTypeOptions) {
    this.name = o.name;
    this.device = o.device;
    this.alignment = o.alignment ?? 64;
    this.maxSize = o.maxSize ?? HOST_MAX_BUFFER;
  }

  alloc(size: number, usage: BufferUsage = 'any'): Buffer {
    if (size > this.maxSize)
      throw new RangeError(`${this.name}: ${size} bytes exceed the buffer limit ${this.maxSize}`);
    const b = new HostBuffer(this, new Uint8Array(alignUp(Math.max(size, 1), this.alignment)));
    b.usage = usage;
    return b;
  }

  allocSize(t: Tensor): number {
    return t.nbytes;
  }
}

/**
 * A host buffer type that first asks for the device's preferred host memory (pinned,
 * mapped, shared with an accelerator). If that cannot be had (the allocator returns
 * null or throws, or LLAMA_TS_NO_PINNED is set) it warns once and allocates plain host
 * memory instead, as llama.cpp's pinned host buffers fall back to CPU buffers.
 */
export class PreferredHostBufferType extends HostBufferType {
  private warned = false;

  constructor(
    o: HostBufferTypeOptions,
    private readonly preferred: (size: number) => Uint8Array | null,
  ) {
    super(o);
  }

  override alloc(size: number, usage: BufferUsage = 'any'): Buffer {
    let bytes: Uint8Array | null = null;
    let why = 'LLAMA_TS_NO_PINNED is set';
    if (!platform.env('LLAMA_TS_NO_PINNED')) {
      try {
        bytes = this.preferred(alignUp(Math.max(size, 1), this.alignment));
        why = 'the device refused';
      } catch (e) {
        why = (e as Error).message;
      }
    }
    if (!bytes) {
      if (!this.warned) {
        log.warn(
          `${this.name}: failed to allocate ${size} bytes of preferred host memory (${why}); using plain host memory`,
        );
        this.warned = true;
      }
      return super.alloc(size, usage);
    }
    const b = new HostBuffer(this, bytes);
    b.usage = usage;
    return b;
  }
}
