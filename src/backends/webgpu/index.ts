// The WebGPU backend registers when asked: enableWebGpu() probes for an adapter and
// registers the device when one is found (a machine without WebGPU logs one line and runs
// on the host). In a browser with WebGPU (navigator.gpu) or with LLAMA_TS_WEBGPU=1,
// importing this module asks at once. In Node (and Deno, Bun) otherwise the
// probe waits for a caller that wants a GPU (`llama-ts devices`, tests): Dawn's native
// module takes ~0.2 s to start and writes driver warnings to stderr on machines without a
// usable Vulkan driver, which a CPU-only run should not pay. LLAMA_TS_WEBGPU=0 disables it.

import { platform } from '../../platform/index.js';
import { backendsReady, registerOptionalBackend } from '../registry.js';
import { acquireAdapter } from './adapter.js';
import { createWebGpuReg } from './device.js';

// (only enableWebGpu leaves this folder through the public index: the device's own types
// name WebGPU's GPU* globals, which a consumer without @webgpu/types cannot resolve; tests
// import ./device.js directly)

let asked = false;

/** Probes for a WebGPU adapter and registers its device (once); resolves when done. */
export function enableWebGpu(): Promise<void> {
  if (!asked) {
    asked = true;
    registerOptionalBackend('WebGPU', async () =>
      platform.env('LLAMA_TS_WEBGPU') === '0' ? null : createWebGpuReg(await acquireAdapter()),
    );
  }
  return backendsReady();
}

// (Deno has navigator.gpu too, but runs the Node platform and probes when asked, as Node:
// its wgpu probe on a machine without a usable driver is the same cost)
const browser =
  platform.name === 'web' && (globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu !== undefined;
const flag = platform.env('LLAMA_TS_WEBGPU');
if (flag === '1' || (browser && flag !== '0')) void enableWebGpu();
