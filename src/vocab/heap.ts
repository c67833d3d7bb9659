// Work queue of candidate merges (bigrams) shared by SentencePiece and BPE: the entry
// with the lowest key comes first, ties going to the leftmost pair, as in llama.cpp's
// priority queues. Parallel typed arrays, so a long word does not allocate per entry.

export class BigramQueue {
  private key = new Float64Array(64);
  private left = new Int32Array(64);
  private right = new Int32Array(64);
  private size = new Int32Array(64);
  private n = 0;

  get length(): number {
    return this.n;
  }

  clear(): void {
    this.n = 0;
  }

  private less(i: number, j: number): boolean {
    const a = this.key[i]!;
    const b = this.key[j]!;
    return a < b || (a === b && this.left[i]! < this.left[j]!);
  }

  private swap(i: number, j: number): void {
    const { key, left, right, size } = this;
    let t = key[i]!;
    key[i] = key[j]!;
    key[j] = t;
    t = left[i]!;
    left[i] = left[j]!;
    left[j] = t;
    t = right[i]!;
    right[i] = right[j]!;
    right[j] = t;
    t = size[i]!;
    size[i] = size[j]!;
    size[j] = t;
  }

  private grow(): void {
    const cap = this.key.length * 2;
    const k = new Float64Array(cap);
    k.set(this.key);
    this.key = k;
    const l = new Int32Array(cap);
    l.set(this.left);
    this.left = l;
    const r = new Int32Array(cap);
    r.set(this.right);
    this.right = r;
    const s = new Int32Array(cap);
    s.set(this.size);
    this.size = s;
  }

  push(key: number, left: number, right: number, size: number): void {
    if (this.n === this.key.length) this.grow();
    let i = this.n++;
    this.key[i] = key;
    this.left[i] = left;
    this.right[i] = right;
    this.size[i] = size;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  /** Remove the first entry; its fields are left in `top`. Returns false when empty. */
  pop(top: { left: number; right: number; size: number }): boolean {
    if (this.n === 0) return false;
    top.left = this.left[0]!;
    top.right = this.right[0]!;
    top.size = this.size[0]!;
    const last = --this.n;
    if (last > 0) {
      this.swap(0, last);
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= last) break;
        const r = l + 1;
        const c = r < last && this.less(r, l) ? r : l;
        if (!this.less(c, i)) break;
        this.swap(c, i);
        i = c;
      }
    }
    return true;
  }
}

/** Doubly linked symbols over one text: symbol i covers [start[i], start[i] + len[i]). */
export class Symbols {
  start: Int32Array;
  len: Int32Array;
  prev: Int32Array;
  next: Int32Array;
  count = 0;

  constructor(capacity: number) {
    this.start = new Int32Array(capacity);
    this.len = new Int32Array(capacity);
    this.prev = new Int32Array(capacity);
    this.next = new Int32Array(capacity);
  }

  /** Ensure room for `capacity` symbols and forget the old ones. */
  reset(capacity: number): void {
    if (this.start.length < capacity) {
      const cap = Math.max(capacity, this.start.length * 2);
      this.start = new Int32Array(cap);
      this.len = new Int32Array(cap);
      this.prev = new Int32Array(cap);
      this.next = new Int32Array(cap);
    }
    this.count = 0;
  }

  add(start: number, len: number, last: boolean): void {
    const i = this.count++;
    this.start[i] = start;
    this.len[i] = len;
    this.prev[i] = i - 1;
    this.next[i] = last ? -1 : i + 1;
  }

  /** Merge symbol `right` into `left` (its next). */
  merge(left: number, right: number): void {
    this.len[left] = this.len[left]! + this.len[right]!;
    this.len[right] = 0;
    const nx = this.next[right]!;
    this.next[left] = nx;
    if (nx >= 0) this.prev[nx] = left;
  }
}
