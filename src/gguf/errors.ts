/** A malformed or unexpected GGUF file: names the file, the byte offset and what was wrong. */
export class GGUFError extends Error {
  override readonly name = 'GGUFError';
  constructor(
    readonly file: string,
    /** Byte offset in the file where the problem was found, when it has one. */
    readonly offset: number | undefined,
    readonly detail: string,
  ) {
    super(offset === undefined ? `${file}: ${detail}` : `${file}: at byte ${offset}: ${detail}`);
  }
}
