// The OpenAI-compatible HTTP server (llama-server's endpoints), a client of the library's parallel API.
export { ApiError, createHttpServer, keyMatches } from './http.js';
export { Metrics } from './metrics.js';
export * from './router/index.js';
export { LlamaServer, type ServerOptions } from './server.js';
