// Stop strings for streamed text: text is held back while its end could still be the
// start of a stop string, so no part of a stop string is ever emitted; when one occurs,
// everything before it is released and generation should end.
//
//   const stops = new StopStringMatcher(['</s>', '\nUser:']);
//   for (const piece of pieces) {
//     const { text, stop } = stops.push(piece);
//     emit(text);
//     if (stop !== undefined) break;   // stop: the string that matched
//   }
//   emit(stops.flush());               // generation ended otherwise: release what is held
//
// Like llama.cpp's server, the earliest occurrence wins (the first listed string among
// ones starting at the same place).
import { SamplingError } from './errors.js';

export interface StopMatch {
  /** Text safe to emit now. */
  text: string;
  /** The stop string found (the text stops before it), or undefined. */
  stop?: string;
}

export class StopStringMatcher {
  readonly stops: readonly string[];
  private held = '';
  private done = false;
  /** The stop string found, once one has been. */
  matched: string | undefined;

  constructor(stops: readonly string[]) {
    if (!Array.isArray(stops) || !stops.every((s) => typeof s === 'string' && s.length > 0)) {
      throw new SamplingError('stop', stops, 'must be an array of non-empty strings');
    }
    this.stops = [...stops];
  }

  /** Text held back (a possible start of a stop string). */
  get pending(): string {
    return this.held;
  }

  /** Feed the next piece of generated text. After a match, further text is dropped. */
  push(piece: string): StopMatch {
    if (this.done) return { text: '', stop: this.matched };
    const text = this.held + piece;
    let at = -1;
    let found: string | undefined;
    for (const s of this.stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        found = s;
      }
    }
    if (found !== undefined) {
      this.done = true;
      this.matched = found;
      this.held = '';
      return { text: text.slice(0, at), stop: found };
    }
    const keep = this.partialLength(text);
    this.held = text.slice(text.length - keep);
    return { text: text.slice(0, text.length - keep) };
  }

  /** Length of the longest end of `text` that begins some stop string. */
  private partialLength(text: string): number {
    let best = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, text.length); n > best; n--) {
        if (text.endsWith(s.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }

  /** Generation ended without a stop string: release the held text. */
  flush(): string {
    const t = this.held;
    this.held = '';
    return t;
  }

  reset(): void {
    this.held = '';
    this.done = false;
    this.matched = undefined;
  }
}
