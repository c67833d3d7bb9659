// LLaVA's projector (clip.projector_type 'mlp'; mtmd's clip_graph_llava and its preprocessors):
//   LLaVA-1.5: the image fitted into image_size² (bicubic, centred, padded with the colour
//              122,116,104), one chunk of n_patches embeddings, no delimiters.
//   LLaVA-1.6: with clip.vision.image_grid_pinpoints, an image larger than a tile becomes the
//              tiles of the pinpoint resolution that keeps most of it (fitted, bicubic, padded
//              black), then the overview (stretched to image_size², bilinear), each its own
//              chunk. Order and resamplers as llama.cpp build 10257 (the oracle) does them:
//              overview first or a bicubic overview move log-probs by 0.1-0.3.
// The graph: patches, the class embedding appended after them, learned positions, pre-norm,
// all layers but the last (mtmd's default feature layer), then rows 1..n (mtmd skips row 0
// as if the class embedding came first: the last patch row is the class token's), then
// mm.0 → GELU → mm.2.

import * as ops from '../../ggml/ops.js';
import { newTensor, reshape, type Tensor, transpose, view } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { crop, type RgbImage, resize } from '../image.js';
import type { Mmproj } from '../mmproj.js';

/** What the graphs here need of the vision encoder (encoder.ts's VisionEncoder). */
export interface EncoderParts {
  readonly mm: Mmproj;
  vit(
    x: Tensor,
    n: number,
    rope?: (t: Tensor) => Tensor,
    prefix?: string,
    shape?: { nEmbd: number; nHead: number; nLayer: number; eps: number; rms?: boolean },
    hooks?: { vNorm?: boolean; kqScale?: number },
  ): Tensor;
  linear(x: Tensor, name: string): Tensor;
  /** Average pool m × m over a px × py grid of rows (ggml_pool_2d AVG). */
  avgPool(x: Tensor, px: number, py: number, m: number): Tensor;
  /** Pixel shuffle s × s of a w × h grid of rows: [E·s², (w/s)·(h/s)]. */
  patchMerge(x: Tensor, w: number, h: number, s: number): Tensor;
}

const LLAVA_PAD: readonly [number, number, number] = [122, 116, 104];

/** The images (8-bit, in prompt order) one picture becomes. */
export function llavaLayout(mm: Mmproj, img: RgbImage): RgbImage[] {
  const hp = mm.vision;
  const tile = hp.imageSize;
  if (hp.gridPinpoints.length === 0) return [resize(img, tile, tile, 'bicubic', 'ceil', LLAVA_PAD)];
  return tiles(img, tile, hp.gridPinpoints);
}

/**
 * mtmd's llava-uhd slicing with resolution candidates (LLaVA-1.6, InternVL): an image larger
 * than a tile becomes the tiles of the candidate that keeps most of it, then the overview.
 */
export function tiles(img: RgbImage, tile: number, candidates: [number, number][]): RgbImage[] {
  const overview = resize(img, tile, tile, 'bilinear', 'none');
  if (img.width <= tile && img.height <= tile) return [overview];
  const [rw, rh] = bestResolution(img.width, img.height, candidates);
  const refined = resize(img, rw, rh, 'bicubic', 'ceil');
  const out: RgbImage[] = [];
  for (let y = 0; y < rh; y += tile) {
    for (let x = 0; x < rw; x += tile) out.push(crop(refined, x, y, Math.min(tile, rw - x), Math.min(tile, rh - y)));
  }
  out.push(overview);
  return out;
}

/** LLaVA-1.6's select_best_resolution: the most of the image kept (fitted), then the least padding. */
function bestResolution(w: number, h: number, candidates: [number, number][]): [number, number] {
  let best = candidates[0]!;
  let bestEffective = 0;
  let bestWasted = Number.MAX_SAFE_INTEGER;
  for (const c of candidates) {
    const scale = Math.min(Math.fround(c[0] / w), Math.fround(c[1] / h));
    const tw = Math.trunc(Math.fround(w * scale));
    const th = Math.trunc(Math.fround(h * scale));
    const effective = Math.min(tw * th, w * h);
    const wasted = c[0] * c[1] - effective;
    if (effective > bestEffective || (effective === bestEffective && wasted < bestWasted)) {
      bestEffective = effective;
      bestWasted = wasted;
      best = c;
    }
  }
  return best;
}

