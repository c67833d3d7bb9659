// What users of the backend layer call (ggml-backend.h): the public types (narrower views
// of the implementation interfaces in impl.ts, which only backends use), device lookup,
// backend creation, and tensor data transfer through whichever buffer holds a tensor.
// Every transfer's byte range is checked here, once (checkedBuffer): buffers trust it.

import type { BufferUsage } from '../ggml/alloc.js';
import type { Graph } from '../ggml/graph.js';
import type { Tensor } from '../ggml/tensor.js';
import { traitsOf } from '../ggml/types.js';
import type * as impl from './impl.js';
import { bufferOf } from './impl.js';
import type { DeviceMemory, DeviceProps, DeviceType } from './props.js';
import * as registry from './registry.js';

export type { BufferUsage } from '../ggml/alloc.js';
export type { DeviceCaps, DeviceMemory, DeviceProps, DeviceType } from './props.js';
export { backendsReady, registerBackend, registerOptionalBackend, unregisterBackend } from './registry.js';

// ---- public types (opaque handles, as ggml's ggml_backend_*_t) -------------------------

/** A backend family ("CPU", "Reference", "WebGPU"). */
export interface BackendReg {
  readonly name: string;
  devices(): readonly Device[];
  /** Optional extras by name (ggml's get_proc_address); undefined when absent. */
  feature?(name: string): unknown;
}

/** A compute device. Ask `props().caps` what it can do. */
export interface Device {
  readonly name: string;
  readonly description: string;
  readonly type: DeviceType;
  readonly reg: BackendReg;
  memory(): DeviceMemory;
  props(): DeviceProps;
  /** A new backend (execution stream) on this device; `params` is backend-specific. */
  initBackend(params?: string): Backend;
  /** The device's own buffer type. */
  bufferType(): BufferType;
  /** A host buffer type the device prefers for staging (pinned memory), if any. */
  hostBufferType?(): BufferType | undefined;
  supportsOp(op: Tensor): boolean;
  supportsBufferType(buft: BufferType): boolean;
}

export interface BufferType {
  readonly name: string;
  readonly device: Device;
  /** Every tensor's offset in a buffer of this type is a multiple of this. */
  readonly alignment: number;
  /** Largest single buffer this type can allocate. */
  readonly maxSize: number;
  readonly isHost: boolean;
  alloc(size: number, usage?: BufferUsage): Buffer;
  /** Bytes a tensor takes in this buffer type (≥ tensor.nbytes; some layouts pad). */
  allocSize(t: Tensor): number;
}

/** Memory of a buffer type. Tensor data goes through tensorSet / tensorGet / tensorMemset. */
export interface Buffer {
  readonly bufferType: BufferType;
  readonly size: number;
  usage: BufferUsage;
  /** Called once a tensor (or view) is placed in this buffer (the allocators do). */
  initTensor(t: Tensor): void;
  /** Fill the whole buffer with the byte `value`. */
  clear(value: number): void;
  free(): void;
  /** The raw bytes (host buffers only; undefined otherwise). */
  hostBytes(): Uint8Array | undefined;
}

export interface BackendEvent {
  readonly device: Device;
}

/** An execution stream on a device. */
export interface Backend {
  readonly name: string;
  readonly device: Device;
  graphCompute(graph: Graph): Promise<void>;
  synchronize(): Promise<void>;
  free(): void;
}

// ---- registry ------------------------------------------------------------------------

export function backendRegs(): readonly BackendReg[] {
  return registry.backendRegs();
}

/** A backend family by name, case-insensitive. */
export function backendRegByName(name: string): BackendReg | undefined {
  return registry.backendRegByName(name);
}

/** Every device of every registered backend, in registration order. */
export function listDevices(): Device[] {
  return registry.listDevices();
}

/** A device by name, case-insensitive ("reference", "CPU", "WebGPU0"). */
export function deviceByName(name: string): Device | undefined {
  return registry.deviceByName(name);
}

/** Devices of one type, in registration order. */
export function devicesByType(type: DeviceType): Device[] {
  return registry.devicesByType(type);
}

/** The first device of a type, or undefined. */
export function deviceByType(type: DeviceType): Device | undefined {
  return registry.deviceByType(type);
}

