// The vision encoders as ggml graphs on the backend layer (mtmd's clip_graph_siglip and
// build_vit): patch embedding (the convolution as a matrix product over patches cut on the
// host, ggml's im2col order), learned positions, pre-norm ViT layers (LayerNorm, attention
// with F16 K/V through FLASH_ATTN_EXT as clip.cpp runs it on CPU, GELU MLP), post-norm,
// then each projector's head:
//   gemma3:   avg-pool n_merge × n_merge, RMS soft_emb_norm, input_projection (transposed)
//   idefics3: pixel shuffle (scale_factor), linear mm.model.fc
//   lfm2:     positions bilinear-resized (antialiased) to the patch grid; pixel unshuffle,
//             LayerNorm (mm.input_norm), GELU MLP mm.1 → mm.2
// One image (tile) per graph; the output is [projectionDim, nTokens] as rows.

import {
  type Backend,
  fallbackDevice,
  hostDevice,
  initDeviceBackend,
  Scheduler,
  tensorGetF32,
  tensorSet,
} from '../backends/index.js';
import { f32ToF16 } from '../ggml/fp16.js';
import { buildGraph, levelNodes } from '../ggml/graph.js';
import * as ops from '../ggml/ops.js';
import { newTensor, permute, reshape, type Tensor, TensorFlag, transpose, view } from '../ggml/tensor.js';
import { GGMLType } from '../ggml/types.js';
import type { PlanarImage } from './image.js';
import { isQwenVL, type Mmproj } from './mmproj.js';
import { gemma4aGraph, gemma4aTokens } from './projectors/gemma4a.js';
import { gemma4vGraph } from './projectors/gemma4v.js';
import { internvlGraph } from './projectors/internvl.js';
import { llavaGraph, patchEmbed } from './projectors/llava.js';
import { pixtralGraph, pixtralTokens } from './projectors/pixtral.js';
import { interpolateAlignCorners } from './projectors/qwen3vl.js';
import { windowLayout } from './projectors/qwen25vl.js';

/** A graph's input tensors and the values they are set to. */
type Inputs = [Tensor, Float32Array | Int32Array | Uint16Array][];

/** Per-graph variations of the ViT layers. */
export interface VitHooks {
  /** The attention mask of layer il (windowed attention), or null. */
  maskFor?: (il: number) => Tensor | null;
  /** Called with each layer's output. */
  onLayer?: (il: number, out: Tensor) => void;
  /** Gemma 4: values RMS-normed (no weight) before attention. */
  vNorm?: boolean;
  /** The attention's K·Q scale; default 1/√d_head. */
  kqScale?: number;
}

/** Embedding rows an encoder produced for one image or tile. */
export interface Embeddings {
  /** Rows of `width` values, `nTokens` of them. */
  data: Float32Array;
  nTokens: number;
  width: number;
}

/** One computed node of an encoder graph (VisionEncoder.onNodes). */
export interface NodeValues {
  name: string;
  op: string;
  ne: number[];
  data: Float32Array;
}

export class VisionEncoder {
  /**
   * Debugging: when set, every F32 node of each graph is kept (its memory not reused) and
   * handed over in graph order after the run, to compare with llama.cpp's node dumps
   * (test/refs/mtmd/compare-nodes.mjs).
   */
  onNodes?: (nodes: NodeValues[]) => void;

  private readonly backends: Backend[];
  private readonly sched: Scheduler;
  /** Position embeddings resized to a patch grid (lfm2), by "w x h". */
  private readonly posCache = new Map<string, Float32Array>();
  private posTable: Float32Array | null = null;

  constructor(
    readonly mm: Mmproj,
    nThreads: number,
  ) {
    // the projector's device, then the host for what a GPU does not run, then the fallback
    const devices = [mm.device, hostDevice(), fallbackDevice()].filter((d, i, all) => all.indexOf(d) === i);
    this.backends = devices.map((d) => initDeviceBackend(d, nThreads));
    this.sched = new Scheduler(this.backends);
  }

  /** Output rows for an image of this size (without running the encoder), and their grid (x by y). */
  tokensFor(width: number, height: number): { n: number; nx: number; ny: number } {
    const hp = this.mm.vision;
    const px = Math.floor(width / hp.patchSize);
    const py = Math.floor(height / hp.patchSize);
    const m = hp.nMerge;
    if (this.mm.projector === 'pixtral') return pixtralTokens(this.mm, px, py);
    const pooled = this.mm.projector === 'gemma3' || this.mm.projector === 'gemma4v';
    const nx = pooled ? Math.floor(px / m) : Math.ceil(px / m);
    const ny = pooled ? Math.floor(py / m) : Math.ceil(py / m);
    return { n: nx * ny, nx, ny };
  }

