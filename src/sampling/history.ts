// The last N accepted tokens (llama.cpp's ring_buffer), or every token when N is
// unbounded. `fromEnd(0)` is the newest.

export class TokenHistory {
  private data: Int32Array;
  private first = 0;
  private count = 0;

  /** capacity: a count, or Infinity (grows without bound). Memory grows with use, never ahead of it. */
  constructor(readonly capacity: number) {
    this.data = new Int32Array(Math.min(capacity, 256));
  }

  get size(): number {
    return this.count;
  }

  /** Append a token; returns the token pushed out of a full buffer, or -1. */
  push(token: number): number {
    if (this.capacity === 0) return -1;
    if (this.count < this.capacity) {
      // not full yet: tokens sit at 0 … count-1 (first is 0)
      if (this.count === this.data.length) {
        const grown = new Int32Array(Math.min(this.data.length * 2, this.capacity));
        grown.set(this.data);
        this.data = grown;
      }
      this.data[this.count++] = token;
      return -1;
    }
    const cap = this.data.length;
    const evicted = this.data[this.first]!;
    this.data[this.first] = token;
    this.first = (this.first + 1) % cap;
    return evicted;
  }

  /** The i-th newest token (0 = the last accepted). */
  fromEnd(i: number): number {
    if (i < 0 || i >= this.count) throw new RangeError(`history index ${i} out of range (size ${this.count})`);
    return this.data[(this.first + this.count - 1 - i) % this.data.length]!;
  }

  clear(): void {
    this.first = 0;
    this.count = 0;
  }

  toArray(): number[] {
    const out: number[] = [];
    for (let i = this.count - 1; i >= 0; i--) out.push(this.fromEnd(i));
    return out;
  }

  clone(): TokenHistory {
    const h = new TokenHistory(this.capacity);
    h.data = this.data.slice();
    h.first = this.first;
    h.count = this.count;
    return h;
  }
}
