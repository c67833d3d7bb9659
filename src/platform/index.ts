// The platform the engine runs on, chosen once per thread: Node's (Node, and Deno and Bun,
// which report a Node version and run it through their Node compatibility) or the web's.
// The other implementation is never loaded, so a browser never imports node:* modules.
// A bundler for the browser may instead alias this file to one that re-exports web.ts.
import type { Platform } from './types.js';

export type * from './types.js';

const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

export const platform: Platform = isNode
  ? (await import('./node.js')).nodePlatform
  : (await import('./web.js')).webPlatform;

/** Bytes as lower-case hexadecimal (digests). */
export function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}
