// The backend layer's entry point: importing it registers every built-in backend.
// Optional backends (WebGPU, RPC) register here through registerOptionalBackend, so a
// failing one is logged and skipped without touching the host path.

import './reference/index.js';
import './cpu/index.js';

export * from './api.js';
