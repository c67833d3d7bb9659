// The checks every image decoder makes on what a file declares, before it decodes a pixel.
import { MediaError, type MediaFormat } from './errors.js';
import { IMAGE_DEFAULTS, type ImageDecodeOptions } from './types.js';

export type ImageLimits = Required<ImageDecodeOptions>;

export function imageLimits(opts: ImageDecodeOptions | undefined): ImageLimits {
  return { ...IMAGE_DEFAULTS, ...opts };
}

/** Throws unless `width` x `height` is a real size within the limits. */
export function checkDimensions(format: MediaFormat, width: number, height: number, limits: ImageLimits): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0)
    throw new MediaError(format, `invalid image size ${width}x${height}`);
  if (width > limits.maxSide || height > limits.maxSide)
    throw new MediaError(format, `image size ${width}x${height} is over the limit of ${limits.maxSide} per side`);
  if (width * height > limits.maxPixels)
    throw new MediaError(
      format,
      `image size ${width}x${height} (${width * height} pixels) is over the limit of ${limits.maxPixels} pixels`,
    );
}
