// Ids for tool calls that arrive without one (shared by every tool-call parser).
import { platform } from '../platform/index.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 9 random letters and digits (Mistral's form). */
export function randomToolCallId(): string {
  let id = '';
  for (const b of platform.randomBytes(9)) id += ALNUM[b % ALNUM.length];
  return id;
}
