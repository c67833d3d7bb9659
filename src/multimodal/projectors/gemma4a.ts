// Gemma 4's audio encoder (clip.projector_type 'gemma4a'; mtmd's clip_graph_gemma4a), a
// conformer on src/media's gemma4aMel features (30 s chunks, one chunk of embeddings each,
// between "<|audio>" and "<audio|>"):
//   subsampling: two 3x3 stride-2 convolutions over (mel, time) with zero padding 1, each
//     + optional bias, LayerNorm over channels (optional weight), ReLU; channels × mel
//     flattened, a.input_projection.
//   per layer: half-step SiLU FFN (RMS pre-norm, optional post-norm); chunked local attention
//     (blocks of 12 queries seeing the 12 positions before them and their own: 24 keys),
//     q scaled by 1/√d / ln 2 and per_dim_scale, k by ln(1 + e) / ln 2 and per_dim_k_scale,
//     plus a sinusoidal relative-position term (13 distances through attn_k_rel,
//     Transformer-XL's shift), scores soft-capped at 50, masked, softmax; the light
//     convolution (RMS norm, pw1, GLU, causal depthwise conv of width 5 as ggml_ssm_conv,
//     RMS norm, SiLU, pw2); a second half-step FFN; RMS ln2.
//   then optional a.pre_encode.out, RMS norm × mm.a.soft_emb_norm, mm.a.input_projection.
// The norms use eps 1e-6 (clip.cpp hard-codes it). Matrix products through a weight W clamp
// their input and output to the file's W.input_min/max and W.output_min/max scalars where it
// has them (Gemma 4's clippable linears); the convolutions and attn_k_rel are not clamped.
// The convolutions are matrix products over ggml's im2col layout: the first's cut on the host
// from the mel, the second's from strided views of the zero-padded first output; both F16, as
// build 10257's ggml_conv_2d makes them whatever the kernel's type (so the kernel is rounded to
// F16 too, as ggml's F16 dot product takes it).

import { tensorGetF32 } from '../../backends/index.js';
import { f32ToF16 } from '../../ggml/fp16.js';
import * as ops from '../../ggml/ops.js';
import { newTensor, permute, reshape, type Tensor, TensorFlag, transpose, view } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { cosf, sinf } from '../../media/sincosf.js';
import type { Mmproj } from '../mmproj.js';

type Inputs = [Tensor, Float32Array | Int32Array | Uint16Array][];

/** Queries per attention block, past positions each block sees, keys per block, distances. */
const CHUNK = 12;
const PAST = 12;
const CONTEXT = CHUNK + PAST;
const DISTANCES = PAST + 1;
const EPS = 1e-6;
const SOFTCAP = 50;
/** The depthwise kernel's width (mtmd pads 4 frames in front of the ssm_conv input). */
const DW_WIDTH = 5;
const f = Math.fround;

/** Embeddings of a chunk of nFrames mel frames: two stride-2 convolutions (clip_n_output_tokens). */
export function gemma4aTokens(nFrames: number): number {
  return half(half(nFrames));
}

const half = (n: number) => Math.floor((n - 1) / 2) + 1;

/** Clamp bounds [inMin, inMax, outMin, outMax] by weight name, read once per projector. */
const clampCache = new WeakMap<Mmproj, Map<string, [number, number, number, number]>>();

async function clampBounds(mm: Mmproj): Promise<Map<string, [number, number, number, number]>> {
  const hit = clampCache.get(mm);
  if (hit) return hit;
  const out = new Map<string, [number, number, number, number]>();
  const scalar = async (name: string, dflt: number) => {
    const t = mm.opt(name);
    if (!t) return dflt;
    if (t.nelements !== 1) throw new Error(`${mm.path}: '${name}' has ${t.nelements} values, needs 1`);
    return (await tensorGetF32(t))[0]!;
  };
  const big = 3.4028234663852886e38; // FLT_MAX
  for (const name of mm.tensorNames) {
    if (!name.endsWith('.weight')) continue;
    const base = name.slice(0, -'.weight'.length);
    if (!['input_min', 'input_max', 'output_min', 'output_max'].some((s) => mm.opt(`${base}.${s}`))) continue;
    out.set(name, [
      await scalar(`${base}.input_min`, -big),
      await scalar(`${base}.input_max`, big),
      await scalar(`${base}.output_min`, -big),
      await scalar(`${base}.output_max`, big),
    ]);
  }
  clampCache.set(mm, out);
  return out;
}

