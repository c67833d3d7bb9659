// Importing this module registers the CPU backend (one device, "CPU").

import { registerBackend } from '../registry.js';
import { CpuReg } from './device.js';

export { CpuBackend, CpuDevice, type CpuDeviceOptions, CpuReg } from './device.js';
export { cpuSupportsOp } from './support.js';
export { relaxedSimdSupported } from './wasm.js';

export const cpuReg = new CpuReg();
export const cpuDevice = cpuReg.addDevice();
registerBackend(cpuReg);
