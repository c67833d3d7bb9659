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
import { backendRegByName, backendsReady, type Device, deviceByName, devicesByType, listDevices } from './api.js';
import { referenceDevice, referenceGgmlCpuDevice } from './reference/index.js';
import { enableWebGpu } from './webgpu/index.js';

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

/** The host device models fall back to: the fastest CPU device (the oracle's twin only when there is no other). */
export function hostDevice(): Device {
  return devicesByType('cpu').find((d) => !d.props().caps.oracle) ?? fallbackDevice();
}

/** Every GPU and accelerator that is not a software one, in registration order. */
export function offloadDevices(): Device[] {
  return [...devicesByType('gpu'), ...devicesByType('accel')].filter((d) => !d.props().caps.software);
}

/** A device by its name or by its backend's (the backend's first device: "webgpu" is WebGPU0), case-insensitive. */
export function findDevice(name: string): Device | undefined {
  return deviceByName(name) ?? backendRegByName(name)?.devices()[0];
}

/** A name that asks for a WebGPU device ("webgpu", "WebGPU0"): the probe starts for it. */
export function isWebGpuName(name: string): boolean {
  return /^webgpu\d*$/i.test(name);
}

/**
 * Waits for the backends a request may name: a WebGPU name ("webgpu", "WebGPU0") or
 * `wantGpu` (n_gpu_layers > 0) starts the WebGPU probe, which Node runs only when asked.
 */
export async function devicesReady(names: readonly string[] = [], wantGpu = false): Promise<void> {
  if (wantGpu || names.some(isWebGpuName)) await enableWebGpu();
  await backendsReady();
}

/**
 * The devices for a model, by name (see findDevice), in priority order; the host device
 * goes last when none of them is a CPU device (as llama.cpp keeps the CPU for the layers
 * and ops the named devices do not take). Throws naming an unknown device and the known ones.
 */
export function namedDevices(names: readonly string[]): Device[] {
  const out: Device[] = [];
  for (const name of names) {
    const d = findDevice(name);
    if (!d) {
      const known = listDevices().filter((x) => !x.props().caps.oracle || x.name === name);
      throw new Error(`no device '${name}' (available: ${known.map((x) => x.name).join(', ')})`);
    }
    if (!out.includes(d)) out.push(d);
  }
  if (!out.some((d) => d.type === 'cpu')) out.push(hostDevice());
  return out;
}
