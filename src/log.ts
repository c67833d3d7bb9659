// One log facility for the whole library, as ggml has one GGML_LOG_* with one user
// callback: every module logs through here, never to the console directly.

import { platform } from './platform/index.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'cont';

/** Receives every message of every module. `cont` continues the previous message. */
export type LogCallback = (level: LogLevel, message: string, source: string) => void;

const RANK: Record<Exclude<LogLevel, 'cont'>, number> = { debug: 0, info: 1, warn: 2, error: 3 };

let lastRank = RANK.info;

/** Default sink: warnings and errors to stderr. */
export const defaultLogCallback: LogCallback = (level, message, source) => {
  const rank = level === 'cont' ? lastRank : RANK[level];
  if (level !== 'cont') lastRank = rank;
  if (rank < RANK.warn) return;
  platform.writeError(level === 'cont' ? message : `llama-ts ${source}: ${level}: ${message}\n`);
};

let callback: LogCallback = defaultLogCallback;

/** Route every log message of the library to `fn`; `null` restores the default. */
export function setLogCallback(fn: LogCallback | null): void {
  callback = fn ?? defaultLogCallback;
}

export function getLogCallback(): LogCallback {
  return callback;
}

/** A logger bound to one module name (`gguf`, `backend:cpu`, ...). */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  cont(message: string): void;
}

export function logger(source: string): Logger {
  const emit = (level: LogLevel) => (message: string) => callback(level, message, source);
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'), cont: emit('cont') };
}
