// Where generated models (and adapters) are cached.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** LLAMA_TS_CACHE, or ~/.cache/llama-ts/models. */
export function defaultCacheDir(): string {
  return process.env.LLAMA_TS_CACHE ?? join(homedir(), '.cache', 'llama-ts', 'models');
}
