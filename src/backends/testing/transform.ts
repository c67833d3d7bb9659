// A test double of a buffer type that keeps tensors in its own layout, as accelerator
// backends do (CANN stores Q4_0/Q8_0 with all scales apart from all quants). Here, for
// Q4_0 and Q8_0 tensors, the f16 scale of every block goes to one region and the quants
// to another; every byte is also XORed with a mask that depends on its physical address.
// setTensor/getTensor must translate any sub-range (offset, size), partial blocks
// included. `ignoreOffset: true` reproduces the bug llama.cpp fixed (the transform path
// ignored the offset), so tests can show they catch it.

import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';
import { platform } from '../../platform/index.js';
import type {
  Backend,
  BackendReg,
  Buffer,
  BufferType,
  BufferUsage,
  Device,
  DeviceMemory,
  DeviceProps,
} from '../impl.js';

const SPLIT_TYPES = new Set<number>([GGMLType.Q4_0, GGMLType.Q8_0]);

function mask(p: number): number {
  return (p * 167 + 89) & 0xff;
}

export interface TransformOptions {
  /** Reproduce the historical bug: transform as if every access started at offset 0. */
  ignoreOffset?: boolean;
}

export class TransformBuffer implements Buffer {
  usage: BufferUsage = 'any';
  private readonly raw: Uint8Array;
  /** Tensors placed here (roots only), for the layout of their bytes. */
  private readonly roots: Tensor[] = [];

  constructor(
    readonly bufferType: TransformBufferType,
    readonly size: number,
    private readonly o: TransformOptions,
  ) {
    this.raw = new Uint8Array(size);
    this.clear(0);
  }

  initTensor(t: Tensor): void {
    if (!t.viewSrc) this.roots.push(t);
  }

  /** Physical position of the logical byte at buffer address `addr`. */
  private phys(addr: number): number {
    const root = this.roots.find((r) => addr >= r.offset && addr < r.offset + r.nbytes);
    if (!root || !SPLIT_TYPES.has(root.type)) return addr;
    const ts = traitsOf(root.type).typeSize;
    const nBlocks = root.nbytes / ts;
    const rel = addr - root.offset;
    const b = Math.floor(rel / ts);
    const j = rel % ts;
    // scales (2 bytes per block) first, then the quant bytes of every block
    return root.offset + (j < 2 ? b * 2 + j : nBlocks * 2 + b * (ts - 2) + (j - 2));
  }

  /** Buffer address of byte `offset` of `t` (the range was checked by the caller: api.ts). */
  private at(t: Tensor, offset: number): number {
    return this.o.ignoreOffset ? t.offset : t.offset + offset;
  }

  setTensor(t: Tensor, data: Uint8Array, offset = 0): void {
    const base = this.at(t, offset);
    for (let k = 0; k < data.byteLength; k++) {
      const p = this.phys(base + k);
      this.raw[p] = data[k] ^ mask(p);
    }
  }

  getTensor(t: Tensor, dst: Uint8Array, offset = 0): void {
    const base = this.at(t, offset);
    for (let k = 0; k < dst.byteLength; k++) {
      const p = this.phys(base + k);
      dst[k] = this.raw[p] ^ mask(p);
    }
  }

  memsetTensor(t: Tensor, value: number, offset: number, size: number): void {
    this.setTensor(t, new Uint8Array(size).fill(value), offset);
  }

  copyTensor(): boolean {
    return false;
  }

  clear(value: number): void {
    for (let p = 0; p < this.raw.length; p++) this.raw[p] = value ^ mask(p);
  }

  free(): void {}

  hostBytes(): undefined {
    return undefined;
  }

  /** The stored bytes, to show that they differ from ggml's layout. */
  rawBytes(): Uint8Array {
    return this.raw;
  }
}

export class TransformBufferType implements BufferType {
  readonly name: string;
  readonly alignment = 128;
  readonly maxSize: number;
  readonly isHost = false;

  constructor(
    readonly device: Device,
    private readonly o: TransformOptions & { maxSize?: number } = {},
  ) {
    this.name = device.name;
    this.maxSize = o.maxSize ?? 2 ** 31;
  }

  alloc(size: number, usage: BufferUsage = 'any'): TransformBuffer {
    const b = new TransformBuffer(this, Math.ceil(Math.max(size, 1) / this.alignment) * this.alignment, this.o);
    b.usage = usage;
    return b;
  }

  allocSize(t: Tensor): number {
    return t.nbytes;
  }
}

/** A device that only stores (computes nothing): enough to host a transforming buffer type. */
export class TransformDevice implements Device {
  readonly description = 'test double: transforming buffer type, no compute';
  readonly type = 'accel' as const;
  private readonly buft: TransformBufferType;

  constructor(
    readonly reg: BackendReg,
    readonly name = 'Transform',
    o: TransformOptions & { maxSize?: number } = {},
  ) {
    this.buft = new TransformBufferType(this, o);
  }

  memory(): DeviceMemory {
    return platform.memory();
  }

  props(): DeviceProps {
    return {
      name: this.name,
      description: this.description,
      memory: this.memory(),
      type: this.type,
      caps: { async: false, hostBuffer: false, bufferFromHostPtr: false, events: false, threads: false, oracle: false },
    };
  }

  initBackend(): Backend {
    throw new Error(`${this.name} cannot compute`);
  }

  bufferType(): TransformBufferType {
    return this.buft;
  }

  supportsOp(): boolean {
    return false;
  }

  supportsBufferType(buft: BufferType): boolean {
    return buft === this.buft;
  }

  offloadOp(): boolean {
    return false;
  }
}

/** A registry entry holding one transform device (for tests; not registered globally). */
export function transformReg(name = 'Transform', o: TransformOptions & { maxSize?: number } = {}): BackendReg {
  const devs: Device[] = [];
  const reg: BackendReg = { name, devices: () => devs };
  devs.push(new TransformDevice(reg, name, o));
  return reg;
}
