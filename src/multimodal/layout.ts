// What one image becomes in a prompt, per projector (mtmd's preprocessors and its
// tokenizer's add_media): the images the encoder reads (one, or tiles and an overview)
// and the delimiter text/tokens around them, in prompt order.
//   gemma3:   <start_of_image> [image] <end_of_image>          (fixed size, bilinear, padded)
//   idefics3: per tile <fake_token_around_image><row_R_col_C> [tile], "\n" after each row
//             but the last, then "\n\n"<fake_token_around_image><global-img> [overview]
//             <fake_token_around_image>  (longest edge aligned to tiles of image_size, bicubic)
//   qwen2vl:  <|vision_start|> [image] <|vision_end|>  (dynamic resolution, bilinear; the image
//             takes max(grid_w, grid_h) positions, its rows at (t, t + y, t + x))
//   lfm2:     <|image_start|> (<|img_row_R_col_C|> [tile] ...)? <|img_thumbnail|> [image]
//             <|image_end|>  (dynamic resolution; 512-px tiles past the pixel limit)
//   mlp, ldpv2, pixtral, internvl, gemma4v: see ./projectors (llava.ts, pixtral.ts, internvl.ts,
//             gemma4v.ts)

import { crop, fitToBlocks, normalize, type PlanarImage, type RgbImage, resize, smartSize } from './image.js';
import type { Mmproj } from './mmproj.js';
import { llavaLayout } from './projectors/llava.js';

/** One piece of an image's prompt layout. */
export type LayoutPart =
  | { kind: 'text'; text: string }
  | { kind: 'token'; text: string }
  | { kind: 'image'; image: PlanarImage };

export function imageLayout(mm: Mmproj, img: RgbImage): LayoutPart[] {
  if (!(img.width > 0 && img.height > 0)) throw new Error(`image of size ${img.width}x${img.height}`);
  const hp = mm.vision;
  const norm = (i: RgbImage): LayoutPart => ({ kind: 'image', image: normalize(i, hp.mean, hp.std) });
  switch (mm.projector) {
    case 'gemma3': {
      const sz = hp.imageSize;
      return [
        { kind: 'text', text: '<start_of_image>' },
        norm(resize(img, sz, sz, 'bilinear', 'ceil')),
        { kind: 'text', text: '<end_of_image>' },
      ];
    }
    case 'idefics3':
      return idefics3(mm, img, norm);
    case 'lfm2':
      return lfm2(mm, img, norm);
    case 'qwen2a':
    case 'ultravox':
    case 'voxtral':
    case 'gemma4a':
      throw new Error(`the projector ${mm.path} takes audio, not images`);
    case 'mlp':
    case 'ldp':
    case 'ldpv2':
      return llavaLayout(mm, img).map(norm);
    case 'internvl':
      return [{ kind: 'text', text: '<img>' }, ...llavaLayout(mm, img).map(norm), { kind: 'text', text: '</img>' }];
    case 'pixtral':
      return [norm(fitToBlocks(img, hp)), { kind: 'text', text: '[IMG_END]' }];
    case 'gemma4v':
      return [{ kind: 'text', text: '<|image>' }, norm(fitToBlocks(img, hp)), { kind: 'text', text: '<image|>' }];
    case 'qwen2vl_merger':
    case 'qwen2.5vl_merger':
    case 'qwen3vl_merger': {
      return [
        { kind: 'text', text: '<|vision_start|>' },
        norm(fitToBlocks(img, hp)),
        { kind: 'text', text: '<|vision_end|>' },
      ];
    }
  }
}

function idefics3(mm: Mmproj, img: RgbImage, norm: (i: RgbImage) => LayoutPart): LayoutPart[] {
  const hp = mm.vision;
  const tile = hp.imageSize;
  // the refined image: the longest edge (and any pixel limits) aligned up to whole tiles;
  // it and the overview are resized from the original with mtmd's slice defaults (bicubic;
  // the refined image fitted and padded, the overview stretched)
  const size = smartSize(img.width, img.height, {
    align: tile,
    minPixels: Math.max(0, hp.minPixels),
    maxPixels: Math.max(0, hp.maxPixels),
    longestEdge: hp.longestEdge,
  });
  const gx = Math.ceil(size.width / tile);
  const gy = Math.ceil(size.height / tile);
  const refined = resize(img, size.width, size.height, 'bicubic', 'ceil');
  const overview = resize(img, tile, tile, 'bicubic', 'none');
  const parts: LayoutPart[] = [];
  for (let y = 0; y < gy; y++) {
    for (let x = 0; x < gx; x++) {
      parts.push({ kind: 'text', text: `<fake_token_around_image><row_${y + 1}_col_${x + 1}>` });
      const w = Math.min(tile, refined.width - x * tile);
      const h = Math.min(tile, refined.height - y * tile);
      parts.push(norm(crop(refined, x * tile, y * tile, w, h)));
    }
    if (y !== gy - 1) parts.push({ kind: 'token', text: '\n' });
  }
  parts.push(
    { kind: 'token', text: '\n\n' },
    { kind: 'token', text: '<fake_token_around_image>' },
    { kind: 'token', text: '<global-img>' },
    norm(overview),
    { kind: 'token', text: '<fake_token_around_image>' },
  );
  return parts;
}

