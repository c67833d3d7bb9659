// The sampler interface: turn a row of next-token logits into a token id. Greedy and
// temperature sampling implement it directly; `SamplerChain` (chain.ts) implements it
// with llama.cpp's steps (penalties, DRY, top-k, top-p, min-p, …) in llama.cpp's order.

export interface Sampler {
  readonly name: string;
  /** Choose the next token from logits [nVocab] (a chain also accepts it into its history). */
  sample(logits: Float32Array): number;
}
