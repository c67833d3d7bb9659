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

/**
 * Whether memory can be shared between threads: everywhere but a browser page (or its
 * workers) that is not cross-origin isolated, where SharedArrayBuffer is withheld.
 */
export function canShareMemory(): boolean {
  return (
    (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false &&
    typeof SharedArrayBuffer === 'function'
  );
}

/** Bytes shared with the workers they are posted to, where memory can be shared; else a plain buffer (each side gets a copy). */
export function sharedBuffer(bytes: number): SharedArrayBuffer | ArrayBuffer {
  return canShareMemory() ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
}

/** Bytes as lower-case hexadecimal (digests). */
export function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}
