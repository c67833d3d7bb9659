// The OpenAI-compatible HTTP server (llama-server's endpoints and continuous batching).
export { ApiError, createHttpServer, keyMatches } from './http.js';
export { Metrics } from './metrics.js';
export { LlamaServer, type ServerOptions } from './server.js';
export { QueueFullError, SlotScheduler, Task, type TaskParams, type TaskResult } from './slots.js';
