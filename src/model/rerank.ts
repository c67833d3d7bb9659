// Reranking: the tokens a reranker reads for one (query, document) pair, as llama-server's
// format_prompt_rerank builds them, and its score. A model with a rerank prompt
// (`tokenizer.chat_template.rerank`, e.g. Qwen3-Reranker's) gets that prompt with
// {query} and {document} filled in, tokenized with special tokens recognised and none
// added; any other gets [BOS] query [EOS] [SEP] document [EOS], each special only when the
// vocabulary adds it (EOS falls back to SEP when there is none), both texts tokenized as
// plain text. The score is the classification head's first output (pooling rank).
import { ContextError } from './errors.js';
import type { Model } from './model.js';

/** The tokens to evaluate (one sequence) to score `document` against `query`. */
export function rerankTokens(model: Model, query: string, document: string): number[] {
  const v = model.vocab;
  const template = model.rerankTemplate;
  if (template !== undefined) {
    const prompt = template.replaceAll('{query}', query).replaceAll('{document}', document);
    return v.encode(prompt, { addSpecial: false, parseSpecial: true });
  }
  const q = v.encode(query, { addSpecial: false, parseSpecial: false });
  const d = v.encode(document, { addSpecial: false, parseSpecial: false });
  const eos = v.eos >= 0 ? v.eos : v.sep;
  const out: number[] = [];
  const push = (id: number, what: string) => {
    if (id < 0) throw new ContextError(`${model.path}: the vocabulary has no ${what} token to build a rerank prompt`);
    out.push(id);
  };
  if (v.addBos) push(v.bos, 'BOS');
  out.push(...q);
  if (v.addEos) push(eos, 'EOS or SEP');
  if (v.addSep) push(v.sep, 'SEP');
  out.push(...d);
  if (v.addEos) push(eos, 'EOS or SEP');
  return out;
}

/**
 * A relevance score from the head's outputs: the first output, through a sigmoid when
 * `normalize` (for heads that end in a softmax, e.g. Qwen3's, it is already a probability).
 */
export function rerankScore(model: Model, head: Float32Array, normalize: boolean): number {
  const x = head[0];
  if (!normalize || model.arch.rank?.softmax) return x;
  return 1 / (1 + Math.exp(-x));
}
