// The candidate list every chain step works on: llama.cpp's llama_token_data_array as
// three parallel typed arrays (token ids, logits, probabilities), the number of entries
// in use, whether they are sorted by logit (descending), and the chosen entry. The
// arrays are allocated once for the vocabulary and reused on every step; reordering
// writes into spare arrays and swaps them in, so no step allocates per token.
//
// Float arithmetic follows llama.cpp's (single precision, Math.fround where the result
// is kept), so probabilities match its to the last bit or so.

export class Candidates {
  ids: Int32Array;
  logits: Float32Array;
  probs: Float32Array;
  /** Entries in use: [0, size). */
  size = 0;
  /** Sorted by logit, highest first. */
  sorted = false;
  /** The chosen entry (an index into the arrays), or -1. */
  selected = -1;
  /** ids[i] === i for every entry (the untouched vocabulary): lets steps index by token. */
  identity = false;
  /** Size of the vocabulary the row came from (the length of the last logits filled). */
  nVocab = 0;

  private spareIds: Int32Array;
  private spareLogits: Float32Array;
  private spareProbs: Float32Array;
  private iota = new Int32Array(0);
  /** Scratch for sorting and selection. */
  private order = new Int32Array(0);
  private keysA = new Uint32Array(0);
  private keysB = new Uint32Array(0);
  private posB = new Int32Array(0);
  private readonly radixCount = new Uint32Array(2048);
  private heap = new Int32Array(0);
  private readonly bits = new Float32Array(1);
  private readonly bitsU = new Uint32Array(this.bits.buffer);

  constructor(capacity = 0) {
    this.ids = new Int32Array(capacity);
    this.logits = new Float32Array(capacity);
    this.probs = new Float32Array(capacity);
    this.spareIds = new Int32Array(capacity);
    this.spareLogits = new Float32Array(capacity);
    this.spareProbs = new Float32Array(capacity);
  }

  /** A candidate list holding `logits` for tokens 0..n-1 (tests, one-off use). */
  static from(logits: ArrayLike<number>, ids?: ArrayLike<number>): Candidates {
    const c = new Candidates(logits.length);
    c.fill(logits);
    if (ids) {
      c.ids.set(ids);
      c.identity = false;
    }
    return c;
  }

  get capacity(): number {
    return this.ids.length;
  }

  /** Entries in use (the grammar sampler's name for size). */
  get n(): number {
    return this.size;
  }

  /** Start a step: every token of the vocabulary with its logit, probabilities 0. */
  fill(logits: ArrayLike<number>): void {
    const n = logits.length;
    this.reserve(n);
    if (this.iota.length < n) {
      this.iota = new Int32Array(n);
      for (let i = 0; i < n; i++) this.iota[i] = i;
    }
    this.ids.set(this.iota.subarray(0, n));
    this.logits.set(logits);
    this.probs.fill(0, 0, n);
    this.size = n;
    this.nVocab = n;
    this.sorted = false;
    this.selected = -1;
    this.identity = true;
  }

  /** Candidates from a list of (id, logit, p) entries. */
  fillEntries(ids: ArrayLike<number>, logits: ArrayLike<number>, probs?: ArrayLike<number>): void {
    const n = ids.length;
    this.reserve(n);
    this.ids.set(ids);
    this.logits.set(logits);
    if (probs) this.probs.set(probs);
    else this.probs.fill(0, 0, n);
    this.size = n;
    this.sorted = false;
    this.selected = -1;
    this.identity = false;
  }

  private reserve(n: number): void {
    if (this.ids.length >= n) return;
    this.ids = new Int32Array(n);
    this.logits = new Float32Array(n);
    this.probs = new Float32Array(n);
    this.spareIds = new Int32Array(n);
    this.spareLogits = new Float32Array(n);
    this.spareProbs = new Float32Array(n);
  }

  /** The chosen token id. */
  get selectedId(): number {
    return this.selected >= 0 ? this.ids[this.selected]! : -1;
  }

  /** Index of the highest logit (the first among equal ones). */
  argmax(): number {
    const l = this.logits;
    let best = 0;
    for (let i = 1; i < this.size; i++) if (l[i]! > l[best]!) best = i;
    return best;
  }

  /** Highest logit in use. */
  maxLogit(): number {
    if (this.sorted) return this.logits[0]!;
    const l = this.logits;
    let max = l[0]!;
    for (let i = 1; i < this.size; i++) if (l[i]! > max) max = l[i]!;
    return max;
  }

