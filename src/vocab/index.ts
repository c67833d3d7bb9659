// The vocabulary layer: load a GGUF file's tokenizer, encode text, decode tokens.
export { BpeTokenizer } from './bpe.js';
export { cleanSpaces, StreamDecoder, type StreamDecoderOptions } from './decode.js';
export { readVocab } from './loader.js';
export { PreTokenizer } from './pretokenize.js';
export { PRE_TOKENIZER_NAMES } from './pretypes.js';
export { type Fragment, partitionSpecial } from './special.js';
export { SpmTokenizer } from './spm.js';
export {
  Attr,
  type DecodeOptions,
  type EncodeOptions,
  type FragmentTokenizer,
  type VocabDescription,
  VocabError,
  type VocabOptions,
  type VocabType,
  type VocabView,
} from './types.js';
export { Vocab } from './vocab.js';
export { WpmTokenizer } from './wpm.js';

import { openGGUF } from '../gguf/index.js';
import type { VocabOptions } from './types.js';
import { Vocab } from './vocab.js';

/** Open a GGUF file, read its vocabulary, close it. */
export function loadVocab(path: string, opts: VocabOptions = {}): Vocab {
  const file = openGGUF(path);
  try {
    return Vocab.fromGGUF(file, opts);
  } finally {
    file.close();
  }
}