/** The blocked attention mask [CONTEXT, CHUNK, blocks]: 0 where query and key may meet, -1e9 elsewhere. */
function blockMask(n: number, blocks: number): Float32Array {
  const mask = new Float32Array(CONTEXT * CHUNK * blocks).fill(-1e9);
  for (let b = 0; b < blocks; b++) {
    for (let q = 0; q < CHUNK; q++) {
      const gq = b * CHUNK + q;
      for (let k = 0; k < CONTEXT; k++) {
        const gk = b * CHUNK - PAST + k;
        if (gq < n && gk >= 0 && gk < n && gk <= gq && gq - gk < PAST) mask[k + q * CONTEXT + b * CONTEXT * CHUNK] = 0;
      }
    }
  }
  return mask;
}

/** Sinusoidal embeddings [E, DISTANCES] of the distances 12, 11, …, 0 (sines then cosines), in float as clip.cpp. */
function relativePositions(E: number): Float32Array {
  const nts = Math.floor(E / 2);
  const inc = f(f(Math.log(10000)) / Math.max(nts - 1, 1));
  const out = new Float32Array(E * DISTANCES);
  for (let p = 0; p < DISTANCES; p++) {
    const pos = PAST - p;
    for (let i = 0; i < nts; i++) {
      const scaled = f(pos * f(Math.exp(f(-i * inc))));
      out[p * E + i] = sinf(scaled);
      out[p * E + i + nts] = cosf(scaled);
    }
  }
  return out;
}

/**
 * The encoder graph for one chunk: mel [nMel][nFrames] (mel-major) → [projection, gemma4aTokens(nFrames)].
 * Host inputs are appended to `inputs`.
 */