/**
 * The patch embedding: the stride-p convolution as ggml_conv_2d computes it, a product over
 * the patches cut on the host (its im2col), which build 10257 builds in F16 whatever the
 * kernel's type: the patches rounded to F16, and the kernel with them (the F16 product's
 * other operand), F32 sums. Several kernels (Qwen-VL's two temporal halves) are summed;
 * + bias. [nEmbd, n].
 */
export function patchEmbed(mm: Mmproj, patches: Tensor, kernels: readonly string[] = ['v.patch_embd.weight']): Tensor {
  const [K, n] = [patches.ne[0], patches.ne[1]];
  const cols = ops.cpy(patches, newTensor(GGMLType.F16, [K, n]));
  let x: Tensor | null = null;
  for (const name of kernels) {
    const y = ops.cont(transpose(ops.mulMat(cols, reshape(mm.get(name), [K, mm.vision.nEmbd]))));
    x = x ? ops.add(x, y) : y;
  }
  const b = mm.opt('v.patch_embd.bias');
  return b ? ops.add(x!, b) : x!;
}

/** The graph for one image (tile): `patches` [3·p·p, n] is the patch-embedding input; [projectionDim, n]. */
export function llavaGraph(enc: EncoderParts, patches: Tensor): Tensor {
  const { mm } = enc;
  const hp = mm.vision;
  const E = hp.nEmbd;
  const n = patches.ne[1];
  let x = patchEmbed(mm, patches);
  const cls = mm.opt('v.class_embd');
  if (cls) x = ops.concat(x, reshape(cls, [E, 1]), 1);
  const nPos = x.ne[1];
  const posW = mm.get('v.position_embd.weight');
  if (posW.ne[1] < nPos) throw new Error(`vision encoder: ${nPos} positions but ${posW.ne[1]} learned ones`);
  x = ops.add(x, posW.ne[1] === nPos ? posW : view(posW, [E, nPos], [posW.nb[1]], 0));
  x = enc.vit(x, nPos, undefined, 'v', { ...hp, nLayer: hp.nLayer - 1 });
  // rows 1..n (see the header)
  const off = cls ? 1 : 0;
  x = ops.cont(view(x, [E, n], [x.nb[1]], off * x.nb[1]));
  if (mm.projector === 'ldpv2') return ldpv2Head(enc, x);
  if (mm.projector === 'ldp') return ldpHead(enc, x);
  x = ops.gelu(enc.linear(x, 'mm.0'));
  if (mm.opt('mm.2.weight')) x = enc.linear(x, 'mm.2');
  return x;
}

/** MobileVLM's fixed patch grid side (mtmd assumes it for ldp and ldpv2). */
const MOBILEVLM_GRID = 24;

function mobileVlmGrid(x: Tensor, projector: string): number {
  const g = MOBILEVLM_GRID;
  if (x.ne[1] !== g * g)
    throw new Error(`vision encoder: ${projector} needs a ${g}x${g} patch grid, got ${x.ne[1]} patches`);
  return g;
}

/**
 * ldpv2 (MobileVLM V2): the MLP, a 2×2 average pool of the 24×24 grid, then a depthwise 3×3
 * position conv (zero padded) + bias added to the pooled rows.
 */
function ldpv2Head(enc: EncoderParts, x: Tensor): Tensor {
  const { mm } = enc;
  const g = mobileVlmGrid(x, 'ldpv2');
  x = ops.gelu(enc.linear(x, 'mm.model.mlp.0'));
  x = enc.linear(x, 'mm.model.mlp.2');
  const h = g / 2;
  const pooled = enc.avgPool(x, g, g, 2); // [T, h·h]
  const conv = depthwise3x3(pooled, h, h, mm.get('mm.model.peg.0.weight'), 1);
  return ops.add(ops.add(conv, mm.get('mm.model.peg.0.bias')), pooled);
}

/**
 * ldp (MobileVLM v1): the MLP (mm.model.mlp.1, .3), then two MobileNetV3-style blocks
 * (mm.model.mb_block.{1,2}.block.N): a depthwise 3×3 conv (stride 1, then 2: 24×24 → 12×12),
 * LayerNorm, hardswish, squeeze-excitation (global mean → fc1 → ReLU → fc2 → hardsigmoid,
 * scaling the channels), a pointwise linear and LayerNorm; the first block adds its input back.
 */