  async encode(img: PlanarImage): Promise<Embeddings> {
    const hp = this.mm.vision;
    const p = hp.patchSize;
    const E = hp.nEmbd;
    const px = Math.floor(img.width / p);
    const py = Math.floor(img.height / p);
    if (px < 1 || py < 1 || img.width % p !== 0 || img.height % p !== 0) {
      throw new Error(`vision encoder: a ${img.width}x${img.height} image is not whole patches of ${p}`);
    }
    const nPatches = px * py;
    const K = 3 * p * p;
    const patches = newTensor(GGMLType.F32, [K, nPatches], 'inp_patches').setFlag(TensorFlag.INPUT);
    const inputs: Inputs = [[patches, im2col(img, p)]];

    const mm = this.mm;
    if (mm.projector === 'mlp' || mm.projector === 'ldp' || mm.projector === 'ldpv2')
      return this.run(llavaGraph(this, patches), inputs);
    if (mm.projector === 'internvl') return this.run(internvlGraph(this, patches, px, py), inputs);
    if (mm.projector === 'pixtral') return this.run(pixtralGraph(this, patches, px, py, inputs), inputs);
    if (mm.projector === 'gemma4v') return this.run(gemma4vGraph(this, patches, px, py, inputs), inputs);
    // Qwen-VL: a still image is both frames of the temporal patch: the two kernels' sum
    const kernels = ['v.patch_embd.weight', ...(isQwenVL(mm.projector) ? ['v.patch_embd.weight.1'] : [])];
    let x = patchEmbed(mm, patches, kernels);
    if (isQwenVL(mm.projector)) {
      if (mm.projector === 'qwen3vl_merger') {
        // learned positions, resized to the grid (raster order, regrouped with the patches)
        const pos = newTensor(GGMLType.F32, [E, nPatches], 'inp_pos_embd').setFlag(TensorFlag.INPUT);
        inputs.push([pos, await this.resizedPositions(mm.get('v.position_embd.weight'), px, py)]);
        x = ops.add(x, pos);
      }
      const m = hp.nMerge;
      if (px % m !== 0 || py % m !== 0) {
        throw new Error(`vision encoder: ${px}x${py} patches are not whole ${m}x${m} blocks`);
      }
      // patches regrouped by merge block (the merger takes each block's m² patches as one row)
      x = reshape(ops.cont(permute(reshape(x, [E * m, px / m, m, py / m]), [0, 2, 1, 3])), [E, nPatches]);
      // Qwen2.5-VL: blocks regrouped window by window, windowed attention but on every
      // windowPattern-th layer, the merged rows put back in raster order
      const win = hp.windowPattern > 0 ? windowLayout(px / m, py / m, p, m) : null;
      let maskFor: ((il: number) => Tensor | null) | undefined;
      if (win) {
        const nBlocks = nPatches / (m * m);
        const inv = newTensor(GGMLType.I32, [nBlocks], 'inv_window_idx').setFlag(TensorFlag.INPUT);
        const mask = newTensor(GGMLType.F16, [nPatches, nPatches], 'window_mask').setFlag(TensorFlag.INPUT);
        inputs.push([inv, win.invIdx], [mask, win.mask]);
        x = reshape(ops.getRows(reshape(x, [E * m * m, nBlocks]), inv), [E, nPatches]);
        maskFor = (il) => ((il + 1) % hp.windowPattern === 0 ? null : mask);
      }
      // Qwen3-VL's deepstack: the outputs of some layers merged by their own MLPs, appended
      // to each output row
      const deep = new Set(mm.deepstackLayers);
      const feats: Tensor[] = [];
      const onLayer = (il: number, h: Tensor) => {
        if (deep.has(il)) feats.push(this.deepstackMerge(h, il));
      };
      x = this.vit(x, nPatches, this.rope2d(px, py, inputs, win?.idx), 'v', undefined, { maskFor, onLayer });
      let out = this.project(x, px, py);
      for (const f of feats) out = ops.concat(out, f, 0);
      if (win) {
        const idx = newTensor(GGMLType.I32, [win.idx.length], 'window_idx').setFlag(TensorFlag.INPUT);
        inputs.push([idx, win.idx]);
        out = ops.getRows(out, idx);
      }
      return this.run(out, inputs);
    }
    // learned positions: as stored (a square grid the image matches), or resized to the grid
    const posW = mm.get('v.position_embd.weight');
    if (mm.projector === 'lfm2') {
      const pos = newTensor(GGMLType.F32, [E, nPatches], 'inp_pos_embd').setFlag(TensorFlag.INPUT);
      inputs.push([pos, await this.resizedPositions(posW, px, py)]);
      x = ops.add(x, pos);
    } else {
      if (posW.ne[1] !== nPatches) {
        throw new Error(`vision encoder: ${nPatches} patches but ${posW.ne[1]} learned positions`);
      }
      x = ops.add(x, posW);
    }
    x = this.vit(x, nPatches);
    return this.run(this.project(x, px, py), inputs);
  }