  /**
   * llama.cpp's softmax: optionally sort first, then p = exp(logit - max) / sum, in
   * single precision.
   */
  softmax(sort: boolean): void {
    if (this.size === 0) throw new Error('softmax over an empty candidate list');
    if (sort && !this.sorted) this.sortTop(this.size);
    const max = this.maxLogit();
    const l = this.logits;
    const p = this.probs;
    const n = this.size;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const e = Math.fround(Math.exp(Math.fround(l[i]! - max)));
      p[i] = e;
      sum = Math.fround(sum + e);
    }
    for (let i = 0; i < n; i++) p[i] = Math.fround(p[i]! / sum);
  }

  /**
   * Keep the k highest logits, sorted, at the front (llama.cpp's partial sort in place);
   * size becomes k. Ties keep their current order.
   */
  sortTop(k: number): void {
    k = Math.max(0, Math.min(k, this.size));
    const order = this.topPositions(k);
    this.gather(order, k);
    this.sorted = true;
  }

  /**
   * Positions of the k highest logits, best first (ties by position), in a scratch array
   * that the next call reuses. A heap for small k, a packed-key sort otherwise.
   */
  topPositions(k: number): Int32Array {
    const n = this.size;
    k = Math.max(0, Math.min(k, n));
    if (this.order.length < n) this.order = new Int32Array(this.capacity);
    const out = this.order;
    if (k === 0) return out;
    if (k <= 1024 && k * 8 <= n) this.heapSelect(k, out);
    else this.sortPositions(this.logits, n, true, out);
    return out;
  }

  /**
   * Positions 0..n-1 ordered by `values` (descending or ascending; ties by position)
   * into `out`: a stable three-pass radix sort on the floats' order-preserving bits.
   */
  sortPositions(values: Float32Array, n: number, descending: boolean, out: Int32Array): void {
    if (this.keysA.length < n) {
      const size = Math.max(n, this.capacity);
      this.keysA = new Uint32Array(size);
      this.keysB = new Uint32Array(size);
      this.posB = new Int32Array(size);
    }
    const f = this.bits;
    const u = this.bitsU;
    let srcK: Uint32Array = this.keysA;
    let srcP: Int32Array = out;
    for (let i = 0; i < n; i++) {
      const v = values[i]!;
      f[0] = v === 0 ? 0 : v; // -0 sorts with +0
      const b = u[0]!;
      const key = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0; // ascending as unsigned
      srcK[i] = descending ? ~key >>> 0 : key;
      srcP[i] = i;
    }
    let dstK: Uint32Array = this.keysB;
    let dstP: Int32Array = this.posB;
    const count = this.radixCount;
    for (let shift = 0; shift < 32; shift += 11) {
      count.fill(0);
      for (let i = 0; i < n; i++) count[(srcK[i]! >>> shift) & 2047]!++;
      let skip = false;
      let sum = 0;
      for (let d = 0; d < 2048; d++) {
        const c = count[d]!;
        if (c === n) skip = true;
        count[d] = sum;
        sum += c;
      }
      if (skip) continue; // every key has the same digit here
      for (let i = 0; i < n; i++) {
        const k = srcK[i]!;
        const j = count[(k >>> shift) & 2047]!++;
        dstK[j] = k;
        dstP[j] = srcP[i]!;
      }
      const tk = srcK;
      srcK = dstK;
      dstK = tk;
      const tp = srcP;
      srcP = dstP;
      dstP = tp;
    }
    if (srcP !== out) out.set(srcP.subarray(0, n));
  }

  private heapSelect(k: number, out: Int32Array): void {
    if (this.heap.length < k) this.heap = new Int32Array(Math.max(k, 64));
    const h = this.heap;
    const l = this.logits;
    const n = this.size;
    // min-heap on "worse": the root is the worst kept entry (lower logit, or later position)
    const worse = (a: number, b: number) => l[a]! < l[b]! || (l[a] === l[b] && a > b);
    const down = (i: number, size: number) => {
      for (;;) {
        const left = 2 * i + 1;
        if (left >= size) return;
        let w = left;
        if (left + 1 < size && worse(h[left + 1]!, h[left]!)) w = left + 1;
        if (!worse(h[w]!, h[i]!)) return;
        const t = h[i]!;
        h[i] = h[w]!;
        h[w] = t;
        i = w;
      }
    };
    for (let i = 0; i < k; i++) {
      h[i] = i;
      let j = i;
      while (j > 0) {
        const parent = (j - 1) >> 1;
        if (!worse(h[j]!, h[parent]!)) break;
        const t = h[j]!;
        h[j] = h[parent]!;
        h[parent] = t;
        j = parent;
      }
    }
    let min = l[h[0]!]!;
    for (let i = k; i < n; i++) {
      const v = l[i]!;
      if (v > min) {
        h[0] = i;
        down(0, k);
        min = l[h[0]!]!;
      }
    }
    // pop the worst to the back: best first
    for (let size = k; size > 0; size--) {
      out[size - 1] = h[0]!;
      h[0] = h[size - 1]!;
      down(0, size - 1);
    }
  }

  /** Make the entries at positions order[0..m) the list, in that order. */
  gather(order: ArrayLike<number>, m: number): void {
    const ids = this.spareIds;
    const logits = this.spareLogits;
    const probs = this.spareProbs;
    for (let j = 0; j < m; j++) {
      const p = order[j]!;
      ids[j] = this.ids[p]!;
      logits[j] = this.logits[p]!;
      probs[j] = this.probs[p]!;
    }
    this.spareIds = this.ids;
    this.spareLogits = this.logits;
    this.spareProbs = this.probs;
    this.ids = ids;
    this.logits = logits;
    this.probs = probs;
    this.size = m;
    this.identity = false;
  }

  /** Drop the first `count` entries (llama.cpp's `data += count`). */
  dropFront(count: number): void {
    const n = this.size;
    this.ids.copyWithin(0, count, n);
    this.logits.copyWithin(0, count, n);
    this.probs.copyWithin(0, count, n);
    this.size = n - count;
    this.identity = false;
  }

  /** Sort by probability, highest first, keeping `selected` on the same token (common_sampler_get_candidates). */
  sortByProb(): void {
    if (this.sorted || this.size === 0) return;
    const id = this.selectedId;
    if (this.order.length < this.size) this.order = new Int32Array(this.capacity);
    this.sortPositions(this.probs, this.size, true, this.order);
    this.gather(this.order, this.size);
    if (id >= 0) {
      for (let i = 0; i < this.size; i++) {
        if (this.ids[i] === id) {
          this.selected = i;
          break;
        }
      }
    }
    this.sorted = true;
  }

  /** An independent copy (its own arrays). */
  clone(): Candidates {
    const c = new Candidates(this.capacity);
    c.ids.set(this.ids);
    c.logits.set(this.logits);
    c.probs.set(this.probs);
    c.size = this.size;
    c.sorted = this.sorted;
    c.selected = this.selected;
    c.identity = this.identity;
    c.nVocab = this.nVocab;
    return c;
  }
}