/** A backend on the named device, or on the best available one (gpu, then accel, then cpu; no software GPU). */
export function initBackend(deviceName?: string, params?: string): Backend {
  const best = (type: DeviceType) => devicesByType(type).find((d) => !d.props().caps.software);
  const dev: Device | undefined = deviceName ? deviceByName(deviceName) : (best('gpu') ?? best('accel') ?? best('cpu'));
  if (!dev) {
    const known = listDevices().map((d) => d.name);
    throw new Error(`no device ${deviceName ?? '(any)'}; registered: ${known.join(', ') || 'none'}`);
  }
  return dev.initBackend(params);
}

/** A backend on `dev`, with `nThreads` worker threads where its backends take a count (caps.threads). */
export function initDeviceBackend(dev: Device, nThreads: number): Backend {
  return dev.props().caps.threads ? dev.initBackend(`threads=${nThreads}`) : dev.initBackend();
}

/** The buffer types a device offers: its own and, if any, its host buffer type. */
export function deviceBufferTypes(dev: Device): BufferType[] {
  const out = [dev.bufferType()];
  const host = dev.hostBufferType?.();
  if (host) out.push(host);
  return out;
}

// ---- tensor data ----------------------------------------------------------------------

/** The buffer a tensor is placed in (a view's: its source's), or null before allocation. */
export function tensorBuffer(t: Tensor): Buffer | null {
  return bufferOf(t);
}

/**
 * The buffer holding `t`, once bytes [offset, offset + size) are known to lie inside the
 * tensor: the one range check of tensor data transfers.
 */
function checkedBuffer(what: string, t: Tensor, offset: number, size: number): impl.Buffer {
  const b = bufferOf(t);
  if (!b) throw new Error(`${what}: tensor ${t} is not allocated`);
  const n = t.nbytes;
  if (!(Number.isSafeInteger(offset) && Number.isSafeInteger(size) && offset >= 0 && size >= 0 && offset + size <= n)) {
    throw new RangeError(`${what}: bytes [${offset}, ${offset + size}) of tensor '${t.name}' are outside its ${n}`);
  }
  return b;
}

/** Write bytes (or a typed array's bytes) into a tensor at byte `offset`. */
export function tensorSet(t: Tensor, data: ArrayBufferView, offset = 0): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  checkedBuffer('tensorSet', t, offset, bytes.byteLength).setTensor(t, bytes, offset);
}

/** Read `size` bytes of a tensor from byte `offset` (default: all of it). */
export async function tensorGet(t: Tensor, offset = 0, size = t.nbytes - offset): Promise<Uint8Array> {
  const b = checkedBuffer('tensorGet', t, offset, size);
  const dst = new Uint8Array(size);
  await b.getTensor(t, dst, offset);
  return dst;
}

/**
 * Read `size` bytes of a tensor from byte `offset` synchronously, for buffers that read at
 * once (host memory, the CPU device); a buffer whose reads complete later is an error.
 */
export function tensorGetNow(t: Tensor, offset: number, size: number): Uint8Array {
  const dst = new Uint8Array(size);
  const r = checkedBuffer('tensorGetNow', t, offset, size).getTensor(t, dst, offset);
  if (r instanceof Promise)
    throw new Error(`tensorGetNow: tensor '${t.name}' is on a device that reads asynchronously`);
  return dst;
}

/** Read `dst.byteLength` bytes of a tensor from byte `offset` into `dst` (the caller's memory). */
export async function tensorGetInto(t: Tensor, dst: ArrayBufferView, offset = 0): Promise<void> {
  const bytes = new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength);
  await checkedBuffer('tensorGet', t, offset, bytes.byteLength).getTensor(t, bytes, offset);
}

/** Fill `size` bytes of a tensor from `offset` with the byte `value`. */
export function tensorMemset(t: Tensor, value: number, offset = 0, size = t.nbytes - offset): void {
  checkedBuffer('tensorMemset', t, offset, size).memsetTensor(t, value, offset, size);
}

/**
 * A tensor's bytes in place, when its buffer is host memory (ggml's `tensor->data` on a
 * host buffer): a view of [offset, offset + nbytes) of the buffer; undefined otherwise.
 */
