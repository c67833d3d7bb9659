// Text to token ids: partition on special tokens, then hand each raw fragment to the
// vocabulary's algorithm (SentencePiece, BPE, WordPiece or Unigram), adding BOS/EOS or
// CLS/SEP the way llama.cpp's llama_vocab::tokenize does for each model type.
import { logger } from '../log.js';
import { partitionSpecial } from './special.js';
import type { VocabView } from './types.js';
import { bytesArrayToBinary, textToBinary } from './unicode.js';

const log = logger('vocab');

const SPACE_ESCAPE = '\u00e2\u0096\u0081'; // "▁" (U+2581) as a byte string

export function encodeText(
  vocab: VocabView,
  input: string | Uint8Array,
  addSpecial: boolean,
  parseSpecial: boolean,
): number[] {
  const text = typeof input === 'string' ? textToBinary(input) : bytesArrayToBinary(input);
  const frags = partitionSpecial(vocab, text, parseSpecial);
  const tok = vocab.fragments;
  const out: number[] = [];

  if (vocab.type === 'spm') {
    let prevSpecial = true; // the first fragment gets the space prefix
    if (addSpecial && vocab.addBos) out.push(vocab.bos);
    for (const f of frags) {
      if (typeof f === 'number') {
        out.push(f);
        prevSpecial = true;
        continue;
      }
      let raw = text.slice(f.start, f.end);
      if (vocab.addSpacePrefix && prevSpecial) raw = ` ${raw}`;
      tok.tokenize(raw.replaceAll(' ', SPACE_ESCAPE), out);
      prevSpecial = false;
    }
    if (addSpecial && vocab.addBos && out.length >= 2 && out[1] === vocab.bos) warnDoubleBos();
    if (addSpecial && vocab.addEos) out.push(vocab.eos);
    return out;
  }

  if (vocab.type === 'bpe') {
    if (addSpecial && vocab.addBos) out.push(vocab.bos);
    for (const f of frags) {
      if (typeof f === 'number') out.push(f);
      else if (vocab.escapeWhitespaces) tok.tokenize(text.slice(f.start, f.end).replaceAll(' ', SPACE_ESCAPE), out);
      else tok.tokenize(text.slice(f.start, f.end), out);
    }
    if (addSpecial && vocab.addEos) out.push(vocab.eos);
    if (addSpecial && vocab.addBos && out.length >= 2 && out[1] === vocab.bos) warnDoubleBos();
    if (addSpecial && vocab.addEos && out.length >= 2 && out[out.length - 2] === vocab.eos) {
      log.warn('added an EOS token as the model asks, but the prompt already ends with one: it now ends with two');
    }
    return out;
  }

  if (vocab.type === 'ugm') {
    if (addSpecial && vocab.addBos) out.push(vocab.bos);
    for (const f of frags) {
      if (typeof f === 'number') out.push(f);
      else tok.tokenize(text.slice(f.start, f.end), out);
    }
    if (addSpecial && vocab.addBos && out.length >= 2 && out[1] === vocab.bos) warnDoubleBos();
    if (addSpecial && vocab.addEos) out.push(vocab.eos);
    return out;
  }

  // WordPiece: [CLS] ... [SEP]
  if (addSpecial) out.push(vocab.cls);
  for (const f of frags) {
    if (typeof f === 'number') out.push(f);
    else tok.tokenize(text.slice(f.start, f.end), out);
  }
  if (addSpecial) out.push(vocab.sep);
  return out;
}

function warnDoubleBos(): void {
  log.warn('added a BOS token as the model asks, but the prompt already starts with one: it now starts with two');
}
