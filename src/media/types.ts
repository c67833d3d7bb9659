// What the media decoders give and the limits they check before decoding.

/** An image as mtmd takes it: 8-bit RGB, row-major, no padding (alpha dropped, gray replicated). */
export interface DecodedImage {
  width: number;
  height: number;
  /** width * height * 3 bytes. */
  data: Uint8Array;
}

export interface ImageDecodeOptions {
  /** Most pixels (width * height) a file may declare; checked before any pixel is decoded. Default 50 M. */
  maxPixels?: number;
  /** Longest side a file may declare. Default 16384 (stb_image allows up to 2^24). */
  maxSide?: number;
  /** Largest encoded file accepted. Default 64 MiB. */
  maxBytes?: number;
}

export const IMAGE_DEFAULTS = { maxPixels: 50_000_000, maxSide: 16384, maxBytes: 64 * 1024 * 1024 } as const;

/** Audio as mtmd takes it: mono float samples at 16 kHz. */
export interface DecodedAudio {
  sampleRate: number;
  samples: Float32Array;
}

export interface AudioDecodeOptions {
  /** Longest clip accepted, in seconds (of the source, before resampling). Default 600. */
  maxSeconds?: number;
  /** Largest encoded file accepted. Default 64 MiB. */
  maxBytes?: number;
  /** The rate to resample to. Default 16000 (every mtmd audio encoder's). */
  sampleRate?: number;
}

export const AUDIO_DEFAULTS = { maxSeconds: 600, maxBytes: 64 * 1024 * 1024, sampleRate: 16000 } as const;
