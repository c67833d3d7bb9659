// The prefix key: a short, stable name for the start of a rendered prompt, so a load
// balancer can send a conversation's turns to the replica whose slots hold its cache
// (nginx: `hash $http_x_prefix_key consistent`). A balancer picks a replica before it
// reads the body, so the key travels in a header: the server returns it with every
// answer and the client sends it back with its next turn.
//
// A key is `<L>-<h>`: h is the first 16 hex digits of SHA-256 over the prompt's first L
// token ids (little-endian u32), L = min(N, the prompt's length), N = PREFIX_KEY_TOKENS.
// Given the previous turn's key, the same key comes back while the new prompt still
// begins with the L tokens it covers (checked, not trusted), so a conversation keeps one
// key even when its first prompt was shorter than N; otherwise (another conversation, a
// rewritten history, a malformed key) the key is computed afresh.
import { hex, platform } from '../platform/index.js';

/**
 * N: the most prompt tokens a key covers. Long enough to reach past a typical system
 * prompt (tens to a few hundred tokens) into the first user message, so different
 * conversations get different keys and spread over the replicas; short enough that
 * requests agreeing on their first 256 tokens (a long shared preamble or document),
 * which would each re-evaluate those tokens elsewhere, are sent to one replica, where
 * they are cached. Conversations keep their key past N by the check above.
 */
export const PREFIX_KEY_TOKENS = 256;

/** The HTTP header that carries it (requests and responses). */
export const PREFIX_KEY_HEADER = 'X-Prefix-Key';

/** The longest key: `<L>-<16 hex>`, L ≤ PREFIX_KEY_TOKENS. */
export const PREFIX_KEY_MAX_LENGTH = String(PREFIX_KEY_TOKENS).length + 17;

const KEY = /^([1-9]\d{0,5})-([0-9a-f]{16})$/;

function digest(prompt: readonly number[], n: number): string {
  const bytes = new Uint8Array(n * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < n; i++) view.setUint32(i * 4, prompt[i]! >>> 0, true);
  return hex(platform.sha256().update(bytes).digest().subarray(0, 8));
}

/** Whether a string has a key's form (the server passes only such header values on). */
export function isPrefixKey(s: string): boolean {
  const m = KEY.exec(s);
  return m !== null && Number(m[1]) <= PREFIX_KEY_TOKENS;
}

/**
 * The key of a prompt: `previous` when it is well formed and the prompt begins with the
 * tokens it covers, else a new one over the first min(N, length) tokens ('' for an empty prompt).
 */
export function prefixKey(prompt: readonly number[], previous = ''): string {
  const m = KEY.exec(previous);
  if (m) {
    const n = Number(m[1]);
    if (n <= PREFIX_KEY_TOKENS && n <= prompt.length && digest(prompt, n) === m[2]) return previous;
  }
  const n = Math.min(PREFIX_KEY_TOKENS, prompt.length);
  return n === 0 ? '' : `${n}-${digest(prompt, n)}`;
}