  /** Average pool m × m over a px × py grid of rows (for the graphs in ./projectors). */
  avgPool(x: Tensor, px: number, py: number, m: number): Tensor {
    return avgPool(x, px, py, m);
  }

  /** Pixel shuffle (build_patch_merge_permute) of a w × h grid of rows (for the graphs in ./projectors). */
  patchMerge(x: Tensor, w: number, h: number, s: number): Tensor {
    return patchMerge(x, w, h, s);
  }

  /** Computes `out` with its host inputs set (for the graphs in ./projectors). */
  async run(out: Tensor, inputs: Inputs): Promise<Embeddings> {
    const graph = buildGraph(out);
    levelNodes(graph);
    const kept = this.onNodes ? graph.nodes.filter((t) => !t.viewSrc && t.type === GGMLType.F32) : [];
    for (const t of kept) t.setFlag(TensorFlag.OUTPUT);
    this.sched.allocGraph(graph);
    for (const [t, d] of inputs) tensorSet(t, d);
    await this.sched.graphCompute(graph);
    if (this.onNodes) {
      const nodes: NodeValues[] = [];
      for (const t of kept) nodes.push({ name: t.name, op: t.op, ne: [...t.ne], data: await tensorGetF32(t) });
      this.onNodes(nodes);
    }
    const data = await tensorGetF32(out);
    return { data, nTokens: out.ne[1], width: out.ne[0] };
  }

  private layerNorm(x: Tensor, w: Tensor | undefined, b: Tensor | undefined, eps: number): Tensor {
    // Qwen2.5-VL's blocks use RMS norms (clip.cpp's NORM_TYPE_RMS for it)
    let cur = this.mm.projector === 'qwen2.5vl_merger' ? ops.rmsNorm(x, eps) : ops.norm(x, eps);
    if (w) cur = ops.mul(cur, w);
    if (b) cur = ops.add(cur, b);
    return cur;
  }

  private rmsNorm(x: Tensor, w: Tensor | undefined, b: Tensor | undefined, eps: number): Tensor {
    let cur = ops.rmsNorm(x, eps);
    if (w) cur = ops.mul(cur, w);
    if (b) cur = ops.add(cur, b);
    return cur;
  }

  /** x through `name`.weight (its input and output clamped where the file says: Gemma 4's clippable linears), + bias. */
  linear(x: Tensor, name: string): Tensor {
    const c = this.mm.clampOf(`${name}.weight`);
    let y = ops.mulMat(this.mm.get(`${name}.weight`), c ? ops.clamp(x, c.inMin, c.inMax) : x);
    if (c) y = ops.clamp(y, c.outMin, c.outMax);
    const b = this.mm.opt(`${name}.bias`);
    return b ? ops.add(y, b) : y;
  }

  private act(x: Tensor): Tensor {
    if (this.mm.hasAudio) return geluErf(x);
    const op = this.mm.vision.ffnOp;
    if (op === 'silu') return ops.silu(x);
    if (op === 'gelu') return ops.gelu(x);
    return geluQuick(x);
  }

