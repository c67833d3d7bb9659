// The backend layer's entry point: importing it registers every built-in backend.
// Optional backends (WebGPU, RPC) register here through registerOptionalBackend, so a
// failing one is logged and skipped without touching the host path.

// Registration order is preference order: the WebAssembly `cpu` device is the default,
// the scalar `reference` device the oracle and fallback.
import './cpu/index.js';
import './reference/index.js';

export * from './api.js';
