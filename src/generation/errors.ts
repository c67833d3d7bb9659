// The error every option check throws: it names the option (as the caller spelled it) and
// the value, and says what was expected. The library turns it into a LlamaError
// 'ERR_OPTION', the server into a 400 whose `param` is the option.

export class OptionError extends Error {
  override readonly name = 'OptionError';

  constructor(
    /** The option at fault, as the caller named it (`top_p`, `frequency_penalty`, …). */
    readonly option: string,
    /** The value given. */
    readonly value: unknown,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${option} = ${showValue(value)}: ${reason}`, options);
  }
}

/** A value as an error message shows it: short, and numbers JSON cannot write (NaN, Infinity) by name. */
export function showValue(value: unknown, max = 80): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value.length > max ? `${value.slice(0, max - 3)}...` : value);
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value) && value.length > 1000) return `an array of ${value.length} items`;
  try {
    const s = JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
    if (s === undefined) return String(value);
    return s.length > max ? `${s.slice(0, max - 3)}...` : s;
  } catch {
    return String(value);
  }
}
