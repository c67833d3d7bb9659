// Models for the server tests: ../shared/models/stories260K.gguf (a trained llama) and the
// BERT fixture when ../shared is there; otherwise seeded tiny models from the generator,
// so the end-to-end tests run (with a note) in a fresh clone too.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

let dir: string | undefined;
function generated(preset: string, type: 'Q8_0' | 'F16'): string {
  dir ??= mkdtempSync(join(tmpdir(), 'llama-ts-server-'));
  const path = join(dir, `${preset}-${type}.gguf`);
  generateModel(presetSpec(preset, type), path);
  return path;
}

/** The chat/completions model: stories260K, else a generated tiny llama. */
export function chatModel(): string {
  const p = sharedPath('models/stories260K.gguf');
  if (p) return p;
  process.stderr.write(`# ${missingShared('models/stories260K.gguf')}; using a generated tiny llama\n`);
  return generated('tiny-llama', 'Q8_0');
}

/** The embedding model: the BERT fixture, else a generated tiny BERT. */
export function embeddingModel(): string {
  const p = sharedPath('fixtures/rand-bert-F16.gguf');
  if (p) return p;
  process.stderr.write(`# ${missingShared('fixtures/rand-bert-F16.gguf')}; using a generated tiny BERT\n`);
  return generated('tiny-bert', 'F16');
}
