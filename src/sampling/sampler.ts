// The sampler interface: turn a row of next-token logits into a token id. One sampler per
// file; a later chain (top-k, top-p, min-p, penalties, in llama.cpp's order) builds on this.

export interface Sampler {
  readonly name: string;
  /** Choose the next token from logits [nVocab]. */
  sample(logits: Float32Array): number;
}
