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
