// Architecture registry: `general.architecture` → its file. Adding an architecture is one
// file plus one line here.

import { ModelError } from '../errors.js';
import type { Architecture } from './arch.js';
import { bert } from './bert.js';
import { deepseek2 } from './deepseek2.js';
import { gemmaEmbedding } from './gemma-embedding.js';
import { gemma2 } from './gemma2.js';
import { gemma3 } from './gemma3.js';
import { gemma4 } from './gemma4.js';
import { gptOss } from './gpt-oss.js';
import { graniteHybrid } from './granite-hybrid.js';
import { lfm2, lfm2moe } from './lfm2.js';
import { llama } from './llama.js';
import { nemotronH, nemotronHMoe } from './nemotron-h.js';
import { phi3 } from './phi3.js';
import { qwen2, qwen2vl } from './qwen2.js';
import { qwen2moe } from './qwen2moe.js';
import { qwen3, qwen3vl } from './qwen3.js';
import { qwen3moe } from './qwen3moe.js';
import { qwen35 } from './qwen35.js';
import { qwen35moe } from './qwen35moe.js';
import { smollm3 } from './smollm3.js';

const ARCHITECTURES: ReadonlyMap<string, Architecture> = new Map(
  [
    llama,
    qwen2,
    qwen3,
    bert,
    gemma2,
    gemma3,
    gemma4,
    gemmaEmbedding,
    phi3,
    smollm3,
    qwen35,
    qwen35moe,
    lfm2,
    lfm2moe,
    graniteHybrid,
    nemotronH,
    nemotronHMoe,
    qwen2moe,
    qwen3moe,
    deepseek2,
    gptOss,
    qwen2vl,
    qwen3vl,
  ].map((a) => [a.name, a] as const),
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
