// Image preprocessing as mtmd does it, on 8-bit RGB pixels (what src/media's decoders
// give): bilinear and bicubic as llama.cpp build 10257's clip does them (corner-aligned
// lerps; ViT.cpp's cubic), Lanczos as Pillow's separable resampling (fixed-point weights
// of 22 fractional bits, rounded as Pillow), resizing with aspect-preserving
// padding, cropping, size rules ("smart resize"), and the conversion to normalised F32
// planes the encoder reads ((x / 255 - mean) / std, computed in float as clip.cpp does).

/** 8-bit RGB pixels, row-major, 3 bytes a pixel. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

export type ResizeAlgo = 'bilinear' | 'bicubic' | 'lanczos';
/** none: stretch; ceil / nearest: keep the aspect ratio, centre, pad (mtmd's PAD_CEIL / PAD_NEAREST). */
export type PadStyle = 'none' | 'ceil' | 'nearest';

const PRECISION_BITS = 22;

function filter(algo: ResizeAlgo, x: number): number {
  if (algo === 'lanczos') {
    if (x >= -3 && x < 3) return sinc(x) * sinc(x / 3);
    return 0;
  }
  const ax = Math.abs(x);
  if (algo === 'bilinear') return ax < 1 ? 1 - ax : 0;
  const a = -0.5; // Pillow's bicubic
  if (ax < 1) return ((a + 2) * ax - (a + 3)) * ax * ax + 1;
  if (ax < 2) return (((ax - 5) * ax + 8) * ax - 4) * a;
  return 0;
}

function sinc(v: number): number {
  if (v === 0) return 1;
  const p = v * Math.PI;
  return Math.sin(p) / p;
}

const SUPPORT: Record<ResizeAlgo, number> = { bilinear: 1, bicubic: 2, lanczos: 3 };

/**
 * mtmd's bilinear resize (llama.cpp build 10257, the oracle): corners aligned (source step
 * (w-1)/(W-1)), float lerps between the clamped neighbours, truncated to 8 bits. Checked
 * by feeding images resized here to the oracle: the same probabilities to the last bit.
 */
function bilinearAligned(src: RgbImage, tw: number, th: number): RgbImage {
  const f = Math.fround;
  const dst = new Uint8Array(tw * th * 3);
  const xr = tw > 1 ? f((src.width - 1) / (tw - 1)) : 0;
  const yr = th > 1 ? f((src.height - 1) / (th - 1)) : 0;
  const lerp = (s: number, e: number, t: number) => f(s + f(f(e - s) * t));
  const d = src.data;
  const nx = src.width;
  for (let y = 0; y < th; y++) {
    const py = f(yr * y);
    const y0 = Math.min(Math.trunc(py), src.height - 1);
    const y1 = Math.min(y0 + 1, src.height - 1);
    const yl = f(py - y0);
    for (let x = 0; x < tw; x++) {
      const px = f(xr * x);
      const x0 = Math.min(Math.trunc(px), nx - 1);
      const x1 = Math.min(x0 + 1, nx - 1);
      const xl = f(px - x0);
      for (let c = 0; c < 3; c++) {
        const top = lerp(d[3 * (y0 * nx + x0) + c], d[3 * (y0 * nx + x1) + c], xl);
        const bottom = lerp(d[3 * (y1 * nx + x0) + c], d[3 * (y1 * nx + x1) + c], xl);
        dst[3 * (y * tw + x) + c] = Math.trunc(lerp(top, bottom, yl));
      }
    }
  }
  return { width: tw, height: th, data: dst };
}

