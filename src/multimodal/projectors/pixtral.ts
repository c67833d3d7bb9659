// Pixtral's projector (clip.projector_type 'pixtral'; mtmd's clip_graph_pixtral): dynamic
// resolution (the image fitted to whole patches within the token limits; bilinear as build
// 10257, the oracle, resizes it: bicubic moves log-probs by up to 0.06), a ViT
// with RMS norms, SiLU-gated feed-forward and no learned positions but a 2-D RoPE (the first
// half of each head turned by the patch row, the second by its column at frequencies scaled
// by θ^(-2/d), θ = 10000), then mm.1 → GELU → mm.2, and one [IMG_BREAK] embedding after
// every row of patches but the last. The prompt text "[IMG_END]" follows the image.
// Mistral Small 3.1 (mm.patch_merger, clip.vision.spatial_merge_size m): between the ViT and
// mm.1, an RMS norm (mm.input_norm) and the patch merger: each m × m block of patches
// unfolded into one row (torch's unfold, ggml_im2col's order: channel, then row, then column
// within the block) through mm.patch_merger; the breaks then follow each row of blocks.

import * as ops from '../../ggml/ops.js';
import { newTensor, permute, reshape, type Tensor, TensorFlag, transpose, view } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import type { Mmproj } from '../mmproj.js';
import { type EncoderParts, patchEmbed } from './llava.js';

const ROPE_THETA = 10000;

/** Embeddings of a px × py patch grid: the merged grid's cells and a break after each row but the last. */
export function pixtralTokens(mm: Mmproj, px: number, py: number): { n: number; nx: number; ny: number } {
  const m = mm.vision.nMerge;
  const nx = Math.floor(px / m);
  const ny = Math.floor(py / m);
  return { n: nx * ny + (mm.opt('v.token_embd.img_break') ? ny - 1 : 0), nx, ny };
}

export function pixtralGraph(
  enc: EncoderParts,
  patches: Tensor,
  px: number,
  py: number,
  inputs: [Tensor, Float32Array | Int32Array | Uint16Array][],
): Tensor {
  const { mm } = enc;
  const hp = mm.vision;
  const n = px * py;
  const d = hp.nEmbd / hp.nHead;
  const posH = newTensor(GGMLType.I32, [n], 'inp_pos_h').setFlag(TensorFlag.INPUT);
  const posW = newTensor(GGMLType.I32, [n], 'inp_pos_w').setFlag(TensorFlag.INPUT);
  inputs.push(
    [posH, Int32Array.from({ length: n }, (_, i) => Math.floor(i / px))],
    [posW, Int32Array.from({ length: n }, (_, i) => i % px)],
  );
  const half = d / 2;
  const o = { nDims: half, mode: ops.RopeMode.NORMAL, freqBase: ROPE_THETA };
  const rope = (t: Tensor) => {
    const part = (at: number) => ops.cont(view(t, [half, t.ne[1], t.ne[2]], [t.nb[1], t.nb[2]], at * t.nb[0]));
    const a = ops.rope(part(0), posH, o);
    const b = ops.rope(part(half), posW, { ...o, freqScale: Math.fround(ROPE_THETA ** (-2 / d)) });
    return ops.concat(a, b, 0);
  };
  let x = enc.vit(patchEmbed(mm, patches), n, rope, 'v', { ...hp, rms: true });
  const merger = mm.opt('mm.patch_merger.weight');
  const m = merger ? hp.nMerge : 1;
  if (merger) {
    x = ops.mul(ops.rmsNorm(x, hp.eps), mm.get('mm.input_norm.weight'));
    x = ops.mulMat(merger, unfold(x, px, py, m));
  }
  x = enc.linear(ops.gelu(enc.linear(x, 'mm.1')), 'mm.2');
  const brk = mm.opt('v.token_embd.img_break');
  const nx = px / m;
  const ny = py / m;
  if (!brk || ny < 2) return x;
  // each row of nx cells, then the break row (a [T, 1, ny] column of it), the last one dropped
  const T = x.ne[0];
  const rows = ops.cont(view(x, [T, nx, ny], [x.nb[1], nx * x.nb[1]], 0));
  const col = ops.add(ops.scale(ops.cont(view(x, [T, 1, ny], [x.nb[1], nx * x.nb[1]], 0)), 0), brk);
  const all = ops.concat(rows, col, 1);
  return ops.cont(view(all, [T, nx * ny + ny - 1], [all.nb[1]], 0));
}

/**
 * The m × m blocks of a px × py grid of rows x [E, px·py] unfolded, one row per block in
 * raster order: [E·m², (px/m)·(py/m)], element c·m² + ky·m + kx of a row the patch (kx, ky)
 * of the block, channel c (ggml_im2col with an m × m kernel and stride m). Two copies, no
 * arithmetic: the patches' channels last, then the block's patches first.
 */
function unfold(x: Tensor, px: number, py: number, m: number): Tensor {
  const E = x.ne[0];
  if (px % m !== 0 || py % m !== 0) {
    throw new Error(`vision encoder: a ${px}x${py} patch grid is not whole ${m}x${m} merge blocks`);
  }
  // [px·py, E] as (kx, ox, ky, oy·E) → (kx, ky, ox, oy·E) → (kx·ky, c, ox, oy)
  const t = reshape(ops.cont(transpose(x)), [m, px / m, m, (py / m) * E]);
  const blocks = reshape(ops.cont(permute(t, [0, 2, 1, 3])), [m * m, px / m, py / m, E]);
  return reshape(ops.cont(permute(blocks, [0, 2, 3, 1])), [E * m * m, (px / m) * (py / m)]);
}