export async function gemma4aGraph(mm: Mmproj, mel: Float32Array, nFrames: number, inputs: Inputs): Promise<Tensor> {
  const hp = mm.audio!;
  const E = hp.nEmbd;
  const H = hp.nHead;
  const D = E / H;
  const nMel = hp.nMel;
  if (E % H !== 0) {
    throw new Error(
      `${mm.path}: clip.audio.embedding_length ${E} is not a multiple of clip.audio.attention.head_count ${H}`,
    );
  }
  const clamps = await clampBounds(mm);
  const zeroCache = new Map<string, Tensor>();
  const zeros = (ne: number[]): Tensor => {
    const key = ne.join('x');
    let t = zeroCache.get(key);
    if (!t) {
      t = newTensor(GGMLType.F32, ne, `inp_zeros_${key}`).setFlag(TensorFlag.INPUT);
      inputs.push([t, new Float32Array(ne.reduce((a, b) => a * b, 1))]);
      zeroCache.set(key, t);
    }
    return t;
  };
  /** W·x (clip_graph_gemma4a::build_mm), clamped where the file has bounds for W, + the bias if any. */
  const mmw = (name: string, x: Tensor, bias = true): Tensor => {
    const c = clamps.get(`${name}.weight`);
    let y = ops.mulMat(mm.get(`${name}.weight`), c ? ops.clamp(x, c[0], c[1]) : x);
    if (c) y = ops.clamp(y, c[2], c[3]);
    const b = bias ? mm.opt(`${name}.bias`) : undefined;
    return b ? ops.add(y, b) : y;
  };
  /** RMS norm, × w when given. */
  const rms = (x: Tensor, w: Tensor | undefined) => (w ? ops.mul(ops.rmsNorm(x, EPS), w) : ops.rmsNorm(x, EPS));

  // ---- subsampling ----
  const w0 = mm.get('a.conv1d.0.weight');
  const w1 = mm.get('a.conv1d.1.weight');
  for (const [w, ic] of [
    [w0, 1],
    [w1, w0.ne[3]],
  ] as const) {
    if (w.ne[0] !== 3 || w.ne[1] !== 3 || w.ne[2] !== ic) {
      throw new Error(`${mm.path}: ${w.name} is [${w.ne.join(', ')}], needs [3, 3, ${ic}, channels]`);
    }
  }
  const W1 = half(nMel);
  const H1 = half(nFrames);
  // conv 0's im2col: per output (mel w, frame h), the 3x3 input window (kh, kw), zero outside
  const cols = new Float32Array(9 * W1 * H1);
  for (let oh = 0; oh < H1; oh++) {
    for (let ow = 0; ow < W1; ow++) {
      const at = (oh * W1 + ow) * 9;
      for (let kh = 0; kh < 3; kh++) {
        const t = 2 * oh + kh - 1;
        if (t < 0 || t >= nFrames) continue;
        for (let kw = 0; kw < 3; kw++) {
          const m = 2 * ow + kw - 1;
          if (m >= 0 && m < nMel) cols[at + kh * 3 + kw] = mel[m * nFrames + t]!;
        }
      }
    }
  }
  const im0 = newTensor(GGMLType.F16, [9, W1 * H1], 'inp_mel_cols').setFlag(TensorFlag.INPUT);
  inputs.push([im0, Uint16Array.from(cols, f32ToF16)]);
  const convPost = (y: Tensor, i: number): Tensor => {
    const b = mm.opt(`a.conv1d.${i}.bias`);
    if (b) y = ops.add(y, b);
    const nw = mm.opt(`a.conv1d.${i}.norm.weight`);
    if (nw) {
      // LayerNorm over the channels: channels first, normed, back
      y = ops.mul(ops.norm(ops.cont(permute(y, [1, 2, 0, 3])), EPS), nw);
      y = ops.cont(permute(y, [2, 0, 1, 3]));
    }
    return ops.relu(y);
  };
  const C0 = w0.ne[3];
  let y = convPost(reshape(ops.mulMat(im0, reshape(w0, [9, C0])), [W1, H1, C0]), 0);
  // conv 1: zero-pad the [W1, H1, C0] grid by one on each side, then per kernel row kh a
  // strided view [kw, channel, w, h]; the three stacked give im2col's (channel, kh, kw) order
  y = ops.concat(ops.concat(zeros([1, H1, C0]), y, 0), zeros([1, H1, C0]), 0);
  y = ops.concat(ops.concat(zeros([W1 + 2, 1, C0]), y, 1), zeros([W1 + 2, 1, C0]), 1);
  const W2 = half(W1);
  const H2 = half(H1);
  const rowsOf = (kh: number) =>
    reshape(ops.cont(view(y, [3, C0, W2, H2], [y.nb[2], 2 * y.nb[0], 2 * y.nb[1]], kh * y.nb[1])), [3, 1, C0, W2 * H2]);
  const cols1 = reshape(ops.concat(ops.concat(rowsOf(0), rowsOf(1), 1), rowsOf(2), 1), [9 * C0, W2 * H2]);
  const im1 = ops.cpy(cols1, newTensor(GGMLType.F16, [9 * C0, W2 * H2]));
  const C1 = w1.ne[3];
  y = convPost(reshape(ops.mulMat(im1, reshape(w1, [9 * C0, C1])), [W2, H2, C1]), 1);
  // (channel, mel) per frame, flattened
  const inProj = mm.get('a.input_projection.weight');
  if (inProj.ne[0] !== C1 * W2 || inProj.ne[1] !== E) {
    throw new Error(
      `${mm.path}: a.input_projection.weight is [${inProj.ne[0]}, ${inProj.ne[1]}], needs [${C1 * W2}, ${E}] (${C1} channels × ${W2} mel bands after subsampling ${nMel})`,
    );
  }
  let cur = reshape(ops.cont(permute(y, [1, 2, 0, 3])), [C1 * W2, H2]);
  cur = mmw('a.input_projection', cur);
  const n = H2;

  // ---- conformer layers ----
  const blocks = Math.ceil(n / CHUNK);
  const padQ = blocks * CHUNK - n;
  const mask = newTensor(GGMLType.F32, [CONTEXT, CHUNK, blocks], 'kq_mask').setFlag(TensorFlag.INPUT);
  const posEmb = newTensor(GGMLType.F32, [E, DISTANCES], 'pos_emb').setFlag(TensorFlag.INPUT);
  inputs.push([mask, blockMask(n, blocks)], [posEmb, relativePositions(E)]);
  const qScale = f(f(1 / f(Math.sqrt(D))) / f(Math.log(2)));
  const kScale = f(f(Math.log(f(1 + f(Math.E)))) / f(Math.log(2)));

  const halfFfn = (x: Tensor, L: string, s: string): Tensor => {
    let h = rms(x, mm.get(`${L}.ffn_norm${s}.weight`));
    h = mmw(`${L}.ffn_down${s}`, ops.silu(mmw(`${L}.ffn_up${s}`, h, false)), false);
    const post = mm.opt(`${L}.ffn_post_norm${s}.weight`);
    if (post) h = rms(h, post);
    return ops.add(x, ops.scale(h, 0.5));
  };
  // K or V [D, H, n] with PAST zero rows in front and zeros behind, then the overlapping
  // windows of CONTEXT rows every CHUNK rows: [D, CONTEXT, blocks, H]
  const windows = (t: Tensor): Tensor => {
    const p = ops.concat(ops.concat(zeros([D, H, PAST]), t, 2), zeros([D, H, CONTEXT * blocks - n - PAST]), 2);
    return view(p, [D, CONTEXT, blocks, H], [p.nb[2], CHUNK * p.nb[2], p.nb[1]], 0);
  };

  for (let il = 0; il < hp.nLayer; il++) {
    const L = `a.blk.${il}`;
    let res = halfFfn(cur, L, '');

    const q0 = mm.opt(`${L}.attn_q.weight`);
    const k0 = mm.opt(`${L}.attn_k.weight`);
    const v0 = mm.opt(`${L}.attn_v.weight`);
    if (q0 && k0 && v0) {
      const preW = mm.opt(`${L}.attn_pre_norm.weight`) ?? mm.opt(`${L}.ln1.weight`);
      const inp = preW ? rms(res, preW) : res;
      let q = ops.scale(reshape(mmw(`${L}.attn_q`, inp, false), [D, H, n]), qScale);
      const qs = mm.opt(`${L}.per_dim_scale.weight`);
      if (qs) q = ops.mul(q, qs);
      let k = ops.scale(reshape(mmw(`${L}.attn_k`, inp, false), [D, H, n]), kScale);
      const ks = mm.opt(`${L}.per_dim_k_scale.weight`);
      if (ks) k = ops.mul(k, ks);
      const v = reshape(mmw(`${L}.attn_v`, inp, false), [D, H, n]);
      // queries in blocks: [D, CHUNK, blocks, H]
      if (padQ > 0) q = ops.concat(q, zeros([D, H, padQ]), 2);
      q = ops.cont(permute(reshape(q, [D, H, CHUNK, blocks]), [0, 3, 1, 2]));
      const kb = ops.cont(windows(k));
      const vb = ops.cont(permute(windows(v), [1, 0, 2, 3])); // [CONTEXT, D, blocks, H]
      let scores = ops.mulMat(kb, q); // [CONTEXT, CHUNK, blocks, H]
      const rel = mm.opt(`${L}.attn_k_rel.weight`);
      if (rel) {
        const p = ops.cont(permute(reshape(ops.mulMat(rel, posEmb), [D, H, DISTANCES]), [0, 2, 1, 3])); // [D, R, H]
        let bd = ops.mulMat(p, reshape(q, [D, CHUNK * blocks, H])); // [R, CHUNK·blocks, H]
        bd = reshape(bd, [DISTANCES, CHUNK, blocks, H]);
        // the relative shift: rows padded to CONTEXT + 1, read back CONTEXT wide, so key
        // column s of query c holds distance index s − c
        bd = ops.concat(bd, zeros([CONTEXT + 1 - DISTANCES, CHUNK, blocks, H]), 0);
        bd = reshape(bd, [(CONTEXT + 1) * CHUNK, blocks, H]);
        bd = ops.cont(view(bd, [CHUNK * CONTEXT, blocks, H], [bd.nb[1], bd.nb[2]], 0));
        scores = ops.add(scores, reshape(bd, [CONTEXT, CHUNK, blocks, H]));
      }
      scores = ops.scale(ops.tanh(ops.scale(scores, 1 / SOFTCAP)), SOFTCAP);
      const attn = ops.softMax(ops.add(scores, mask));
      let x = ops.mulMat(vb, attn); // [D, CHUNK, blocks, H]
      x = ops.cont(permute(x, [0, 2, 3, 1]), [E, CHUNK * blocks]);
      if (padQ > 0) x = ops.cont(view(x, [E, n], [x.nb[1]], 0));
      x = mmw(`${L}.attn_out`, x);
      const post = mm.opt(`${L}.attn_post_norm.weight`);
      if (post) x = rms(x, post);
      res = ops.add(res, x);
    }

    // the light convolution module (its pre-norm is named conv_norm in the files, the norm
    // after the depthwise conv norm_conv: clip.cpp loads them crosswise)
    const preNorm = mm.opt(`${L}.conv_norm.weight`);
    if (preNorm) {
      let x = mmw(`${L}.conv_pw1`, rms(res, preNorm), false);
      const d = x.ne[0] / 2;
      const gate = ops.sigmoid(ops.cont(view(x, [d, n], [x.nb[1]], d * x.nb[0])));
      x = ops.mul(ops.cont(view(x, [d, n], [x.nb[1]], 0)), gate);
      x = ops.cont(transpose(x)); // [n, d]
      const dw = mm.get(`${L}.conv_dw.weight`);
      if (dw.type !== GGMLType.F32 || dw.ne[0] !== DW_WIDTH || dw.ne[1] !== d || dw.ne[2] !== 1) {
        throw new Error(`${mm.path}: ${dw.name} is ${dw.ne.join('x')}, needs an F32 [${DW_WIDTH}, ${d}] kernel`);
      }
      x = ops.concat(zeros([DW_WIDTH - 1, d]), x, 0); // causal: zeros in front
      x = reshape(ops.ssmConv(reshape(x, [n + DW_WIDTH - 1, d, 1]), dw), [d, n]);
      const dwb = mm.opt(`${L}.conv_dw.bias`);
      if (dwb) x = ops.add(x, dwb);
      const dwNorm = mm.opt(`${L}.norm_conv.weight`);
      if (dwNorm) x = rms(x, dwNorm);
      x = ops.silu(x);
      res = ops.add(res, mmw(`${L}.conv_pw2`, x, false));
    }

    res = halfFfn(res, L, '_1');
    const ln2 = mm.opt(`${L}.ln2.weight`);
    cur = ln2 ? rms(res, ln2) : res;
  }

  if (mm.opt('a.pre_encode.out.weight')) cur = mmw('a.pre_encode.out', cur);
  cur = rms(cur, mm.opt('mm.a.soft_emb_norm.weight'));
  return mmw('mm.a.input_projection', cur, false);
}