  /**
   * Qwen2-VL's 2-D rotary embedding (ggml_rope_multi in VISION mode, sections d/4 each,
   * base 10000): pair (i, i + d/2) turns by y·10000^(-4i/d) for i < d/4 and by
   * x·10000^(-4(i - d/4)/d) above: two NEOX rotations at base 10000² (the second with
   * frequency factors 1/10000), each kept on its half of the pairs. Positions per patch
   * in merge-block order (or, given `blockOrder`, each block's m² patches at its place there).
   */
  private rope2d(px: number, py: number, inputs: Inputs, blockOrder?: Int32Array): (t: Tensor) => Tensor {
    const hp = this.mm.vision;
    const d = hp.nEmbd / hp.nHead;
    const m = hp.nMerge;
    const n = px * py;
    const ys = new Int32Array(n);
    const xs = new Int32Array(n);
    let at = 0;
    for (let y = 0; y < py; y += m) {
      for (let x = 0; x < px; x += m) {
        for (let dy = 0; dy < m; dy++) {
          for (let dx = 0; dx < m; dx++) {
            const to = blockOrder ? blockOrder[Math.floor(at / (m * m))]! * m * m + (at % (m * m)) : at;
            ys[to] = y + dy;
            xs[to] = x + dx;
            at++;
          }
        }
      }
    }
    const input = (type: number, ne: number, name: string) => newTensor(type, [ne], name).setFlag(TensorFlag.INPUT);
    const posY = input(GGMLType.I32, n, 'inp_pos_y');
    const posX = input(GGMLType.I32, n, 'inp_pos_x');
    const factors = input(GGMLType.F32, d / 2, 'inp_rope_factors');
    const maskY = input(GGMLType.F32, d, 'inp_rope_mask_y');
    const maskX = input(GGMLType.F32, d, 'inp_rope_mask_x');
    const base = 10000;
    const isY = (j: number) => j % (d / 2) < d / 4;
    inputs.push(
      [posY, ys],
      [posX, xs],
      [factors, Float32Array.from({ length: d / 2 }, (_, i) => (i < d / 4 ? 1 : 1 / base))],
      [maskY, Float32Array.from({ length: d }, (_, j) => (isY(j) ? 1 : 0))],
      [maskX, Float32Array.from({ length: d }, (_, j) => (isY(j) ? 0 : 1))],
    );
    const o = { nDims: d, mode: ops.RopeMode.NEOX, freqBase: base * base };
    return (t) =>
      ops.add(ops.mul(ops.rope(t, posY, o), maskY), ops.mul(ops.rope(t, posX, { ...o, freqFactors: factors }), maskX));
  }

  /**
   * A Whisper encoder (qwen2a, ultravox, voxtral) on one log-mel chunk [nMel][nFrames]
   * (mel-major): two convolutions of width 3 (stride 1, then 2; zero padded), each as ggml's
   * conv_1d_ph computes it (F16 im2col: both operands rounded to F16), + bias, GELU (erf);
   * learned positions; the layers; average pool 2 (not ultravox); post-norm; frames stacked
   * (ultravox, voxtral); the projector. [projectionDim, audioTokensFor(nFrames)]. gemma4a
   * (Gemma 4's conformer) runs its own graph: ./projectors/gemma4a.ts.
   */
  async encodeAudio(mel: Float32Array, nFrames: number): Promise<Embeddings> {
    const hp = this.mm.audio!;
    const mm = this.mm;
    const K = 3;
    const inputs: Inputs = [];
    if (mm.projector === 'gemma4a') return this.run(await gemma4aGraph(mm, mel, nFrames, inputs), inputs);
    // conv 1: its im2col (ic, k) per frame, cut here, in F16
    const nMel = hp.nMel;
    const cols = new Uint16Array(nMel * K * nFrames);
    for (let t = 0; t < nFrames; t++) {
      for (let ic = 0; ic < nMel; ic++) {
        for (let k = 0; k < K; k++) {
          const src = t + k - 1;
          const v = src >= 0 && src < nFrames ? mel[ic * nFrames + src] : 0;
          cols[t * nMel * K + ic * K + k] = f32ToF16(v);
        }
      }
    }
    const im1 = newTensor(GGMLType.F16, [nMel * K, nFrames], 'inp_mel_cols').setFlag(TensorFlag.INPUT);
    inputs.push([im1, cols]);
    const conv = (im: Tensor, w: Tensor, b: Tensor): Tensor => {
      // [frames, out channels] + bias [1, out]
      const y = ops.mulMat(im, reshape(w, [w.ne[0] * w.ne[1], w.ne[2]]));
      return geluErf(ops.add(y, b));
    };
    const x1 = conv(im1, mm.get('a.conv1d.1.weight'), mm.get('a.conv1d.1.bias')); // [T, C]
    const C = x1.ne[1];
    const zero = newTensor(GGMLType.F32, [1, C], 'inp_zero_col').setFlag(TensorFlag.INPUT);
    inputs.push([zero, new Float32Array(C)]);
    const pad = ops.concat(ops.concat(zero, x1, 0), zero, 0); // [T + 2, C]
    const T2 = Math.floor((nFrames - 1) / 2) + 1;
    // conv 2 (stride 2): element (k, ic, t) of its im2col is pad[2t + k, ic]
    const cols2 = ops.cont(view(pad, [K, C, T2], [pad.nb[1], 2 * pad.nb[0]], 0), [K * C, T2]);
    const im2 = ops.cpy(cols2, newTensor(GGMLType.F16, [K * C, T2]));
    const x2 = conv(im2, mm.get('a.conv1d.2.weight'), mm.get('a.conv1d.2.bias')); // [T2, E]
    let x = ops.cont(transpose(x2)); // [E, T2]
    const posW = mm.get('a.position_embd.weight');
    if (posW.ne[1] < T2) throw new Error(`audio encoder: ${T2} frames but ${posW.ne[1]} learned positions`);
    x = ops.add(x, view(posW, [posW.ne[0], T2], [posW.nb[1]], 0));
    // qwen2a, voxtral: average pool 2 over frames before the post-norm (build 10257's build_vit)
    const pool = mm.projector !== 'ultravox';
    x = this.vit(x, T2, undefined, 'a', { ...hp, skipPostNorm: pool });
    const E = hp.nEmbd;
    let n = T2;
    if (pool) {
      n = Math.floor(T2 / 2);
      const pick = (o: number) => ops.cont(view(x, [E, n], [2 * x.nb[1]], o * x.nb[1]));
      x = ops.scale(ops.add(pick(0), pick(1)), 0.5);
      x = this.layerNorm(x, mm.opt('a.post_ln.weight'), mm.opt('a.post_ln.bias'), hp.eps);
    }
    // ultravox, voxtral: stack frames into one row (build 10257 aborts where they do not divide)
    const s = hp.stackFactor;
    if (s > 1) {
      if (n % s !== 0) throw new Error(`audio encoder: ${n} frames do not stack by ${s} (${mm.path})`);
      x = reshape(x, [E * s, n / s]);
    }
    switch (mm.projector) {
      case 'ultravox': {
        // RMS pre-norm, linear, SwiGLU with the second half through silu, RMS mid-norm, linear
        let cur = ops.mul(ops.rmsNorm(x, 1e-6), mm.get('mm.a.norm_pre.weight'));
        cur = this.linear(cur, 'mm.a.mlp.1');
        const H = cur.ne[0] / 2;
        const half = (o: number) => ops.cont(view(cur, [H, cur.ne[1]], [cur.nb[1]], o * H * cur.nb[0]));
        cur = ops.mul(ops.silu(half(1)), half(0));
        cur = ops.mul(ops.rmsNorm(cur, 1e-6), mm.get('mm.a.norm_mid.weight'));
        return this.run(this.linear(cur, 'mm.a.mlp.2'), inputs);
      }
      case 'voxtral':
        return this.run(this.linear(geluErf(this.linear(x, 'mm.a.mlp.1')), 'mm.a.mlp.2'), inputs);
      default:
        return this.run(this.linear(x, 'mm.a.fc'), inputs);
    }
  }

