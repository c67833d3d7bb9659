// decodeImage: bytes to the RGB8 pixels mtmd feeds its image encoders (stb_image, 3 channels).
// The format is found from the leading bytes, as stb_image tries its decoders; every decoder checks
// the declared size against the limits before decoding a pixel. Formats mtmd does not read but a
// browser does (AVIF, ...) go to the browser's decoder where there is one (native.ts).
import { decodeBmp } from './bmp.js';
import { MediaError } from './errors.js';
import { decodeGif } from './gif.js';
import { decodeJpeg } from './jpeg.js';
import { imageLimits } from './limits.js';
import { ascii, decodeNativeImage, IMAGES_READ, isSvg, nativeImageFormat, unreadMessage } from './native.js';
import { decodePng, isPng } from './png.js';
import type { DecodedImage, ImageDecodeOptions } from './types.js';
import { decodeWebp } from './webp.js';

export type ImageFormat = 'PNG' | 'JPEG' | 'GIF' | 'BMP' | 'WebP';

/** The image format of `b` from its magic bytes, or undefined. */
export function imageFormat(b: Uint8Array): ImageFormat | undefined {
  if (isPng(b)) return 'PNG';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'JPEG';
  if (b.length >= 6 && ascii(b, 0, 4) === 'GIF8' && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return 'GIF';
  if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) return 'BMP';
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return 'WebP';
  return undefined;
}

export async function decodeImage(bytes: Uint8Array, opts?: ImageDecodeOptions): Promise<DecodedImage> {
  const limits = imageLimits(opts);
  const format = imageFormat(bytes);
  if (!format) {
    const native = nativeImageFormat(bytes);
    if (native) return decodeNativeImage(native, bytes, limits);
    if (isSvg(bytes)) throw new MediaError('SVG', `a vector image is not read: rasterize it (${IMAGES_READ}) first`);
    throw new MediaError('media', unreadMessage('image', bytes));
  }
  if (bytes.length > limits.maxBytes)
    throw new MediaError(format, `file of ${bytes.length} bytes is over the limit of ${limits.maxBytes}`);
  switch (format) {
    case 'PNG':
      return decodePng(bytes, limits);
    case 'JPEG':
      return decodeJpeg(bytes, limits);
    case 'GIF':
      return decodeGif(bytes, limits);
    case 'BMP':
      return decodeBmp(bytes, limits);
    case 'WebP':
      // beyond mtmd (stb_image has no WebP decoder): libwebp's pixels, alpha dropped like stb's
      return decodeWebp(bytes, limits);
  }
}
