// One step of a sampling chain (llama.cpp's llama_sampler interface): `apply` reshapes or
// trims the candidates, or chooses one (sets `selected`); `accept` sees every token that
// becomes part of the context; `reset` forgets that history (and reseeds). One step per
// file; `chain.ts` runs them in order.
import type { Candidates } from './candidates.js';

export interface SamplingStep {
  /** llama.cpp's name for the sampler (`top-k`, `dist`, …). */
  readonly name: string;
  apply(c: Candidates): void;
  accept?(token: number): void;
  reset?(): void;
  /** An independent copy in the same state (speculative decoding, parallel sequences). */
  clone(): SamplingStep;
}
