// Importing this module registers the reference backend (one device, "Reference").

import { registerBackend } from '../registry.js';
import { ReferenceReg } from './device.js';

export { ReferenceBackend, ReferenceDevice, type ReferenceDeviceOptions, ReferenceReg } from './device.js';
export { referenceCompute, referenceSupportsOp } from './ops/index.js';

export const referenceReg = new ReferenceReg();
export const referenceDevice = referenceReg.addDevice();
registerBackend(referenceReg);
