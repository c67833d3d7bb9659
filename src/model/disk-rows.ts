// A weight whose rows are read from the model file when needed instead of being held in
// memory. Token embedding tables qualify: the graph reads them with GET_ROWS alone, a
// batch needs at most n_ubatch of their rows, and on a large vocabulary they are a big
// share of a small model (76 MB of the 630M Qwen2.5 in Q4_0; Gemma 4 E2B's per-layer
// table, 262,144 rows of 35 × 256, is most of its file). The file stays open
// (deleting or renaming it does not matter), and every read first checks that it has not
// been changed in place since loading, failing clearly rather than returning other bytes.

import type { GGUFFile, GGUFTensorInfo } from '../gguf/index.js';
import { type FileIdentity, sameIdentity } from '../gguf/index.js';
import { type PlatformFile, platform } from '../platform/index.js';
import { ModelError } from './errors.js';

export class DiskRows {
  readonly rowBytes: number;
  readonly nRows: number;
  private file: PlatformFile | undefined;
  private readonly id: FileIdentity;

  private constructor(
    readonly path: string,
    readonly info: GGUFTensorInfo,
    file: PlatformFile,
    id: FileIdentity,
  ) {
    this.file = file;
    this.id = id;
    this.nRows = info.dims.slice(1).reduce((a, b) => a * b, 1);
    this.rowBytes = info.nBytes / this.nRows;
  }

  /** Opens the file again for `info`'s rows; null when `file` is not a file on disk. */
  static open(file: GGUFFile, info: GGUFTensorInfo): DiskRows | null {
    const want = file.identity();
    if (!want) return null;
    const f = platform.openFile(file.path);
    try {
      const id = f.identity();
      if (!sameIdentity(id, want))
        throw new ModelError(`${file.path}: the model file changed while it was being loaded`);
      return new DiskRows(file.path, info, f, id);
    } catch (e) {
      f.close();
      throw e;
    }
  }

  /**
   * Reads rows `ids` (each in range) into `dst`, one after the other. Throws ModelError when
   * the file was closed or has changed since loading.
   */
  read(ids: ArrayLike<number>, dst: Uint8Array): void {
    const f = this.file;
    if (f === undefined) throw new ModelError(`${this.path}: '${this.info.name}' read after the model was freed`);
    if (!sameIdentity(f.identity(), this.id)) {
      throw new ModelError(
        `${this.path}: the model file changed after loading ('${this.info.name}' is read from it on demand); load the model again`,
      );
    }
    const rb = this.rowBytes;
    if (dst.byteLength < ids.length * rb)
      throw new RangeError(`DiskRows: ${ids.length} rows need ${ids.length * rb} bytes`);
    for (let k = 0; k < ids.length; k++) {
      const r = ids[k];
      if (!(r >= 0 && r < this.nRows))
        throw new RangeError(`'${this.info.name}': row ${r} outside 0..${this.nRows - 1}`);
      const got = f.readSync(dst.subarray(k * rb, (k + 1) * rb), this.info.fileOffset + r * rb);
      if (got !== rb) throw new ModelError(`${this.path}: short read of '${this.info.name}' row ${r}`);
    }
  }

  close(): void {
    this.file?.close();
    this.file = undefined;
  }
}
