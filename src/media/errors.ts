// The one error type for media that cannot be decoded: it names the format and what was wrong,
// so a server answers 400 with it and a CLI prints it as is.

export type MediaFormat =
  | 'PNG'
  | 'JPEG'
  | 'GIF'
  | 'BMP'
  | 'WebP'
  | 'WAV'
  | 'MP3'
  | 'FLAC'
  // decoded by a browser's own decoders only (native.ts); SVG is refused everywhere
  | 'AVIF'
  | 'HEIC'
  | 'JXL'
  | 'ICO'
  | 'Ogg'
  | 'WebM'
  | 'MP4'
  | 'AAC'
  | 'SVG'
  | 'media';

export class MediaError extends Error {
  readonly format: MediaFormat;
  constructor(format: MediaFormat, message: string) {
    super(`${format}: ${message}`);
    this.name = 'MediaError';
    this.format = format;
  }
}
