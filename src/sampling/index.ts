// Sampling: one sampler per file behind the Sampler interface.
import { GreedySampler } from './greedy.js';
import type { Sampler } from './sampler.js';
import { TemperatureSampler } from './temperature.js';

export { argmax, GreedySampler } from './greedy.js';
export type { Sampler } from './sampler.js';
export { seededRandom, TemperatureSampler } from './temperature.js';

/** Greedy at temperature 0 (or below), else temperature sampling with `seed`. */
export function createSampler(o: { temperature: number; seed: number }): Sampler {
  return o.temperature <= 0 ? new GreedySampler() : new TemperatureSampler(o.temperature, o.seed);
}