  /** Embeddings of one audio chunk of nFrames mel frames (clip_n_output_tokens). */
  audioTokensFor(nFrames: number): number {
    const hp = this.mm.audio!;
    if (this.mm.projector === 'gemma4a') return gemma4aTokens(nFrames);
    let n = Math.ceil(nFrames / hp.stackFactor);
    n = Math.floor(n / 2); // the stride-2 convolution
    if (this.mm.projector !== 'ultravox') n = Math.floor(n / 2); // the average pool
    return n;
  }

  /**
   * build_vit: pre-norm layers, then the post-norm. x [E, n]; `rope` turns q and k [d, heads, n];
   * `maskFor` gives a layer's attention mask (F16 [n, n]; none: full attention); `onLayer`
   * sees each layer's output. Public for the graphs in ./projectors.
   */
  vit(
    x: Tensor,
    n: number,
    rope?: (t: Tensor) => Tensor,
    prefix = 'v',
    shape?: { nEmbd: number; nHead: number; nLayer: number; eps: number; skipPostNorm?: boolean; rms?: boolean },
    hooks: VitHooks = {},
  ): Tensor {
    const { mm } = this;
    const hp = shape ?? mm.vision;
    const E = hp.nEmbd;
    const dHead = E / hp.nHead;
    const opt = (s: string) => mm.opt(s);
    let inpL = x;
    const norm = (t: Tensor, w: Tensor | undefined, b: Tensor | undefined) =>
      shape?.rms ? this.rmsNorm(t, w, b, hp.eps) : this.layerNorm(t, w, b, hp.eps);
    const pre = opt(`${prefix}.pre_ln.weight`);
    if (pre) inpL = norm(inpL, pre, opt(`${prefix}.pre_ln.bias`));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = `${prefix}.blk.${il}`;
      let cur = norm(inpL, opt(`${L}.ln1.weight`), opt(`${L}.ln1.bias`));
      // q, k, v: separate, or slices of one fused product (Qwen3-VL's attn_qkv)
      const fused = opt(`${L}.attn_qkv.weight`) ? this.linear(cur, `${L}.attn_qkv`) : null;
      const proj = (name: string, i: number) =>
        fused
          ? ops.cont(view(fused, [dHead, hp.nHead, n], [dHead * fused.nb[0], fused.nb[1]], i * E * fused.nb[0]))
          : reshape(this.linear(cur, `${L}.${name}`), [dHead, hp.nHead, n]);
      // q/k norms (Gemma 4): per head where the weight is d_head wide, else over the whole row
      const qkNorm = (t: Tensor, name: string) => {
        const w = opt(`${L}.${name}.weight`);
        if (!w) return t;
        if (w.ne[0] === dHead) return norm(t, w, undefined);
        return reshape(norm(reshape(t, [E, n]), w, undefined), [dHead, hp.nHead, n]);
      };
      let q = qkNorm(proj('attn_q', 0), 'attn_q_norm');
      let k = qkNorm(proj('attn_k', 1), 'attn_k_norm');
      if (rope) {
        q = rope(q);
        k = rope(k);
      }
      let v = proj('attn_v', 2);
      if (hooks.vNorm) v = ops.rmsNorm(v, hp.eps);
      const qp = permute(q, [0, 2, 1, 3]);
      const kp = permute(k, [0, 2, 1, 3]);
      const vp = permute(v, [0, 2, 1, 3]);
      const k16 = ops.cpy(kp, newTensor(GGMLType.F16, [kp.ne[0], kp.ne[1], kp.ne[2]]));
      const v16 = ops.cpy(vp, newTensor(GGMLType.F16, [vp.ne[0], vp.ne[1], vp.ne[2]]));
      const fa = ops.flashAttnExt(qp, k16, v16, hooks.maskFor?.(il) ?? null, hooks.kqScale ?? 1 / Math.sqrt(dHead));
      cur = this.linear(reshape(fa, [E, n]), `${L}.attn_out`);
      const ls1 = opt(`${L}.ls1.weight`); // layer scales (InternViT)
      if (ls1) cur = ops.mul(cur, ls1);
      const postAttn = opt(`${L}.attn_post_norm.weight`); // post-norms (Gemma 4)
      if (postAttn) cur = norm(cur, postAttn, undefined);
      cur = ops.add(cur, inpL);
      inpL = cur;
      cur = norm(cur, opt(`${L}.ln2.weight`), opt(`${L}.ln2.bias`));
      // a gated feed-forward where the file has ffn_gate (clip.cpp's build_ffn): act(gate) · up
      const up = this.linear(cur, `${L}.ffn_up`);
      cur = opt(`${L}.ffn_gate.weight`) ? ops.mul(this.act(this.linear(cur, `${L}.ffn_gate`)), up) : this.act(up);
      cur = this.linear(cur, `${L}.ffn_down`);
      const postFfn = opt(`${L}.ffn_post_norm.weight`);
      if (postFfn) cur = norm(cur, postFfn, undefined);
      const ls2 = opt(`${L}.ls2.weight`);
      if (ls2) cur = ops.mul(cur, ls2);
      inpL = ops.add(inpL, cur);
      hooks.onLayer?.(il, inpL);
    }
    const post = opt(`${prefix}.post_ln.weight`);
    if (post && !shape?.skipPostNorm) inpL = norm(inpL, post, opt(`${prefix}.post_ln.bias`));
    return inpL;
  }

  private project(x: Tensor, px: number, py: number): Tensor {
    const { mm } = this;
    const hp = mm.vision;
    switch (mm.projector) {
      case 'gemma3': {
        let cur = avgPool(x, px, py, hp.nMerge);
        cur = ops.mul(ops.rmsNorm(cur, hp.eps), mm.get('mm.soft_emb_norm.weight'));
        return ops.mulMat(ops.cont(transpose(mm.get('mm.input_projection.weight'))), cur);
      }
      case 'idefics3':
        return ops.mulMat(mm.get('mm.model.fc.weight'), patchMerge(x, px, py, hp.nMerge));
      case 'lfm2': {
        let cur = patchMerge(x, px, py, hp.nMerge);
        const w = mm.opt('mm.input_norm.weight');
        if (w) cur = ops.mul(ops.norm(cur, 1e-5), w);
        const b = mm.opt('mm.input_norm.bias');
        if (b) cur = ops.add(cur, b);
        cur = ops.gelu(this.linear(cur, 'mm.1'));
        return this.linear(cur, 'mm.2');
      }
      case 'qwen2a':
        throw new Error('vision encoder: qwen2a is an audio projector');
      case 'ultravox':
      case 'voxtral':
      case 'gemma4a':
        throw new Error(`vision encoder: ${mm.projector} is an audio projector`);
      case 'mlp':
      case 'ldp':
      case 'ldpv2':
      case 'pixtral':
      case 'internvl':
      case 'gemma4v':
        throw new Error(`vision encoder: ${mm.projector} runs its own graph (./projectors)`);
      case 'qwen2vl_merger':
      case 'qwen2.5vl_merger':
      case 'qwen3vl_merger': {
        // each merge block's patches as one row, through the MLP
        const m2 = hp.nMerge * hp.nMerge;
        const rows = reshape(x, [hp.nEmbd * m2, x.ne[1] / m2]);
        return this.linear(ops.gelu(this.linear(rows, 'mm.0')), 'mm.2');
      }
    }
  }

  /** Qwen3-VL's deepstack merger of layer il's output h [E, n]: LayerNorm, GELU MLP over 2x2 blocks. */
  private deepstackMerge(h: Tensor, il: number): Tensor {
    const hp = this.mm.vision;
    const m2 = hp.nMerge * hp.nMerge;
    const D = `v.deepstack.${il}`;
    let cur = reshape(h, [hp.nEmbd * m2, h.ne[1] / m2]);
    cur = this.layerNorm(cur, this.mm.get(`${D}.norm.weight`), this.mm.opt(`${D}.norm.bias`), hp.eps);
    return this.linear(ops.gelu(this.linear(cur, `${D}.fc1`)), `${D}.fc2`);
  }

  /**
   * The learned position grid (n × n) resized to px × py as ggml_interpolate's bilinear
   * mode with antialiasing (the values the lfm2 graph adds), computed once per grid size.
   */
  private async resizedPositions(posW: Tensor, px: number, py: number): Promise<Float32Array> {
    const key = `${px}x${py}`;
    const hit = this.posCache.get(key);
    if (hit) return hit;
    this.posTable ??= await tensorGetF32(posW);
    const table = this.posTable;
    const E = posW.ne[0];
    const side = Math.floor(Math.sqrt(posW.ne[1]));
    let out: Float32Array;
    if (side === px && side === py) out = table.slice(0, E * px * py);
    else if (this.mm.projector === 'qwen3vl_merger') out = interpolateAlignCorners(table, E, side, side, px, py);
    else out = interpolateAntialias(table, E, side, side, px, py);
    this.posCache.set(key, out);
    return out;
  }

  free(): void {
    this.sched.free();
    for (const b of this.backends) b.free();
  }
}

