// Models for the API tests, made by the generator (seeded random weights, cached in
// ~/.cache/llama-ts/models), so every API test runs on a fresh clone without ../shared.
// Tests against llama.cpp's and llama.node's references on ../shared's models live in
// shared-api.test.ts.
import { ensureModel } from '../../src/generator/index.js';

/** A small llama (64 wide, 2 layers, GQA, 512-token SentencePiece vocabulary; BOS 1, EOS 2). */
export function tinyLlama(type: 'Q8_0' | 'F32' | 'Q4_0' = 'Q8_0'): string {
  return ensureModel('tiny-llama', type);
}

/** Another model (qwen2: other shapes and vocabulary), for "saved with another model". */
export function tinyQwen2(): string {
  return ensureModel('tiny-qwen2', 'Q8_0');
}

/** A small BERT embedding model (mean pooling, WordPiece). */
export function tinyBert(type: 'F16' | 'Q8_0' = 'F16'): string {
  return ensureModel('tiny-bert', type);
}

/** The synthetic llama's end-of-generation token. */
export const TINY_EOS = 2;
