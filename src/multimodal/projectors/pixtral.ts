// Pixtral's projector (clip.projector_type 'pixtral'; mtmd's clip_graph_pixtral): dynamic
// resolution (the image fitted to whole patches within the token limits; bilinear as build
// 10257, the oracle, resizes it: bicubic moves log-probs by up to 0.06), a ViT
// with RMS norms, SiLU-gated feed-forward and no learned positions but a 2-D RoPE (the first
// half of each head turned by the patch row, the second by its column at frequencies scaled
// by θ^(-2/d), θ = 10000), then mm.1 → GELU → mm.2, and one [IMG_BREAK] embedding after
// every row of patches but the last. The prompt text "[IMG_END]" follows the image.

import * as ops from '../../ggml/ops.js';
import { newTensor, type Tensor, TensorFlag, view } from '../../ggml/tensor.js';
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
  if (mm.opt('mm.patch_merger.weight')) {
    throw new Error(`${mm.path}: a pixtral projector with a patch merger (mm.patch_merger) is not supported`);
  }
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
  x = enc.linear(ops.gelu(enc.linear(x, 'mm.1')), 'mm.2');
  const brk = mm.opt('v.token_embd.img_break');
  if (!brk || py < 2) return x;
  // each row of px cells, then the break row (a [T, 1, py] column of it), the last one dropped
  const T = x.ne[0];
  const rows = ops.cont(view(x, [T, px, py], [x.nb[1], px * x.nb[1]], 0));
  const col = ops.add(ops.scale(ops.cont(view(x, [T, 1, py], [x.nb[1], px * x.nb[1]], 0)), 0), brk);
  const all = ops.concat(rows, col, 1);
  return ops.cont(view(all, [T, n + py - 1], [all.nb[1]], 0));
}