/** ggml's im2col for a stride-p, p×p convolution: per patch (row-major), values (channel, ky, kx). */
function im2col(img: PlanarImage, p: number): Float32Array {
  const px = img.width / p;
  const py = img.height / p;
  const K = 3 * p * p;
  const out = new Float32Array(K * px * py);
  const plane = img.width * img.height;
  for (let oy = 0; oy < py; oy++) {
    for (let ox = 0; ox < px; ox++) {
      const col = (oy * px + ox) * K;
      for (let c = 0; c < 3; c++) {
        for (let ky = 0; ky < p; ky++) {
          const src = c * plane + (oy * p + ky) * img.width + ox * p;
          out.set(img.data.subarray(src, src + p), col + c * p * p + ky * p);
        }
      }
    }
  }
  return out;
}

/**
 * Average pool m × m over the patch grid (ggml_pool_2d AVG, sums in row order then / m²):
 * x [E, px·py] → [E, (px/m)·(py/m)].
 */
function avgPool(x: Tensor, px: number, py: number, m: number): Tensor {
  const E = x.ne[0];
  const e = x.nb[0];
  const ox = Math.floor(px / m);
  const oy = Math.floor(py / m);
  let sum: Tensor | null = null;
  for (let dy = 0; dy < m; dy++) {
    for (let dx = 0; dx < m; dx++) {
      const v = ops.cont(view(x, [E, ox, oy], [m * E * e, m * px * E * e], (dy * px + dx) * E * e));
      sum = sum ? ops.add(sum, v) : v;
    }
  }
  return reshape(ops.scale(sum!, 1 / (m * m)), [E, ox * oy]);
}

