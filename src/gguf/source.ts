// Where GGUF bytes come from: a file read by position (never loaded whole, so files
// larger than memory or than 4 GiB work) or bytes already in memory.
import { closeSync, fstatSync, openSync, read, readSync } from 'node:fs';

/** What identifies a file's contents on disk: same device and inode, size and modification time. */
export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** The identity of an open file descriptor. */
export function fileIdentity(fd: number): FileIdentity {
  const st = fstatSync(fd);
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

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

// fs reads take at most 2 GiB - 1 per call.
const MAX_READ = 1 << 30;

export class FileSource implements ByteSource {
  readonly size: number;
  private fd: number | undefined;

  constructor(readonly name: string) {
    this.fd = openSync(name, 'r');
    try {
      this.size = fstatSync(this.fd).size;
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  /** The open file's identity (to check another descriptor reads the same file). */
  identity(): FileIdentity {
    return fileIdentity(this.handle());
  }

  private handle(): number {
    if (this.fd === undefined) throw new Error(`${this.name}: file is closed`);
    return this.fd;
  }

  readSync(dst: Uint8Array, position: number): number {
    const fd = this.handle();
    let done = 0;
    while (done < dst.length) {
      const n = readSync(fd, dst, done, Math.min(dst.length - done, MAX_READ), position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  async readAsync(dst: Uint8Array, position: number): Promise<number> {
    const fd = this.handle();
    let done = 0;
    while (done < dst.length) {
      const n = await new Promise<number>((resolve, reject) => {
        read(fd, dst, done, Math.min(dst.length - done, MAX_READ), position + done, (err, bytes) =>
          err ? reject(err) : resolve(bytes),
        );
      });
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
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
