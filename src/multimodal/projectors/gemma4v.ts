// Gemma 4's vision projector (clip.projector_type 'gemma4v'; mtmd's clip_graph_gemma4v):
// the image resized (bilinear, as build 10257 does it; later llama.cpp: bicubic) to whole
// pooling blocks of patches within 40..280 output tokens, between "<|image>" and "<image|>". The graph: pixels mapped to [-1, 1], patches (no
// bias), learned x and y position tables added, ViT layers (RMS norms, per-head q/k norms, v
// RMS-normed, post-attention and post-FFN norms, K·Q unscaled) with a 2-D NEOX RoPE (base 100:
// the first half of each head turned by x, the second by y), average pool n_merge × n_merge,
// ×√n_embd, optional (x − std_bias)·std_scale, RMS norm, mm.input_projection. Every linear
// (the layers' and the projection) is clippable: where the file has NAME.input_min/max or
// .output_min/max scalars, its input and output are clamped (the encoder's `linear`).

import * as ops from '../../ggml/ops.js';
import { newTensor, reshape, type Tensor, TensorFlag, view } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { type EncoderParts, patchEmbed } from './llava.js';

const ROPE_THETA = 100;

export function gemma4vGraph(
  enc: EncoderParts,
  patches: Tensor,
  px: number,
  py: number,
  inputs: [Tensor, Float32Array | Int32Array | Uint16Array][],
): Tensor {
  const { mm } = enc;
  const hp = mm.vision;
  const E = hp.nEmbd;
  const n = px * py;
  const d = E / hp.nHead;
  // pixels 2·x − 1, on the patches (the convolution is linear and has no bias)
  const raw = inputs.find(([t]) => t === patches)?.[1];
  if (!(raw instanceof Float32Array)) throw new Error('gemma4v: the patches input is missing');
  for (let i = 0; i < raw.length; i++) raw[i] = raw[i] * 2 - 1;

  const posW = mm.get('v.position_embd.weight');
  const grid = posW.ne[1];
  if (posW.ne[0] !== E || posW.ne[2] !== 2) {
    throw new Error(`${mm.path}: v.position_embd.weight is [${posW.ne.join(', ')}], needs [${E}, grid, 2]`);
  }
  if (px > grid || py > grid) throw new Error(`vision encoder: ${px}x${py} patches but ${grid} positions per axis`);
  const posX = newTensor(GGMLType.I32, [n], 'pos_x').setFlag(TensorFlag.INPUT);
  const posY = newTensor(GGMLType.I32, [n], 'pos_y').setFlag(TensorFlag.INPUT);
  // the y table follows the x table: rows grid.. of the two stacked
  const rowsY = newTensor(GGMLType.I32, [n], 'pos_y_rows').setFlag(TensorFlag.INPUT);
  inputs.push(
    [posX, Int32Array.from({ length: n }, (_, i) => i % px)],
    [posY, Int32Array.from({ length: n }, (_, i) => Math.floor(i / px))],
    [rowsY, Int32Array.from({ length: n }, (_, i) => grid + Math.floor(i / px))],
  );
  const table = reshape(posW, [E, 2 * grid]);
  let x = patchEmbed(mm, patches);
  x = ops.add(x, ops.getRows(table, posX));
  x = ops.add(x, ops.getRows(table, rowsY));

  const half = d / 2;
  const o = { nDims: half, mode: ops.RopeMode.NEOX, freqBase: ROPE_THETA };
  const rope = (t: Tensor) => {
    const part = (at: number) => ops.cont(view(t, [half, t.ne[1], t.ne[2]], [t.nb[1], t.nb[2]], at * t.nb[0]));
    return ops.concat(ops.rope(part(0), posX, o), ops.rope(part(half), posY, o), 0);
  };
  x = enc.vit(x, n, rope, 'v', { ...hp, rms: true }, { vNorm: true, kqScale: 1 });

  let cur = ops.scale(enc.avgPool(x, px, py, hp.nMerge), Math.sqrt(E));
  const stdBias = mm.opt('v.std_bias');
  const stdScale = mm.opt('v.std_scale');
  // a − b as a + (−b): the same bits
  if (stdBias && stdScale) cur = ops.mul(ops.add(cur, ops.scale(stdBias, -1)), stdScale);
  cur = ops.rmsNorm(cur, hp.eps);
  return enc.linear(cur, 'mm.input_projection');
}
