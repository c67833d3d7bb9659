// Locates ../shared/ (reference data beside the checkout). Tests that need it skip
// with a clear message when it is absent, so a fresh clone without it still passes.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Compiled tests live in dist/test/helpers/, so the repository root is three levels up.
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const sharedRoot = process.env.LLAMA_TS_SHARED ?? fileURLToPath(new URL('../shared/', new URL(`file://${repoRoot}`)));

export const SHARED_DIR = sharedRoot;
export const REPO_ROOT = repoRoot;

/** Absolute path of a file under ../shared/, or undefined when it is not there. */
export function sharedPath(rel: string): string | undefined {
  const p = `${sharedRoot}${rel}`;
  return existsSync(p) ? p : undefined;
}

/** Skip message for tests whose reference data is absent. */
export function missingShared(rel: string): string {
  return `../shared/${rel} is absent (reference data lives beside the checkout; see README.md)`;
}
