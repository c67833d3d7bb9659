// DRY, "don't repeat yourself" (llama.cpp's `dry`, after koboldcpp): when the text ends
// with a sequence that already occurred earlier, the token that followed it then is
// penalized by multiplier · base^(length - allowedLength), for repeats of at least
// allowedLength tokens. Sequence breakers (newline, ':', '"', '*' by default) cut the
// look-back: a repeat never reaches across one, and a single-token breaker is never
// penalized itself.
//
// Breakers are text; like llama.cpp they become token sequences over the vocabulary:
// every token whose text contains the breaker is a breaker on its own, and every token
// whose text ends with a proper prefix of it heads a sequence whose tail is the rest of
// the breaker, tokenized (at most 20 tokens).

import { logger } from '../log.js';
import { bytesArrayToBinary, textToBytes } from '../vocab/unicode.js';
import type { Candidates } from './candidates.js';
import { TokenHistory } from './history.js';
import type { SamplingStep } from './step.js';

const log = logger('sampling');

/** head token → tails (the rest of each breaker sequence; empty = the head alone). */
export type DryBreakers = ReadonlyMap<number, readonly Int32Array[]>;

/** What breaker processing needs from a vocabulary (Vocab provides it). */
export interface DryVocab {
  readonly nTokens: number;
  encode(text: string | Uint8Array, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): number[];
  /** Text of a token list as bytes (llama.cpp's detokenize, special tokens rendered). */
  decodeToBytes?(ids: readonly number[], opts?: { renderSpecial?: boolean }): Uint8Array;
  /** Fallback when decodeToBytes is missing: the token's piece as a byte string. */
  pieceBytes(id: number): string;
}

export const DRY_MAX_BREAKER_BYTES = 40;
export const DRY_MAX_TAIL_TOKENS = 20;
const FLOAT_MAX_LOG = 88.7228391;

const tokenTextCache = new WeakMap<DryVocab, string[]>();

/** Every token's text as a byte string, as detokenize({id}, special=true) gives it; cached per vocabulary. */
function tokenTexts(vocab: DryVocab): string[] {
  let texts = tokenTextCache.get(vocab);
  if (!texts) {
    texts = new Array<string>(vocab.nTokens);
    for (let id = 0; id < vocab.nTokens; id++) {
      texts[id] = vocab.decodeToBytes
        ? bytesArrayToBinary(vocab.decodeToBytes([id], { renderSpecial: true }))
        : vocab.pieceBytes(id);
    }
    tokenTextCache.set(vocab, texts);
  }
  return texts;
}

/** Breaker strings → token sequences over a vocabulary (llama.cpp's get_overlapping_token_sequences). */
export function dryBreakersFromStrings(vocab: DryVocab, breakers: readonly string[]): Map<number, Int32Array[]> {
  const out = new Map<number, Int32Array[]>();
  const texts = breakers.length > 0 ? tokenTexts(vocab) : [];
  const add = (id: number, tail: Int32Array) => {
    const list = out.get(id);
    if (!list) out.set(id, [tail]);
    else if (!list.some((t) => t.length === tail.length && t.every((v, i) => v === tail[i]))) list.push(tail);
  };
  for (let b = 0; b < breakers.length; b++) {
    let bytes = textToBytes(breakers[b]!);
    if (bytes.length === 0) {
      log.warn(`skipping empty DRY sequence breaker at index ${b}`);
      continue;
    }
    if (bytes.length > DRY_MAX_BREAKER_BYTES) {
      log.warn(`truncating DRY sequence breaker to ${DRY_MAX_BREAKER_BYTES} bytes`);
      bytes = bytes.subarray(0, DRY_MAX_BREAKER_BYTES);
    }
    const str = bytesArrayToBinary(bytes);
    for (let id = 0; id < texts.length; id++) {
      const word = texts[id]!;
      if (word.includes(str)) {
        add(id, new Int32Array(0));
        continue;
      }
      // a suffix of the token's text that is a proper prefix of the breaker
      for (let pos = word.indexOf(str[0]!); pos >= 0; pos = word.indexOf(str[0]!, pos + 1)) {
        const n = word.length - pos; // < str.length, or the breaker would be inside
        if (n >= str.length || word.slice(pos) !== str.slice(0, n)) continue;
        let tail = vocab.encode(bytes.subarray(n), { addSpecial: false, parseSpecial: false });
        if (tail.length > DRY_MAX_TAIL_TOKENS) tail = tail.slice(0, DRY_MAX_TAIL_TOKENS);
        add(id, Int32Array.from(tail));
      }
    }
  }
  return out;
}

export interface DryOptions {
  multiplier: number;
  base: number;
  allowedLength: number;
  /** Tokens to look back over; -1 = the context size. */
  penaltyLastN: number;
  /** The context size (bounds the look-back); Infinity when unknown. */
  contextSize: number;
  breakers: DryBreakers;
}