function ldpHead(enc: EncoderParts, x: Tensor): Tensor {
  const g = mobileVlmGrid(x, 'ldp');
  x = ops.gelu(enc.linear(x, 'mm.model.mlp.1'));
  x = enc.linear(x, 'mm.model.mlp.3');
  const b1 = mobileBlock(enc, x, g, 1, 1);
  return mobileBlock(enc, ops.add(x, b1), g, 2, 2);
}

function mobileBlock(enc: EncoderParts, x: Tensor, g: number, block: number, stride: number): Tensor {
  const { mm } = enc;
  const eps = mm.vision.eps;
  const p = `mm.model.mb_block.${block}.block`;
  const layerNorm = (t: Tensor, name: string) =>
    ops.add(ops.mul(ops.norm(t, eps), mm.get(`${name}.weight`)), mm.get(`${name}.bias`));
  let cur = depthwise3x3(x, g, g, mm.get(`${p}.0.0.weight`), stride);
  cur = layerNorm(cur, `${p}.0.1`);
  // ggml_hardswish: x · min(1, max(0, (x + 3) / 6)); ggml_hardsigmoid: the factor alone
  const hardSigmoid = (t: Tensor) => ops.clamp(ops.scale(ops.scale(t, 1, 3), 1 / 6), 0, 1);
  const hw = ops.mul(cur, hardSigmoid(cur));
  // the global average pool over the grid: one mean per channel
  const n = hw.ne[1];
  let se = ops.scale(ops.sumRows(ops.cont(transpose(hw))), 1 / n); // [1, T]
  se = reshape(se, [se.ne[1], 1]);
  se = ops.relu(enc.linear(se, `${p}.1.fc1`));
  se = hardSigmoid(enc.linear(se, `${p}.1.fc2`));
  cur = enc.linear(ops.mul(hw, se), `${p}.2.0`);
  return layerNorm(cur, `${p}.2.1`);
}

/**
 * A depthwise 3×3 conv (zero padding 1, no bias) of a w × h grid of rows [T, w·h], as
 * ggml_conv_2d_dw computes it: its im2col rounds the input to F16, then each tap's product
 * with the kernel [3, 3, 1, T]; done here per tap on shifted (strided) views. [T, ow·oh].
 */
function depthwise3x3(x: Tensor, w: number, h: number, kernel: Tensor, stride: number): Tensor {
  const T = x.ne[0];
  const ow = Math.floor((w - 1) / stride) + 1;
  const oh = Math.floor((h - 1) / stride) + 1;
  // the input rounded to F16, zero padded to [T, w + 2, h + 2]
  const r16 = ops.cpy(x, newTensor(GGMLType.F16, [T, w * h]));
  const in32 = reshape(ops.cpy(r16, newTensor(GGMLType.F32, [T, w * h])), [T, w, h]);
  const zeros = (n1: number, n2: number) =>
    ops.scale(ops.cont(view(in32, [T, n1, n2], [in32.nb[1], in32.nb[2]], 0)), 0);
  let pad = ops.concat(ops.concat(zeros(1, h), in32, 1), zeros(1, h), 1); // [T, w + 2, h]
  pad = ops.concat(ops.concat(zeros(w + 2, 1), pad, 2), zeros(w + 2, 1), 2); // [T, w + 2, h + 2]
  const w32 = ops.cpy(kernel, newTensor(GGMLType.F32, [9, T]));
  const taps = ops.cont(transpose(w32)); // [T, 9]: tap k's weights per channel at column k
  let conv: Tensor | null = null;
  for (let ky = 0; ky < 3; ky++) {
    for (let kx = 0; kx < 3; kx++) {
      const k = ky * 3 + kx;
      const nb = [stride * pad.nb[1], stride * pad.nb[2]];
      const win = view(pad, [T, ow, oh], nb, kx * pad.nb[1] + ky * pad.nb[2]);
      const term = ops.mul(ops.cont(win), view(taps, [T], [], k * taps.nb[1]));
      conv = conv ? ops.add(conv, term) : term;
    }
  }
  return reshape(conv!, [T, ow * oh]);
}
