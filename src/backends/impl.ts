// What a backend implements (ggml's ggml-backend-impl.h): registry → device → buffer type
// → buffer, and the backend (an execution stream on a device). Only the backend layer
// imports this file: code above it uses the public API (api.ts, through index.ts), whose
// types are narrower views of these (no tensor data methods: tensorSet/tensorGet).
//
// Contract notes, as ggml's:
// - Offsets and sizes are bytes; an offset passed to setTensor/getTensor/memsetTensor is
//   relative to the tensor's first byte (its `offset` in the buffer). The caller has
//   checked that the range lies inside the tensor (api.ts's tensorSet/tensorGet/
//   tensorMemset, the one place that checks); implementations need not check again.
// - A buffer type may keep tensors in its own layout (repacked weights, device formats),
//   but setTensor/getTensor must round-trip byte-exactly for every sub-range.
// - Only host buffers (`bufferType.isHost`) expose their bytes.

import type { AllocBuffer, AllocBufferType, BufferUsage } from '../ggml/alloc.js';
import type { Graph } from '../ggml/graph.js';
import type { Tensor } from '../ggml/tensor.js';
import type { DeviceMemory, DeviceProps, DeviceType } from './props.js';

export type { BufferUsage } from '../ggml/alloc.js';
export type { DeviceCaps, DeviceMemory, DeviceProps, DeviceType } from './props.js';

/** One backend family (ggml_backend_reg): "Reference", "CPU", "WebGPU", "RPC". */
export interface BackendReg {
  readonly name: string;
  devices(): readonly Device[];
  /** Optional extras by name (ggml's get_proc_address); undefined when absent. */
  feature?(name: string): unknown;
}

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
  /**
   * A host buffer type the device prefers for staging (ggml's pinned host buffers), if any.
   * When that memory cannot be had it falls back to plain host memory with a warning.
   */
  hostBufferType?(): BufferType | undefined;
  supportsOp(op: Tensor): boolean;
  supportsBufferType(buft: BufferType): boolean;
  /** Whether an op whose weights live in host memory is still worth running here. */
  offloadOp(op: Tensor): boolean;
  eventNew?(): BackendEvent;
  eventFree?(event: BackendEvent): void;
  eventSynchronize?(event: BackendEvent): Promise<void>;
}

/** Name, alignment, maxSize, alloc and allocSize as the allocators need them (ggml/alloc.ts). */
export interface BufferType extends AllocBufferType<Buffer> {
  readonly device: Device;
  readonly isHost: boolean;
  alloc(size: number, usage?: BufferUsage): Buffer;
}

/** What a tensor's `buffer` is (size, usage, initTensor and free as the allocators need them). */
export interface Buffer extends AllocBuffer {
  readonly bufferType: BufferType;
  /** Write `data` at byte `offset` of tensor `t` (offset relative to the tensor's start). */
  setTensor(t: Tensor, data: Uint8Array, offset?: number): void;
  /** Read `dst.byteLength` bytes from byte `offset` of tensor `t`. */
  getTensor(t: Tensor, dst: Uint8Array, offset?: number): void | Promise<void>;
  /** Fill `size` bytes from `offset` of `t` with the byte `value`. */
  memsetTensor(t: Tensor, value: number, offset: number, size: number): void;
  /** Copy all of `src` (any buffer) into `dst` (in this buffer) directly; false if it cannot. */
  copyTensor(src: Tensor, dst: Tensor): boolean;
  /** Fill the whole buffer with the byte `value`. */
  clear(value: number): void;
  /** The raw bytes (host buffers only; undefined otherwise). */
  hostBytes(): Uint8Array | undefined;
}

/**
 * The backend buffer a tensor (or its view source) is placed in, or null. Only the
 * backend layer's allocators place tensors, so every TensorBuffer is one of these.
 */
export function bufferOf(t: Tensor): Buffer | null {
  return t.buffer as Buffer | null;
}

export interface BackendEvent {
  readonly device: Device;
}

/** An execution stream on a device (ggml_backend). */
export interface Backend {
  readonly name: string;
  readonly device: Device;
  graphCompute(graph: Graph): Promise<void>;
  setTensorAsync(t: Tensor, data: Uint8Array, offset?: number): Promise<void>;
  getTensorAsync(t: Tensor, dst: Uint8Array, offset?: number): Promise<void>;
  /** Copy src (another backend's tensor) into dst (this backend's); false if not possible directly. */
  copyTensorAsync?(src: Tensor, dst: Tensor): Promise<boolean>;
  synchronize(): Promise<void>;
  eventRecord?(event: BackendEvent): void;
  eventWait?(event: BackendEvent): Promise<void>;
  free(): void;
}
