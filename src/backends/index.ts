// The backend layer's public face: importing it registers every built-in backend; it
// exports the public API (api.ts), the scheduler, and the device choices that involve
// the built-in reference device. Code above src/backends imports this (or api.ts), never
// impl.ts or a backend's own modules.
// Optional backends (WebGPU, RPC) register here through registerOptionalBackend, so a
// failing one is logged and skipped without touching the host path.

// Registration order is preference order: the WebAssembly `cpu` device is the default,
// the scalar `reference` device the oracle and fallback.
import './cpu/index.js';
import './webgpu/index.js';
import type { Device } from './api.js';
import { referenceDevice, referenceGgmlCpuDevice } from './reference/index.js';

export * from './api.js';
export { Scheduler } from './scheduler.js';
export { enableWebGpu } from './webgpu/index.js';

/**
 * The device for ops no other device runs: the reference kernels with ggml-cpu numerics
 * (so that results match llama.cpp's CPU backend). Not registered.
 */
export function fallbackDevice(): Device {
  return referenceGgmlCpuDevice();
}

/**
 * The device a model computes on when asked for `d`: the registered reference device is
 * the exact oracle, so models run on its twin with ggml-cpu numerics; any other is itself.
 */
export function modelDevice(d: Device): Device {
  return d === referenceDevice ? referenceGgmlCpuDevice() : d;
}