/** clip.cpp's bicubic (from ViT.cpp): cubic through 4 neighbours on the floor grid (step w/W), rounded. */
function bicubicClip(img: RgbImage, tw: number, th: number): RgbImage {
  const f = Math.fround;
  const { width: nx, height: ny, data } = img;
  const dst = new Uint8Array(tw * th * 3);
  const tx = f(nx / tw);
  const ty = f(ny / th);
  const cl = (v: number, lo: number, hi: number) => Math.max(lo, Math.min(v, hi));
  const C = new Float32Array(4);
  const px = (yy: number, xx: number, k: number) => data[(cl(yy, 0, ny - 1) * nx + cl(xx, 0, nx - 1)) * 3 + k];
  const cubic = (p0: number, p1: number, p2: number, p3: number, d: number) => {
    const d0 = f(p0 - p1);
    const d2 = f(p2 - p1);
    const d3 = f(p3 - p1);
    const a0 = p1;
    const a1 = f((-1.0 / 3) * d0 + d2 - (1.0 / 6) * d3);
    const a2 = f((1.0 / 2) * d0 + (1.0 / 2) * d2);
    const a3 = f((-1.0 / 6) * d0 - (1.0 / 2) * d2 + (1.0 / 6) * d3);
    return f(f(f(a0 + f(a1 * d)) + f(f(a2 * d) * d)) + f(f(f(a3 * d) * d) * d));
  };
  for (let i = 0; i < th; i++) {
    for (let j = 0; j < tw; j++) {
      const x = Math.trunc(f(tx * j));
      const y = Math.trunc(f(ty * i));
      const dx = f(f(tx * j) - x);
      const dy = f(f(ty * i) - y);
      for (let k = 0; k < 3; k++) {
        for (let jj = 0; jj <= 3; jj++) {
          const yy = y - 1 + jj;
          C[jj] = cubic(px(yy, x - 1, k), px(yy, x, k), px(yy, x + 1, k), px(yy, x + 2, k), dx);
        }
        const cc = cubic(C[0], C[1], C[2], C[3], dy);
        dst[(i * tw + j) * 3 + k] = Math.min(Math.max(Math.round(cc), 0), 255);
      }
    }
  }
  return { width: tw, height: th, data: dst };
}

/** Per output pixel: first input index, count, and fixed-point weights (Pillow's precompute_coeffs). */
function coefficients(algo: ResizeAlgo, inSize: number, outSize: number) {
  const scale = inSize / outSize;
  const filterscale = Math.max(1, scale);
  const support = SUPPORT[algo] * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const weights = new Int32Array(outSize * ksize);
  const pre = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterscale;
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    let ww = 0;
    pre.fill(0);
    for (let x = 0; x < xmax; x++) {
      const w = filter(algo, (x + xmin - center + 0.5) * ss);
      pre[x] = w;
      ww += w;
    }
    for (let x = 0; x < ksize; x++) {
      const w = x < xmax && ww !== 0 ? pre[x] / ww : x < xmax ? pre[x] : 0;
      weights[xx * ksize + x] = Math.trunc(w * 2 ** PRECISION_BITS + (w < 0 ? -0.5 : 0.5));
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  return { ksize, bounds, weights };
}

function clip8(v: number): number {
  const s = Math.floor(v / 2 ** PRECISION_BITS);
  return Math.max(0, Math.min(s, 255));
}

/** One separable pass along x (horizontal) or y. */
function pass(src: RgbImage, out: number, horizontal: boolean, algo: ResizeAlgo): RgbImage {
  const { width: w, height: h, data } = src;
  const c = coefficients(algo, horizontal ? w : h, out);
  const ow = horizontal ? out : w;
  const oh = horizontal ? h : out;
  const dst = new Uint8Array(ow * oh * 3);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      const o = horizontal ? x : y;
      const min = c.bounds[o * 2];
      const cnt = c.bounds[o * 2 + 1];
      for (let ch = 0; ch < 3; ch++) {
        let s = half;
        for (let i = 0; i < cnt; i++) {
          const at = horizontal ? (y * w + min + i) * 3 : ((min + i) * w + x) * 3;
          s += data[at + ch] * c.weights[o * c.ksize + i];
        }
        dst[(y * ow + x) * 3 + ch] = clip8(s);
      }
    }
  }
  return { width: ow, height: oh, data: dst };
}

/** Pillow-compatible resize (horizontal pass, then vertical). */
export function resample(img: RgbImage, width: number, height: number, algo: ResizeAlgo): RgbImage {
  if (!(width > 0 && height > 0)) throw new Error(`image resize to ${width}x${height}`);
  if (algo === 'bilinear') return bilinearAligned(img, width, height);
  if (algo === 'bicubic') return bicubicClip(img, width, height);
  let cur = img;
  if (width !== cur.width) cur = pass(cur, width, true, algo);
  if (height !== cur.height) cur = pass(cur, height, false, algo);
  return cur === img ? { width, height, data: img.data.slice() } : cur;
}

