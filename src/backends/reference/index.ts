// Importing this module registers the reference backend (one device, "Reference").

import { registerBackend } from '../registry.js';
import { ReferenceDevice, ReferenceReg } from './device.js';

export { ReferenceBackend, ReferenceDevice, type ReferenceDeviceOptions, ReferenceReg } from './device.js';
export { referenceCompute, referenceSupportsOp } from './ops/index.js';

export const referenceReg = new ReferenceReg();
export const referenceDevice = referenceReg.addDevice();
registerBackend(referenceReg);

let ggmlCpu: ReferenceDevice | undefined;

/**
 * The reference kernels with ggml-cpu numerics (matmul activations rounded to the
 * weights' vec_dot_type, ggml's attention arithmetic). Not registered: the model layer
 * runs on it where the registry offers the plain reference device, so that logits match
 * llama.cpp's CPU backend, while the registered device stays the exact oracle.
 */
export function referenceGgmlCpuDevice(): ReferenceDevice {
  ggmlCpu ??= new ReferenceDevice(referenceReg, {
    name: 'Reference',
    description: 'scalar TypeScript reference kernels with ggml-cpu numerics (slow)',
    numerics: 'ggml-cpu',
  });
  return ggmlCpu;
}
