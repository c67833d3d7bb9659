// The WebGPU device for tests, or why there is none (tests skip with that message: CI
// without a GPU or SwiftShader must pass). SwiftShader: see README.md "GPU (WebGPU)".
import { deviceByName, enableWebGpu } from '../../src/backends/index.js';
import type { WebGpuDevice } from '../../src/backends/webgpu/device.js';

export async function webGpuDevice(): Promise<WebGpuDevice | string> {
  await enableWebGpu();
  const d = deviceByName('WebGPU0');
  if (!d)
    return 'no WebGPU adapter (install the optional `webgpu` package and a driver; for SwiftShader set VK_ICD_FILENAMES to its ICD)';
  return d as WebGpuDevice;
}
