// llama-server's router mode: many models behind one server, each in a process of its own.
export { type ChildMessage, ModelInstance, type ModelStatus, type SpawnSpec } from './instance.js';
export { LlamaRouter, labelMetrics, type RouterOptions, type RouterState } from './router.js';
export {
  applyPreset,
  DEFAULT_STOP_TIMEOUT,
  modelsFromCache,
  modelsFromDir,
  parseIni,
  RouterConfigError,
  type RouterModel,
} from './sources.js';