const LFM2_TILE = 512;
const LFM2_MIN_TILES = 2;
const LFM2_MAX_TILES = 10;
// Tiles when the aligned image exceeds the token limit by this factor. Hugging Face's
// processor and later llama.cpp say 2; llama.cpp build 10257 (the oracle) tiles a 1200x400
// image (1216x416 aligned, 1.93x the limit) and not a 640x480 one (1.17x): 1.5 reproduces it.
const LFM2_MAX_PIXELS_TOLERANCE = 1.5;

function lfm2(mm: Mmproj, img: RgbImage, norm: (i: RgbImage) => LayoutPart): LayoutPart[] {
  const hp = mm.vision;
  const align = hp.patchSize * hp.nMerge;
  const ov = smartSize(img.width, img.height, { align, minPixels: hp.minPixels, maxPixels: hp.maxPixels });
  const overview = resize(img, ov.width, ov.height, 'bilinear', 'none');
  const parts: LayoutPart[] = [{ kind: 'text', text: '<|image_start|>' }];
  // should_tile: the image at its own size (aligned, ties to even) against the pixel limit
  const hBar = Math.max(hp.patchSize, roundHalfEven(img.height / align) * align);
  const wBar = Math.max(hp.patchSize, roundHalfEven(img.width / align) * align);
  if (hBar * wBar > hp.maxPixels * LFM2_MAX_PIXELS_TOLERANCE) {
    const grid = lfm2Grid(img.width, img.height);
    const refined = resize(img, LFM2_TILE * grid.w, LFM2_TILE * grid.h, 'bilinear', 'ceil');
    for (let r = 0; r < grid.h; r++) {
      for (let c = 0; c < grid.w; c++) {
        parts.push({ kind: 'text', text: `<|img_row_${r + 1}_col_${c + 1}|>` });
        parts.push(norm(crop(refined, c * LFM2_TILE, r * LFM2_TILE, LFM2_TILE, LFM2_TILE)));
      }
    }
  }
  // build 10257 marks the overview as a thumbnail also when there are no tiles
  parts.push({ kind: 'token', text: '<|img_thumbnail|>' }, norm(overview), { kind: 'text', text: '<|image_end|>' });
  return parts;
}

function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** lfm2's tile grid: the (w, h) of 2..10 tiles whose aspect ratio is closest to the image's. */
function lfm2Grid(width: number, height: number): { w: number; h: number } {
  const f = Math.fround;
  const ratios: { w: number; h: number }[] = [];
  for (let n = LFM2_MIN_TILES; n <= LFM2_MAX_TILES; n++) {
    for (let w = 1; w <= n; w++) {
      for (let h = 1; h <= n; h++) {
        if (w * h >= LFM2_MIN_TILES && w * h <= LFM2_MAX_TILES && !ratios.some((r) => r.w === w && r.h === h)) {
          ratios.push({ w, h });
        }
      }
    }
  }
  // std::sort by area (ties: the order above is kept only where the sort keeps it; areas
  // decide which ratio is tried first, and only exact aspect ties depend on it)
  ratios.sort((a, b) => a.w * a.h - b.w * b.h);
  const aspect = f(width / height);
  const area = f(width * height);
  let best = { w: 1, h: 1 };
  let bestDiff = Number.MAX_VALUE;
  for (const r of ratios) {
    const diff = Math.abs(f(aspect - f(r.w / r.h)));
    if (diff < bestDiff) {
      bestDiff = diff;
      best = r;
    } else if (diff === bestDiff && area > f(0.5 * LFM2_TILE * LFM2_TILE * r.w * r.h)) {
      best = r;
    }
  }
  return best;
}