/** build_patch_merge_permute (pixel shuffle / unshuffle): x [E, w·h] → [E·s², (w/s)·(h/s)]. */
function patchMerge(x: Tensor, w: number, h: number, s: number): Tensor {
  const E = x.ne[0];
  if (w % s !== 0 || h % s !== 0) {
    throw new Error(`vision encoder: a ${w}x${h} patch grid is not a multiple of the merge factor ${s}`);
  }
  let cur = reshape(x, [E * s, w / s, h]);
  cur = permute(cur, [0, 2, 1, 3]);
  cur = ops.cont(cur, [E * s * s, h / s, w / s]);
  cur = permute(cur, [0, 2, 1, 3]);
  return ops.cont(cur, [E * s * s, (w / s) * (h / s)]);
}

/**
 * F.interpolate(bilinear, antialias, align_corners=False) of a [E, w0, h0] grid (E fastest)
 * to [E, w1, h1], as ggml's CPU upscale computes it (float arithmetic).
 */
function interpolateAntialias(src: Float32Array, E: number, w0: number, h0: number, w1: number, h1: number) {
  const f = Math.fround;
  const tri = (x: number) => Math.max(f(1 - Math.abs(x)), 0);
  const sf0 = f(w1 / w0);
  const sf1 = f(h1 / h0);
  const support0 = Math.max(1, f(1 / sf0));
  const support1 = Math.max(1, f(1 / sf1));
  const inv0 = f(1 / support0);
  const inv1 = f(1 / support1);
  const out = new Float32Array(E * w1 * h1);
  for (let i1 = 0; i1 < h1; i1++) {
    const y = f(f(i1 + 0.5) / sf1);
    const yMin = Math.max(Math.trunc(f(f(y - support1) + 0.5)), 0);
    const yMax = Math.min(Math.trunc(f(f(y + support1) + 0.5)), h0);
    for (let i0 = 0; i0 < w1; i0++) {
      const x = f(f(i0 + 0.5) / sf0);
      const xMin = Math.max(Math.trunc(f(f(x - support0) + 0.5)), 0);
      const xMax = Math.min(Math.trunc(f(f(x + support0) + 0.5)), w0);
      for (let c = 0; c < E; c++) {
        let val = 0;
        let total = 0;
        for (let sy = yMin; sy < yMax; sy++) {
          const wy = tri(f(f(f(sy - y) + 0.5) * inv1));
          for (let sx = xMin; sx < xMax; sx++) {
            const wx = tri(f(f(f(sx - x) + 0.5) * inv0));
            const w = f(wx * wy);
            if (w <= 0) continue;
            val = f(val + f(src[(sy * w0 + sx) * E + c] * w));
            total = f(total + w);
          }
        }
        out[(i1 * w1 + i0) * E + c] = total > 0 ? f(val / total) : val;
      }
    }
  }
  return out;
}

