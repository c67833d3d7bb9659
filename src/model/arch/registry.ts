// Architecture registry: `general.architecture` → its file. Adding an architecture is one
// file plus one line here.

import { ModelError } from '../errors.js';
import type { Architecture } from './arch.js';
import { bert } from './bert.js';
import { deepseek2 } from './deepseek2.js';
import { gptOss } from './gpt-oss.js';
import { llama } from './llama.js';
import { qwen2 } from './qwen2.js';
import { qwen2moe } from './qwen2moe.js';
import { qwen3 } from './qwen3.js';
import { qwen3moe } from './qwen3moe.js';

const ARCHITECTURES: ReadonlyMap<string, Architecture> = new Map(
  [llama, qwen2, qwen3, bert, qwen2moe, qwen3moe, deepseek2, gptOss].map((a) => [a.name, a] as const),
);

export function supportedArchitectures(): string[] {
  return [...ARCHITECTURES.keys()];
}

/** The architecture named `name`, or a ModelError listing the supported ones. */
export function architecture(name: string, file?: string): Architecture {
  const a = ARCHITECTURES.get(name);
  if (!a) {
    const where = file ? `${file}: ` : '';
    throw new ModelError(
      `${where}architecture '${name}' is not supported; supported: ${supportedArchitectures().join(', ')}`,
    );
  }
  return a;
}
