// What a backend implements (ggml's ggml-backend-impl.h): registry → device → buffer type
// → buffer, and the backend (an execution stream on a device). Users do not call these
// directly for common tasks: api.ts wraps them (tensorSet, tensorGet, device lookup).
//
// Contract notes, as ggml's:
// - Offsets and sizes are bytes; an offset passed to setTensor/getTensor/memsetTensor is
//   relative to the tensor's first byte (its `offset` in the buffer).
// - A buffer type may keep tensors in its own layout (repacked weights, device formats),
//   but setTensor/getTensor must round-trip byte-exactly for every sub-range.
// - Only host buffers (`bufferType.isHost`) expose their bytes.

import type { Graph } from '../ggml/graph.js';
import type { Tensor } from '../ggml/tensor.js';

export type DeviceType = 'cpu' | 'gpu' | 'accel';

export interface DeviceMemory {
  free: number;
  total: number;
}

export interface DeviceCaps {
  /** Asynchronous set/get/copy and compute. */
  async: boolean;
  /** The device offers a host buffer type (pinned or otherwise preferred host memory). */
  hostBuffer: boolean;
  /** Buffers can wrap existing host memory without a copy. */
  bufferFromHostPtr: boolean;
  /** Events (record, wait, synchronize) are supported. */
  events: boolean;
}

export interface DeviceProps {
  name: string;
  description: string;
  memory: DeviceMemory;
  type: DeviceType;
  caps: DeviceCaps;
}

/** One backend family (ggml_backend_reg): "Reference", "CPU", "WebGPU", "RPC". */
export interface BackendReg {
  readonly name: string;
  devices(): readonly Device[];
  /** Optional extras by name (ggml's get_proc_address); undefined when absent. */
  feature?(name: string): unknown;
}

/** Buffer roles (ggml_backend_buffer_usage). */
export type BufferUsage = 'any' | 'weights' | 'compute';

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

export interface Buffer {
  readonly bufferType: BufferType;
  readonly size: number;
  usage: BufferUsage;
  /** Called once a tensor (or view) is placed in this buffer. */
  initTensor(t: Tensor): void;
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
  free(): void;
  /** The raw bytes (host buffers only; undefined otherwise). */
  hostBytes(): Uint8Array | undefined;
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
