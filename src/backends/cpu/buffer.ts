// The CPU device's buffer types. Both keep their bytes in an arena (a shared wasm
// memory the kernels read directly):
// - CpuBufferType, the device's default: Q4_0 and Q8_0 tensors of four rows or more are
//   stored 4-row interleaved (layout.ts), repacked in setTensor and restored in
//   getTensor for any sub-range; everything else keeps ggml's layout. Not host memory.
// - CpuHostBufferType: plain ggml layout, exposed as host bytes (other host devices read
//   it in place).

import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { HostBuffer } from '../host.js';
import type { Buffer, BufferType, BufferUsage, Device } from '../impl.js';
import type { Arena } from './arena.js';
import { q4_0Layout } from './engine-flags.js';
import { Rep4Layout } from './layout.js';
import { K4Layout } from './layout-k.js';
import { Wasm, type WasmModule } from './wasm-api.js';

/** Where a range of arena memory is. */
export interface ArenaRange {
  arena: Arena;
  offset: number;
}

/** Places buffers in arenas (the device's ArenaSet). */
export interface ArenaAllocator {
  allocRange(size: number): ArenaRange;
  releaseRange(r: ArenaRange, size: number): void;
  /** Largest buffer one arena can hold. */
  readonly maxBufferSize: number;
  /** Scratch bytes in `arena` until the next call (the device's work region). */
  scratch?(arena: Arena, bytes: number): number;
}

const REPACK_PIECE = 2 << 20;

type Repack = (src: number, dst: number, nb: number, ts: number, rowBytes: number) => void;
const repackers = new WeakMap<Arena, Record<string, unknown> | null>();

/** A layout's repacking export (repack4 by default) on the main thread, instantiated on `arena` (null: unavailable). */
function repacker(arena: Arena, buft: CpuBufferType, name = 'repack4'): Repack | null {
  let r = repackers.get(arena);
  if (r === undefined) {
    r = null;
    const module = (buft.device as { kernelModule?: () => WasmModule }).kernelModule?.();
    if (module) r = new Wasm.Instance(module, { env: { memory: arena.memory } }).exports;
    repackers.set(arena, r);
  }
  return (r?.[name] as Repack | undefined) ?? null;
}

/** A stored layout other than ggml's. */
export type TensorLayout = Rep4Layout | K4Layout;

/** Whether the device's kernels are the relaxed-SIMD build (the only one with K-quant layouts). */
function relaxedKernels(buft: CpuBufferType): boolean {
  return (buft.device as { variant?: string }).variant === 'relaxed';
}

/** A buffer the kernels can address: its arena, its first byte there, tensor layouts. */
export interface ArenaBacked {
  readonly arena: Arena;
  readonly base: number;
  layoutOf(root: Tensor): TensorLayout | undefined;
}

export function isArenaBacked(b: unknown): b is ArenaBacked & Buffer {
  return b instanceof CpuBuffer || b instanceof CpuHostBuffer;
}

export class CpuBuffer implements Buffer, ArenaBacked {
  usage: BufferUsage = 'any';
  private readonly layouts = new WeakMap<Tensor, TensorLayout>();
  private freed = false;

  constructor(
    readonly bufferType: CpuBufferType,
    readonly arena: Arena,
    readonly base: number,
    readonly size: number,
  ) {}

  layoutOf(root: Tensor): TensorLayout | undefined {
    return this.layouts.get(root);
  }

  initTensor(t: Tensor): void {
    if (t.viewSrc) return;
    // Q5_0 and Q4_0 rows can be written by kernels (CPY, SET_ROWS) in ggml's and rep4's
    // layouts only: k4 for weights only (other Q4_0 tensors, and the strict build's, rep4;
    // Q4_0 weights where the engine runs rep4's kernels faster too: engine-flags.ts)
    const writable = t.type === GGMLType.Q5_0 || t.type === GGMLType.Q4_0;
    if (
      K4Layout.applies(t) &&
      relaxedKernels(this.bufferType) &&
      (!writable || this.usage === 'weights') &&
      (t.type !== GGMLType.Q4_0 || q4_0Layout() === 'k4')
    ) {
      this.layouts.set(t, new K4Layout(t.type, t.ne));
    } else if (Rep4Layout.applies(t)) this.layouts.set(t, new Rep4Layout(t.type, t.ne));
  }

  /** The range was checked by the caller (api.ts); a freed buffer is this one's to refuse. */
  private check(): void {
    if (this.freed) throw new Error(`buffer of type ${this.bufferType.name} used after free`);
  }

