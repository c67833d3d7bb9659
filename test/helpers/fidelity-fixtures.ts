// The shared generative fixtures with llama.cpp's answers (models/, fixtures/,
// fixtures/archs/) and the tolerance a device meets on them: what the WebGPU fidelity test
// and bench/webgpu-fidelity.ts go through.

import { readdirSync } from 'node:fs';
import { sharedPath } from './shared.js';

/** Every generative fixture with a .ref.json: paths relative to ../shared, without .gguf. */
export function generativeFixtures(): string[] {
  const out: string[] = [];
  for (const m of ['models/stories260K', 'models/tiny-random-llama']) if (sharedPath(`${m}.gguf`)) out.push(m);
  for (const dir of ['fixtures', 'fixtures/archs']) {
    const at = sharedPath(dir);
    if (!at) continue;
    for (const f of readdirSync(at).sort()) {
      if (f.endsWith('.gguf') && !f.startsWith('rand-bert-')) out.push(`${dir}/${f.slice(0, -5)}`);
    }
  }
  return out.filter((rel) => sharedPath(`${rel}.ref.json`));
}

/** The CPU fidelity tolerance on top-10 logits relative to the top-1: float weights 0.02, quantized 0.1. */
export function fidelityTolerance(rel: string): number {
  return /-(F32|F16|BF16)$|stories260K|tiny-random/.test(rel) ? 0.02 : 0.1;
}
