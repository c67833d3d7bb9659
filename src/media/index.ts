// Media decoding for multimodal prompts: images and audio to the samples mtmd's encoders take.

export { type AudioFormat, audioFormat, decodeAudio, detectMediaKind } from './audio.js';
export { MediaError, type MediaFormat } from './errors.js';
export { decodeImage, type ImageFormat, imageFormat } from './image.js';
export { gemma4aMel, logMelSpectrogram, type MelChunks, type MelFrames, type MelOptions, melFilters } from './mel.js';
export {
  IMAGES_READ,
  type NativeAudioDecoder,
  type NativeAudioFormat,
  type NativeImageFormat,
  nativeAudioFormat,
  nativeImageFormat,
  relayNativeAudio,
  unreadMessage,
} from './native.js';
export type { AudioDecodeOptions, DecodedAudio, DecodedImage, ImageDecodeOptions } from './types.js';