  setTensor(t: Tensor, data: Uint8Array, offset = 0): void {
    this.check();
    const root = t.viewSrc ?? t;
    const mem = this.arena.bytes();
    const layout = this.layouts.get(root);
    if (!layout) {
      mem.set(data, this.base + t.offset + offset);
      return;
    }
    const start = t.offset - root.offset + offset;
    const a = this.bufferType.allocator;
    const name = layout instanceof K4Layout ? layout.repackExport : undefined;
    const repack =
      data.byteLength >= 4 * layout.rowBytes && a.scratch ? repacker(this.arena, this.bufferType, name) : null;
    if (!repack) {
      layout.write(mem, this.base + root.offset, start, data);
      return;
    }
    // pieces of whole groups go through scratch memory in the same arena (the device's work
    // region, 2 MiB at most), where wasm repacks them
    const g = 4 * layout.rowBytes;
    const piece = Math.max(g, Math.floor(REPACK_PIECE / g) * g);
    const scr = a.scratch!(this.arena, Math.min(piece, data.byteLength));
    for (let lo = 0; lo < data.byteLength; ) {
      // end pieces on multiples of the piece size (so of the group size) within the tensor
      const hi = Math.min(data.byteLength, (Math.floor((start + lo) / piece) + 1) * piece - start);
      const part = data.subarray(lo, hi);
      const m = this.arena.bytes();
      m.set(part, scr);
      layout.write(m, this.base + root.offset, start + lo, part, (s, dst, nb, ts, rowBytes) =>
        repack(scr + s, dst, nb, ts, rowBytes),
      );
      lo = hi;
    }
  }

  getTensor(t: Tensor, dst: Uint8Array, offset = 0): void {
    this.check();
    const root = t.viewSrc ?? t;
    const mem = this.arena.bytes();
    const layout = this.layouts.get(root);
    if (layout) layout.read(mem, this.base + root.offset, t.offset - root.offset + offset, dst);
    else {
      const p = this.base + t.offset + offset;
      dst.set(mem.subarray(p, p + dst.byteLength));
    }
  }

  memsetTensor(t: Tensor, value: number, offset: number, size: number): void {
    this.check();
    const root = t.viewSrc ?? t;
    const layout = this.layouts.get(root);
    if (layout) this.setTensor(t, new Uint8Array(size).fill(value), offset);
    else this.arena.bytes().fill(value, this.base + t.offset + offset, this.base + t.offset + offset + size);
  }

  copyTensor(_src: Tensor, _dst: Tensor): boolean {
    return false;
  }

  clear(value: number): void {
    this.arena.bytes().fill(value, this.base, this.base + this.size);
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.bufferType.allocator.releaseRange({ arena: this.arena, offset: this.base }, this.size);
  }

  hostBytes(): undefined {
    return undefined;
  }
}

/** Buffer types whose buffers are ranges of an arena; they differ in the buffer they make. */
abstract class ArenaBufferType implements BufferType {
  readonly alignment = 64;
  abstract readonly isHost: boolean;

  constructor(
    readonly name: string,
    readonly device: Device,
    readonly allocator: ArenaAllocator,
  ) {}

  get maxSize(): number {
    return this.allocator.maxBufferSize;
  }

  protected abstract make(arena: Arena, offset: number, size: number): Buffer;

  alloc(size: number, usage: BufferUsage = 'any'): Buffer {
    if (size > this.maxSize)
      throw new RangeError(`${this.name}: ${size} bytes exceed the buffer limit ${this.maxSize}`);
    const n = Math.ceil(Math.max(size, 1) / this.alignment) * this.alignment;
    const r = this.allocator.allocRange(n);
    const b = this.make(r.arena, r.offset, n);
    b.usage = usage;
    return b;
  }

  allocSize(t: Tensor): number {
    return t.nbytes;
  }
}

export class CpuBufferType extends ArenaBufferType {
  readonly isHost = false;

  protected make(arena: Arena, offset: number, size: number): Buffer {
    return new CpuBuffer(this, arena, offset, size);
  }
}

/** Plain host memory inside an arena. */
export class CpuHostBuffer extends HostBuffer implements ArenaBacked {
  private released = false;

  constructor(
    bufferType: CpuHostBufferType,
    readonly arena: Arena,
    readonly base: number,
    size: number,
  ) {
    super(bufferType, new Uint8Array(arena.memory.buffer, base, size));
  }

  layoutOf(): undefined {
    return undefined;
  }

  override free(): void {
    super.free();
    if (this.released) return;
    this.released = true;
    (this.bufferType as CpuHostBufferType).allocator.releaseRange({ arena: this.arena, offset: this.base }, this.size);
  }
}

export class CpuHostBufferType extends ArenaBufferType {
  readonly isHost = true;

  protected make(arena: Arena, offset: number, size: number): Buffer {
    return new CpuHostBuffer(this, arena, offset, size);
  }
}
