// Importing this module registers the WebGPU backend when an adapter is found (optional:
// a machine without WebGPU logs one line and runs on the host). LLAMA_TS_WEBGPU=0 skips
// the probe.

import { registerOptionalBackend } from '../registry.js';
import { acquireAdapter } from './adapter.js';
import { createWebGpuReg } from './device.js';

export { acquireAdapter } from './adapter.js';
export { createWebGpuReg, isSoftwareAdapter, WebGpuBackend, WebGpuDevice, WebGpuReg } from './device.js';

registerOptionalBackend('WebGPU', async () =>
  globalThis.process?.env.LLAMA_TS_WEBGPU === '0' ? null : createWebGpuReg(await acquireAdapter()),
);
