// The error every sampling option check throws: it names the option and its value.

export class SamplingError extends Error {
  override readonly name = 'SamplingError';

  constructor(
    /** The option at fault (`top_p`, `logit_bias`, …). */
    readonly option: string,
    /** The value given. */
    readonly value: unknown,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${option} = ${describe(value)}: ${reason}`, options);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (value === undefined) return 'undefined';
  try {
    const s = JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    return String(value);
  }
}