export class DrySampler implements SamplingStep {
  readonly name = 'dry';
  readonly multiplier: number;
  readonly base: number;
  readonly allowedLength: number;
  readonly penaltyLastN: number;
  readonly contextSize: number;
  readonly breakers: DryBreakers;
  private history: TokenHistory;
  private repeatCount = new Int32Array(0);
  private reversed = new Int32Array(0);
  private z = new Int32Array(0);
  private readonly maxRepeat = new Map<number, number>();

  constructor(o: DryOptions) {
    this.multiplier = Math.fround(o.multiplier);
    this.base = Math.fround(o.base);
    this.allowedLength = o.allowedLength;
    this.penaltyLastN = o.penaltyLastN;
    this.contextSize = o.contextSize;
    this.breakers = o.breakers;
    const lookBack = this.penaltyLastN === -1 ? this.contextSize : Math.max(this.penaltyLastN, 0);
    this.history = new TokenHistory(this.enabled ? lookBack : 0);
  }

  get enabled(): boolean {
    return this.multiplier !== 0 && this.base >= 1 && this.penaltyLastN !== 0;
  }

  accept(token: number): void {
    if (this.enabled) this.history.push(token);
  }

  apply(c: Candidates): void {
    if (!this.enabled) return;
    const h = this.history;
    const lookBack = this.penaltyLastN === -1 ? this.contextSize : Math.max(this.penaltyLastN, 0);
    const n = Math.min(h.size, lookBack, this.contextSize);
    if (n <= this.allowedLength) return;

    // 1. The newest breaker sequence limits how far back a repeat may reach.
    let repLimit = n;
    for (let i = 0; i < n; i++) {
      const tails = this.breakers.get(h.fromEnd(i));
      if (!tails) continue;
      let longest = -1;
      for (const tail of tails) {
        const len = tail.length;
        if (len <= longest || len > i) continue;
        let match = true;
        for (let k = 0; k < len; k++) {
          if (tail[k] !== h.fromEnd(i - k - 1)) {
            match = false;
            break;
          }
        }
        if (match) longest = len;
      }
      if (longest >= 0) {
        repLimit = i - longest;
        break;
      }
    }
    if (repLimit < this.allowedLength) return;

    // 2. For each earlier position, how many tokens ending there equal the tokens ending
    //    the text: the Z-function of the reversed window, capped at repLimit.
    if (this.reversed.length < n) {
      this.reversed = new Int32Array(n);
      this.z = new Int32Array(n);
      this.repeatCount = new Int32Array(n);
    }
    const rev = this.reversed;
    for (let i = 0; i < n; i++) rev[i] = h.fromEnd(i);
    const z = this.z;
    z.fill(0, 0, n);
    for (let k = 1, left = 0, right = 0; k < n; k++) {
      let len = 0;
      if (k < right) len = Math.min(right - k, z[k - left]!);
      while (k + len < n && rev[len] === rev[k + len]) len++;
      z[k] = len;
      if (k + len > right) {
        left = k;
        right = k + len;
      }
    }
    // repeatCount[last - k]: the repeat ending k tokens before the end
    const count = this.repeatCount;
    const last = n - 1;
    count.fill(0, 0, n);
    for (let k = 1; k < n; k++) count[last - k] = Math.min(z[k]!, repLimit);

    // 3. The token after each long-enough earlier occurrence would extend the repeat.
    const maxRepeat = this.maxRepeat;
    maxRepeat.clear();
    for (let i = 0; i < n - 1; i++) {
      const len = count[i]!;
      if (len < this.allowedLength) continue;
      const token = h.fromEnd(n - 2 - i);
      const prev = maxRepeat.get(token);
      if (prev === undefined || prev < len) maxRepeat.set(token, len);
    }
    if (maxRepeat.size === 0) {
      c.sorted = false;
      return;
    }

    // 4. Penalize (the exponent capped so the penalty stays a finite float).
    const maxExponent =
      this.base > 1.000001 ? Math.trunc(Math.fround(FLOAT_MAX_LOG / Math.fround(Math.log(this.base)))) : 0;
    const penalize = (i: number, len: number) => {
      const tails = this.breakers.get(c.ids[i]!);
      if (tails?.some((t) => t.length === 0)) return; // a single-token breaker
      let exp = len - this.allowedLength;
      if (maxExponent > 0 && exp > maxExponent) exp = maxExponent;
      c.logits[i] = c.logits[i]! - this.multiplier * this.base ** exp;
    };
    if (c.identity) {
      for (const [token, len] of maxRepeat) if (token < c.size) penalize(token, len);
    } else {
      for (let i = 0; i < c.size; i++) {
        const len = maxRepeat.get(c.ids[i]!);
        if (len !== undefined) penalize(i, len);
      }
    }
    c.sorted = false;
  }

  reset(): void {
    this.history.clear();
    this.maxRepeat.clear();
  }

  clone(): DrySampler {
    const s = new DrySampler(this);
    s.history = this.history.clone();
    return s;
  }
}
