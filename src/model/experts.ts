// Mixture-of-experts hyper-parameters (`{arch}.expert_*` keys), with llama.cpp's defaults.
// Which keys an architecture reads, and how it routes, follow its llama.cpp model file:
// the shared ones here, the rest (DeepSeek's gating function, weight scale and norm,
// leading dense layers) through the architecture's hparams hook.

import type { GGUFFile } from '../gguf/index.js';
import { ModelError } from './errors.js';

/**
 * How router logits become expert probabilities (llama_expert_gating_func_type):
 * 'softmax' over all experts; 'sigmoid' per expert; 'softmax_weight': the logits select
 * and a softmax over the selected ones weights (gpt-oss).
 */
export type ExpertGating = 'softmax' | 'sigmoid' | 'softmax_weight';

/** GGUF `expert_gating_func` values (0: unset, the architecture's default). */
export const GATING_BY_ID: Record<number, ExpertGating> = { 1: 'softmax', 2: 'sigmoid', 3: 'softmax_weight' };

export interface ExpertParams {
  /** Experts per MoE layer (`expert_count`). */
  nExpert: number;
  /** Experts each token uses (`expert_used_count`). */
  nExpertUsed: number;
  /** Rows of one expert's gate/up (`expert_feed_forward_length`; 0: the architecture's fallback). */
  nFfExp: number;
  /** expert_used_count and expert_feed_forward_length per block (one value repeated when the file gives one). */
  nExpertUsedArr: number[];
  nFfExpArr: number[];
  /** Rows of the shared expert (`expert_shared_feed_forward_length`; 0: fallback). */
  nFfShexp: number;
  /** Grouped selection (`expert_group_count`, `expert_group_used_count`; 0: none): experts are chosen among the best groups' only. */
  nExpertGroups: number;
  nGroupUsed: number;
  /** Width of the experts' input and output when they work in a latent space (Nemotron's `moe_latent_size`); 0: n_embd. */
  nEmbdLatent: number;
  /** Shared experts (`expert_shared_count`; DeepSeek: their rows are nFfExp each). */
  nExpertShared: number;
  /** Leading layers with a dense feed-forward instead of experts (`leading_dense_block_count`). */
  nLayerDenseLead: number;
  /** Routed weights are divided by their sum (DeepSeek's `expert_weights_norm`; others: fixed per arch). */
  weightsNorm: boolean;
  /** Routed weights are multiplied by this (`expert_weights_scale`); 0 or 1: not scaled. */
  weightsScale: number;
  gating: ExpertGating;
}

/**
 * The keys every MoE architecture shares; null for a model without experts. `perLayer`
 * reads a key given once or once per block (llama.cpp's get_key_or_arr): for
 * expert_used_count and expert_feed_forward_length, whose first block's value llama.cpp's
 * graphs and tensor shapes take (n_expert_used(), n_ff_exp()), and so do we.
 */
export function readExpertParams(
  file: GGUFFile,
  arch: string,
  perLayer: (key: string) => number[],
): ExpertParams | null {
  const num = (k: string, fallback: number) => file.getNumber(`${arch}.${k}`, fallback);
  const nExpert = num('expert_count', 0);
  if (nExpert === 0) return null;
  const where = `${file.path}: ${arch}.`;
  if (!(Number.isSafeInteger(nExpert) && nExpert > 0 && nExpert <= 512)) {
    throw new ModelError(`${where}expert_count = ${nExpert} is not an expert count (1..512)`);
  }
  const nExpertUsedArr = perLayer(`${arch}.expert_used_count`);
  const nFfExpArr = perLayer(`${arch}.expert_feed_forward_length`);
  const nExpertUsed = nExpertUsedArr[0];
  if (!(nExpertUsed > 0) || nExpertUsedArr.some((v) => !(Number.isSafeInteger(v) && v >= 0 && v <= nExpert))) {
    throw new ModelError(
      `${where}expert_used_count = ${nExpertUsedArr.every((v) => v === nExpertUsed) ? nExpertUsed : `[${nExpertUsedArr}]`} must be 1..expert_count (${nExpert})`,
    );
  }
  // grouped selection (DeepSeek-V3): the experts in `expert_group_count` equal groups, only
  // the `expert_group_used_count` best groups eligible (llama.cpp's asserts, as errors)
  const nExpertGroups = num('expert_group_count', 0);
  const nGroupUsed = num('expert_group_used_count', 0);
  if (nExpertGroups > 1) {
    if (
      !(Number.isSafeInteger(nExpertGroups) && nExpertGroups < nExpert && nExpert % nExpertGroups === 0) ||
      !(Number.isSafeInteger(nGroupUsed) && nGroupUsed > 0 && nGroupUsed < nExpertGroups)
    ) {
      throw new ModelError(
        `${where}expert_group_count = ${nExpertGroups} / expert_group_used_count = ${nGroupUsed}: groups must divide the ${nExpert} experts, and 0 < used < groups`,
      );
    }
  }
  for (const v of nFfExpArr) {
    if (!(Number.isSafeInteger(v) && v >= 0))
      throw new ModelError(`${where}expert_feed_forward_length = ${v} is not a count`);
  }
  for (const k of ['expert_shared_feed_forward_length', 'expert_shared_count']) {
    const v = num(k, 0);
    if (!(Number.isSafeInteger(v) && v >= 0)) throw new ModelError(`${where}${k} = ${v} is not a count`);
  }
  return {
    nExpert,
    nExpertUsed,
    nFfExp: nFfExpArr[0],
    nExpertUsedArr,
    nFfExpArr,
    nFfShexp: num('expert_shared_feed_forward_length', 0),
    nExpertShared: num('expert_shared_count', 0),
    nEmbdLatent: 0,
    nExpertGroups: nExpertGroups > 1 ? nExpertGroups : 0,
    nGroupUsed: nExpertGroups > 1 ? nGroupUsed : 0,
    nLayerDenseLead: 0,
    weightsNorm: false,
    weightsScale: 0,
    gating: 'softmax',
  };
}

/** The expert parameters of a model that must have experts (architecture files). */
export function requireExperts(moe: ExpertParams | null, arch: string): ExpertParams {
  if (!moe) throw new ModelError(`${arch}: expert_count must be > 0`);
  return moe;
}
