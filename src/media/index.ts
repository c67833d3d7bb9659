// Media decoding for multimodal prompts: images and audio to the samples mtmd's encoders take.
export { MediaError, type MediaFormat } from './errors.js';
export { decodeImage, type ImageFormat, imageFormat } from './image.js';
export type { AudioDecodeOptions, DecodedAudio, DecodedImage, ImageDecodeOptions } from './types.js';
