// Where GGUF bytes come from: a file read by position (never loaded whole, so files
// larger than memory or than 4 GiB work), opened through the platform (a path on Node,
// Deno and Bun; a Blob on the web), or bytes already in memory.
import { type FileIdentity, type PlatformFile, platform } from '../platform/index.js';

export type { FileIdentity };

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

export interface ByteSource {
  /** Name used in error messages (the file path). */
  readonly name: string;
  readonly size: number;
  /** Fill `dst` from `position`; returns the bytes read (fewer only at end of data). */
  readSync(dst: Uint8Array, position: number): number;
  readAsync(dst: Uint8Array, position: number): Promise<number>;
  close(): void;
}

export class FileSource implements ByteSource {
  readonly size: number;
  private readonly file: PlatformFile;

  constructor(readonly name: string) {
    this.file = platform.openFile(name);
    this.size = this.file.size;
  }

  /** The open file's identity (to check another handle reads the same file). */
  identity(): FileIdentity {
    return this.file.identity();
  }

  readSync(dst: Uint8Array, position: number): number {
    return this.file.readSync(dst, position);
  }

  readAsync(dst: Uint8Array, position: number): Promise<number> {
    return this.file.readAsync(dst, position);
  }

  close(): void {
    this.file.close();
  }
}

/** Files read as one (a split model's shards, in order); named after the first. */
export class ConcatSource implements ByteSource {
  readonly name: string;
  readonly size: number;
  private readonly starts: number[] = [];

  constructor(private readonly parts: readonly ByteSource[]) {
    this.name = parts[0]!.name;
    let at = 0;
    for (const p of parts) {
      this.starts.push(at);
      at += p.size;
    }
    this.size = at;
  }

  /** Calls `read` for each part the range [position, position + dst.length) overlaps. */
  private each(dst: Uint8Array, position: number, read: (p: ByteSource, d: Uint8Array, at: number) => void): void {
    for (let i = 0; i < this.parts.length; i++) {
      const start = this.starts[i]!;
      const end = start + this.parts[i]!.size;
      const lo = Math.max(position, start);
      const hi = Math.min(position + dst.length, end);
      if (hi > lo) read(this.parts[i]!, dst.subarray(lo - position, hi - position), lo - start);
    }
  }

  readSync(dst: Uint8Array, position: number): number {
    let n = 0;
    this.each(dst, position, (p, d, at) => {
      n += p.readSync(d, at);
    });
    return n;
  }

  async readAsync(dst: Uint8Array, position: number): Promise<number> {
    const reads: Promise<number>[] = [];
    this.each(dst, position, (p, d, at) => reads.push(p.readAsync(d, at)));
    return (await Promise.all(reads)).reduce((a, b) => a + b, 0);
  }

  close(): void {
    for (const p of this.parts) p.close();
  }
}

export class MemorySource implements ByteSource {
  readonly size: number;
  constructor(
    private readonly bytes: Uint8Array,
    readonly name = '<memory>',
  ) {
    this.size = bytes.length;
  }

  readSync(dst: Uint8Array, position: number): number {
    const n = Math.max(0, Math.min(dst.length, this.size - position));
    dst.set(this.bytes.subarray(position, position + n));
    return n;
  }

  async readAsync(dst: Uint8Array, position: number): Promise<number> {
    return this.readSync(dst, position);
  }

  close(): void {}
}
