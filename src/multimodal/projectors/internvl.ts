// InternVL's projector (clip.projector_type 'internvl'; mtmd's clip_graph_internvl): tiles
// of image_size from the min..max tile grids (llava-uhd slicing, ./llava.ts tiles) then the
// overview, between "<img>" and "</img>". The graph: patches, the class embedding appended,
// learned positions, InternViT layers (LayerNorm, layer scales; InternViT-6B: RMS norms and
// q/k norms over the whole row), the class row dropped, pixel
// shuffle (scale_factor), then LayerNorm (mm.model.mlp.0, eps 1e-5) and mlp.1 → GELU → mlp.3.

import * as ops from '../../ggml/ops.js';
import { reshape, type Tensor, view } from '../../ggml/tensor.js';
import { type EncoderParts, patchEmbed } from './llava.js';

export function internvlGraph(enc: EncoderParts, patches: Tensor, px: number, py: number): Tensor {
  const { mm } = enc;
  const hp = mm.vision;
  const E = hp.nEmbd;
  const n = px * py;
  // InternViT-6B (InternVL 2.5/3 26B..78B), as mtmd recognises it: RMS norms (its q/k norms too)
  const vit6b = E === 3200 && hp.nLayer === 45;
  let x = ops.concat(patchEmbed(mm, patches), reshape(mm.get('v.class_embd'), [E, 1]), 1);
  const posW = mm.get('v.position_embd.weight');
  if (posW.ne[1] !== n + 1) throw new Error(`vision encoder: ${n} patches + class but ${posW.ne[1]} learned positions`);
  x = enc.vit(ops.add(x, posW), n + 1, undefined, 'v', { ...hp, rms: vit6b });
  x = ops.cont(view(x, [E, n], [x.nb[1]], 0));
  x = enc.patchMerge(x, px, py, hp.nMerge);
  x = ops.norm(x, 1e-5);
  x = ops.mul(x, mm.get('mm.model.mlp.0.weight'));
  const b = mm.opt('mm.model.mlp.0.bias');
  if (b) x = ops.add(x, b);
  return enc.linear(ops.gelu(enc.linear(x, 'mm.model.mlp.1')), 'mm.model.mlp.3');
}
