// Qwen3-VL's learned position grid, bilinear-resized (align_corners) to the patch grid as
// clip.cpp's resize_position_embeddings does through ggml_interpolate (ggml's CPU upscale:
// float arithmetic, the four neighbours weighted left to right).

/** [E, w0, h0] (E fastest) to [E, w1, h1]; the table itself when the sizes match. */
export function interpolateAlignCorners(
  src: Float32Array,
  E: number,
  w0: number,
  h0: number,
  w1: number,
  h1: number,
): Float32Array {
  if (w0 === w1 && h0 === h1) return src.slice(0, E * w1 * h1);
  const f = Math.fround;
  const sf0 = w1 > 1 && w0 > 1 ? f((w1 - 1) / (w0 - 1)) : f(w1 / w0);
  const sf1 = h1 > 1 && h0 > 1 ? f((h1 - 1) / (h0 - 1)) : f(h1 / h0);
  const clamp = (v: number, hi: number) => Math.max(0, Math.min(v, hi));
  const out = new Float32Array(E * w1 * h1);
  for (let i1 = 0; i1 < h1; i1++) {
    const y = f(i1 / sf1);
    const y0 = clamp(Math.floor(y), h0 - 1);
    const y1 = clamp(Math.floor(y) + 1, h0 - 1);
    const dy = clamp(f(y - y0), 1);
    for (let i0 = 0; i0 < w1; i0++) {
      const x = f(i0 / sf0);
      const x0 = clamp(Math.floor(x), w0 - 1);
      const x1 = clamp(Math.floor(x) + 1, w0 - 1);
      const dx = clamp(f(x - x0), 1);
      const o = (i1 * w1 + i0) * E;
      const pa = (y0 * w0 + x0) * E;
      const pb = (y0 * w0 + x1) * E;
      const pc = (y1 * w0 + x0) * E;
      const pd = (y1 * w0 + x1) * E;
      for (let c = 0; c < E; c++) {
        // a·(1-dx)·(1-dy) + b·dx·(1-dy) + c·(1-dx)·dy + d·dx·dy, each product left to right
        const ta = f(f(src[pa + c]! * f(1 - dx)) * f(1 - dy));
        const tb = f(f(src[pb + c]! * dx) * f(1 - dy));
        const tc = f(f(src[pc + c]! * f(1 - dx)) * dy);
        const td = f(f(src[pd + c]! * dx) * dy);
        out[o + c] = f(f(f(ta + tb) + tc) + td);
      }
    }
  }
  return out;
}