/** mtmd's img_tool::resize: stretch (pad 'none') or fit inside the target and pad with `color`. */
export function resize(
  img: RgbImage,
  width: number,
  height: number,
  algo: ResizeAlgo,
  pad: PadStyle = 'ceil',
  color: readonly [number, number, number] = [0, 0, 0],
): RgbImage {
  if (img.width === width && img.height === height) return { width, height, data: img.data.slice() };
  if (pad === 'none') return resample(img, width, height, algo);
  const scale = Math.min(Math.fround(width / img.width), Math.fround(height / img.height));
  const round = pad === 'nearest' ? Math.round : Math.ceil;
  const nw = Math.min(round(Math.fround(img.width * scale)), width);
  const nh = Math.min(round(Math.fround(img.height * scale)), height);
  const inner = resample(img, nw, nh, algo);
  const dst = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) dst.set(color, i * 3);
  const ox = pad === 'nearest' ? Math.round((width - nw) / 2) : Math.floor((width - nw) / 2);
  const oy = pad === 'nearest' ? Math.round((height - nh) / 2) : Math.floor((height - nh) / 2);
  for (let y = 0; y < nh; y++) {
    dst.set(inner.data.subarray(y * nw * 3, (y + 1) * nw * 3), ((y + oy) * width + ox) * 3);
  }
  return { width, height, data: dst };
}

export function crop(img: RgbImage, x: number, y: number, w: number, h: number): RgbImage {
  if (x < 0 || y < 0 || x + w > img.width || y + h > img.height) {
    throw new Error(`crop ${w}x${h}+${x}+${y} outside a ${img.width}x${img.height} image`);
  }
  const dst = new Uint8Array(w * h * 3);
  for (let r = 0; r < h; r++) {
    dst.set(img.data.subarray(((y + r) * img.width + x) * 3, ((y + r) * img.width + x + w) * 3), r * w * 3);
  }
  return { width: w, height: h, data: dst };
}

/**
 * Dynamic resolution (qwen2vl/2.5vl/3vl mergers, pixtral, gemma4v): the image resized to whole
 * patch × merge blocks within the pixel limits, bilinear as build 10257 (checked through it).
 */
export function fitToBlocks(
  img: RgbImage,
  hp: { patchSize: number; nMerge: number; minPixels: number; maxPixels: number },
): RgbImage {
  const size = smartSize(img.width, img.height, {
    align: hp.patchSize * hp.nMerge,
    minPixels: hp.minPixels,
    maxPixels: hp.maxPixels,
  });
  return resize(img, size.width, size.height, 'bilinear', 'ceil');
}

/** mtmd's calc_size_preserved_ratio ("smart resize"): the size aligned to `align`, within the pixel limits. */
export function smartSize(
  width: number,
  height: number,
  o: { align: number; minPixels?: number; maxPixels?: number; longestEdge?: number },
): { width: number; height: number } {
  const f = o.align;
  const roundBy = (x: number) => Math.round(Math.fround(Math.fround(x) / f)) * f;
  const ceilBy = (x: number) => Math.ceil(Math.fround(Math.fround(x) / f)) * f;
  const floorBy = (x: number) => Math.floor(Math.fround(Math.fround(x) / f)) * f;
  let w: number;
  let h: number;
  if (o.longestEdge && o.longestEdge > 0) {
    const s = Math.min(Math.fround(o.longestEdge / width), Math.fround(o.longestEdge / height));
    w = ceilBy(Math.fround(width * s));
    h = ceilBy(Math.fround(height * s));
  } else {
    w = Math.max(f, roundBy(width));
    h = Math.max(f, roundBy(height));
  }
  const max = o.maxPixels ?? 0;
  const min = o.minPixels ?? 0;
  if (max > 0 && h * w > max) {
    const beta = Math.fround(Math.sqrt(Math.fround(Math.fround(height) * width) / max));
    h = Math.max(f, floorBy(Math.fround(height / beta)));
    w = Math.max(f, floorBy(Math.fround(width / beta)));
  } else if (min > 0 && h * w < min) {
    const beta = Math.fround(Math.sqrt(Math.fround(min) / Math.fround(Math.fround(height) * width)));
    h = ceilBy(Math.fround(height * beta));
    w = ceilBy(Math.fround(width * beta));
  }
  return { width: w, height: h };
}

/** A preprocessed image: normalised F32 planes [3][height][width] (ggml's [nx, ny, 3] input). */
export interface PlanarImage {
  width: number;
  height: number;
  data: Float32Array;
}

/** x / 255 then (x - mean) / std per channel, in float (clip_image_f32 from_u8 + normalize), as planes. */
export function normalize(
  img: RgbImage,
  mean: readonly [number, number, number],
  std: readonly [number, number, number],
): PlanarImage {
  const n = img.width * img.height;
  const out = new Float32Array(n * 3);
  for (let c = 0; c < 3; c++) {
    const m = Math.fround(mean[c]);
    const s = Math.fround(std[c]);
    for (let i = 0; i < n; i++) {
      const x = Math.fround(img.data[i * 3 + c] / 255);
      out[c * n + i] = Math.fround(Math.fround(x - m) / s);
    }
  }
  return { width: img.width, height: img.height, data: out };
}