/** t rounded to F16 and back (F32). */
function roundF16(t: Tensor): Tensor {
  return ops.cpy(ops.cpy(t, newTensor(GGMLType.F16, t.ne)), newTensor(GGMLType.F32, t.ne));
}

/**
 * GELU quick, x·sigmoid(1.702·x), as ggml-cpu computes it for F32 (GGML_GELU_QUICK_FP16): a
 * lookup in a table of F16 results over F16 inputs, i.e. the input and the result rounded to
 * F16 (the F32 formula is 3e-4 rms off it).
 */
function geluQuick(x: Tensor): Tensor {
  const h = roundF16(x);
  return roundF16(ops.mul(h, ops.sigmoid(ops.scale(h, 1.702))));
}

/**
 * GELU with the exact erf (ggml_gelu_erf): 0.5·(x + |x|·erf(|x|/√2)), erf by Abramowitz and
 * Stegun 7.1.26 (|error| < 1.5e-7) from existing ops: e^-z² as 1/sigmoid(z²) - 1, |x| as
 * relu(x) + relu(-x).
 */
export function geluErf(x: Tensor): Tensor {
  const ax = ops.add(ops.relu(x), ops.relu(ops.scale(x, -1)));
  const z = ops.scale(ax, Math.SQRT1_2);
  const one = ops.scale(z, 0, 1);
  const t = ops.div(one, ops.scale(z, 0.3275911, 1));
  let poly = ops.scale(t, 1.061405429, -1.453152027);
  for (const c of [1.421413741, -0.284496736, 0.254829592]) poly = ops.scale(ops.mul(poly, t), 1, c);
  poly = ops.mul(poly, t);
  const e = ops.scale(ops.div(one, ops.sigmoid(ops.sqr(z))), 1, -1);
  const erf = ops.scale(ops.mul(poly, e), -1, 1);
  return ops.scale(ops.add(x, ops.mul(ax, erf)), 0.5);
}
