// JPEG: the frame size is read from the SOF marker and checked before anything is allocated, and a
// file with no end-of-image marker after its scans is refused as truncated (stb_image, and so mtmd,
// would decode the missing part as gray); then jpeg-stb.ts decodes it as stb_image does.
import { MediaError } from './errors.js';
import { decodeJpegStb } from './jpeg-stb.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const fail = (msg: string): never => {
  throw new MediaError('JPEG', msg);
};

/** SOF0..SOF15 less DHT (C4), JPG (C8) and DAC (CC). */
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

/** The frame size from the SOF marker, and whether an end-of-image marker follows the first scan. */
function scan(b: Uint8Array): { width: number; height: number; arithmetic: boolean } {
  let pos = 2;
  let size: { width: number; height: number; arithmetic: boolean } | undefined;
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) fail(`expected a marker at byte ${pos}, found 0x${b[pos].toString(16)}`);
    const m = b[pos + 1];
    if (m === 0xff) {
      pos++; // fill byte
      continue;
    }
    if (m === 0xd8 || (m >= 0xd0 && m <= 0xd7) || m === 0x01) {
      pos += 2;
      continue;
    }
    if (m === 0xd9) fail('end of image before any scan');
    const len = (b[pos + 2] << 8) | b[pos + 3];
    if (len < 2 || pos + 2 + len > b.length) fail(`segment 0xff${m.toString(16)} at byte ${pos} is truncated`);
    if (isSof(m)) {
      if (len < 8) fail('SOF segment is too short');
      size = {
        height: (b[pos + 5] << 8) | b[pos + 6],
        width: (b[pos + 7] << 8) | b[pos + 8],
        arithmetic: m >= 0xc9,
      };
    }
    if (m === 0xda) {
      if (!size) fail('scan before the frame header (no SOF)');
      // entropy-coded data: an end-of-image marker must come after it
      for (let i = pos + 2 + len; i + 1 < b.length; i++) if (b[i] === 0xff && b[i + 1] === 0xd9) return size as never;
      fail('file is truncated: no end-of-image marker after the scan data');
    }
    pos += 2 + len;
  }
  return fail('file is truncated before the first scan');
}

export function decodeJpeg(b: Uint8Array, limits: ImageLimits): DecodedImage {
  const size = scan(b);
  if (size.height === 0) fail('a height of 0 (set later by a DNL marker) is not supported');
  checkDimensions('JPEG', size.width, size.height, limits);
  if (size.arithmetic) fail('arithmetic coding is not supported');
  return decodeJpegStb(b, limits);
}
