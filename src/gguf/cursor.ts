// Sequential little-endian reads over a ByteSource, buffered in chunks. Every read
// checks the bytes exist before touching them, so a truncated or lying file ends in
// a GGUFError naming the offset, never in a RangeError or a huge allocation.
import { GGUFError } from './errors.js';
import type { ByteSource } from './source.js';

const CHUNK = 1 << 20;
const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export class Cursor {
  private buf = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  /** File offset of buf[0]. */
  private bufStart = 0;
  /** Absolute file offset of the next byte to read. */
  pos = 0;

  constructor(readonly src: ByteSource) {}

  get remaining(): number {
    return this.src.size - this.pos;
  }

  fail(detail: string, offset = this.pos): never {
    throw new GGUFError(this.src.name, offset, detail);
  }

  /** Make `n` bytes at `pos` available in the buffer, or fail as truncated. */
  private need(n: number, what: string): number {
    if (n > this.remaining) {
      this.fail(`file truncated: ${what} needs ${n} bytes, ${Math.max(0, this.remaining)} left`);
    }
    let at = this.pos - this.bufStart;
    if (at < 0 || at + n > this.buf.length) {
      const size = Math.min(Math.max(n, CHUNK), this.remaining);
      if (this.buf.length < size || this.buf.length > Math.max(size, CHUNK)) {
        this.buf = new Uint8Array(size);
        this.view = new DataView(this.buf.buffer);
      }
      const got = this.src.readSync(this.buf.subarray(0, size), this.pos);
      if (got < n) this.fail(`file truncated: ${what} needs ${n} bytes, ${got} could be read`);
      this.bufStart = this.pos;
      at = 0;
    }
    return at;
  }

  u8(what: string): number {
    const at = this.need(1, what);
    this.pos += 1;
    return this.buf[at]!;
  }
  i8(what: string): number {
    const at = this.need(1, what);
    this.pos += 1;
    return this.view.getInt8(at);
  }
  u16(what: string): number {
    const at = this.need(2, what);
    this.pos += 2;
    return this.view.getUint16(at, true);
  }
  i16(what: string): number {
    const at = this.need(2, what);
    this.pos += 2;
    return this.view.getInt16(at, true);
  }
  u32(what: string): number {
    const at = this.need(4, what);
    this.pos += 4;
    return this.view.getUint32(at, true);
  }
  i32(what: string): number {
    const at = this.need(4, what);
    this.pos += 4;
    return this.view.getInt32(at, true);
  }
  f32(what: string): number {
    const at = this.need(4, what);
    this.pos += 4;
    return this.view.getFloat32(at, true);
  }
  f64(what: string): number {
    const at = this.need(8, what);
    this.pos += 8;
    return this.view.getFloat64(at, true);
  }
  u64(what: string): bigint {
    const at = this.need(8, what);
    this.pos += 8;
    return this.view.getBigUint64(at, true);
  }
  i64(what: string): bigint {
    const at = this.need(8, what);
    this.pos += 8;
    return this.view.getBigInt64(at, true);
  }

  /** A u64 count that must fit in what is left of the file at `minItemBytes` per item. */
  count(what: string, minItemBytes: number): number {
    const start = this.pos;
    const n = this.u64(what);
    const fits = BigInt(Math.floor(this.remaining / Math.max(1, minItemBytes)));
    if (n > fits) {
      this.fail(`${what} is ${n}, but only ${this.remaining} bytes remain (at least ${minItemBytes} per item)`, start);
    }
    return Number(n);
  }

  /** Copy `n` raw bytes (n already checked against the file size by the caller or here). */
  bytes(n: number, what: string): Uint8Array {
    if (n <= CHUNK) {
      const at = this.need(n, what);
      this.pos += n;
      return this.buf.slice(at, at + n);
    }
    if (n > this.remaining) this.fail(`file truncated: ${what} needs ${n} bytes, ${this.remaining} left`);
    const out = new Uint8Array(n);
    const got = this.src.readSync(out, this.pos);
    if (got < n) this.fail(`file truncated: ${what} needs ${n} bytes, ${got} could be read`);
    this.pos += n;
    return out;
  }

  string(what: string): string {
    const len = this.count(`length of ${what}`, 1);
    if (len === 0) return '';
    return utf8.decode(this.bytes(len, what));
  }

  /** Raw bytes of a string (for names that must be compared byte-wise). */
  stringBytes(what: string): Uint8Array {
    const len = this.count(`length of ${what}`, 1);
    return this.bytes(len, what);
  }
}

export function decodeUtf8(b: Uint8Array): string {
  return utf8.decode(b);
}
