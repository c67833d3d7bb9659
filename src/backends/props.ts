// Plain data about devices, the same on both surfaces of the backend layer (the public
// API in api.ts and the implementation interface in impl.ts): type, memory, capabilities.

export type DeviceType = 'cpu' | 'gpu' | 'accel';

export interface DeviceMemory {
  free: number;
  total: number;
}

/** What a device can do; callers ask these rather than test a device's class. */
export interface DeviceCaps {
  /** Asynchronous set/get/copy and compute. */
  async: boolean;
  /** The device offers a host buffer type (pinned or otherwise preferred host memory). */
  hostBuffer: boolean;
  /** Buffers can wrap existing host memory without a copy. */
  bufferFromHostPtr: boolean;
  /** Events (record, wait, synchronize) are supported. */
  events: boolean;
  /** Its backends run on a number of worker threads: `initBackend('threads=N')`. */
  threads: boolean;
  /**
   * An oracle: exact scalar kernels for every op, slow. Never chosen by default; the
   * model layer falls back to one for ops no other device runs.
   */
  oracle: boolean;
  /**
   * A GPU emulated on the CPU (SwiftShader, llvmpipe, a fallback adapter): listed and
   * usable by name, never chosen by default.
   */
  software?: boolean;
}

export interface DeviceProps {
  name: string;
  description: string;
  memory: DeviceMemory;
  type: DeviceType;
  caps: DeviceCaps;
}
