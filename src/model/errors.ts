// Errors of the model layer: a file that is a valid GGUF but not a model llama-ts can run
// (unsupported architecture, missing or misshapen tensor), and runtime limits (a batch
// that does not fit in the context).

/** The file is not a model llama-ts can load. The message names the file and the problem. */
export class ModelError extends Error {
  override name = 'ModelError';
}

/** A decode could not proceed: the KV cache has no room, or the batch is invalid. */
export class ContextError extends Error {
  override name = 'ContextError';
}

/** The KV cache has no room for a batch (nothing was changed: freeing cells and retrying may work). */
export class KVCacheFullError extends ContextError {
  override name = 'KVCacheFullError';
}