export function tensorHostBytes(t: Tensor): Uint8Array | undefined {
  const bytes = checkedBuffer('tensorHostBytes', t, 0, t.nbytes).hostBytes();
  return bytes?.subarray(t.offset, t.offset + t.nbytes);
}

/**
 * Copy all of `src` into `dst` (same type and extents, any buffers). Uses the destination
 * buffer's direct copy when it has one, else goes through host memory, row by row when
 * either side is not contiguous.
 */
export async function tensorCopy(src: Tensor, dst: Tensor): Promise<void> {
  if (src.type !== dst.type || src.ne.some((n, i) => n !== dst.ne[i])) {
    throw new Error(`tensorCopy: ${src} and ${dst} differ in type or shape`);
  }
  checkedBuffer('tensorCopy', src, 0, src.nbytes);
  if (checkedBuffer('tensorCopy', dst, 0, dst.nbytes).copyTensor(src, dst)) return;
  if (src.isContiguous() && dst.isContiguous()) {
    tensorSet(dst, await tensorGet(src));
    return;
  }
  if (!src.hasContiguousRows() || !dst.hasContiguousRows()) {
    await copyStrided(src, dst);
    return;
  }
  const row = (dst.ne[0] / traitsOf(dst.type).blockSize) * traitsOf(dst.type).typeSize;
  for (let i3 = 0; i3 < src.ne[3]; i3++) {
    for (let i2 = 0; i2 < src.ne[2]; i2++) {
      for (let i1 = 0; i1 < src.ne[1]; i1++) {
        const bytes = await tensorGet(src, i1 * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3], row);
        tensorSet(dst, bytes, i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3]);
      }
    }
  }
}

/**
 * tensorCopy where a side has strided rows (a transposed view, such as a recurrent
 * layer's convolution state crossing devices): the spans go through host memory and the
 * elements are gathered and scattered there. Element types only (not blocks).
 */
async function copyStrided(src: Tensor, dst: Tensor): Promise<void> {
  const tr = traitsOf(src.type);
  if (tr.blockSize !== 1) throw new Error(`tensorCopy: ${src} or ${dst} has strided rows of a block type`);
  const es = tr.typeSize;
  const from = await tensorGet(src);
  const to = dst.isContiguous() ? new Uint8Array(dst.nbytes) : await tensorGet(dst);
  let k = 0;
  for (let i3 = 0; i3 < src.ne[3]; i3++) {
    for (let i2 = 0; i2 < src.ne[2]; i2++) {
      for (let i1 = 0; i1 < src.ne[1]; i1++) {
        for (let i0 = 0; i0 < src.ne[0]; i0++, k++) {
          const a = i0 * src.nb[0] + i1 * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3];
          const b = dst.isContiguous() ? k * es : i0 * dst.nb[0] + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
          to.set(from.subarray(a, a + es), b);
        }
      }
    }
  }
  tensorSet(dst, to);
}

/** Read a tensor as float32 values (F32 tensors only; contiguous or not). */
export async function tensorGetF32(t: Tensor): Promise<Float32Array> {
  if (traitsOf(t.type).name !== 'F32') throw new Error(`tensorGetF32: ${t} is not F32`);
  const out = new Float32Array(t.nelements);
  const row = new Float32Array(t.ne[0]);
  let k = 0;
  for (let i3 = 0; i3 < t.ne[3]; i3++) {
    for (let i2 = 0; i2 < t.ne[2]; i2++) {
      for (let i1 = 0; i1 < t.ne[1]; i1++) {
        const base = i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
        if (t.nb[0] === 4) {
          const bytes = await tensorGet(t, base, t.ne[0] * 4);
          out.set(new Float32Array(bytes.buffer, 0, t.ne[0]), k);
        } else {
          for (let i0 = 0; i0 < t.ne[0]; i0++) {
            const b = await tensorGet(t, base + i0 * t.nb[0], 4);
            row[i0] = new Float32Array(b.buffer)[0];
          }
          out.set(row, k);
        }
        k += t.ne[0];
      }
    }
  }
  return out;
}
