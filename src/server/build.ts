// What build this server is: llama-ts's version (package.json) and, in a git checkout, its
// commit. llama-server reports `b<build number>-<commit>` as system_fingerprint; this is the
// same shape with llama-ts's own numbers.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The package root (dist/src/server → three levels up). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** llama-ts's version, from package.json. */
export const VERSION = ((): string => {
  try {
    return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

/** The checkout's commit (7 hex digits), or 'unknown' for an installed package (as llama.cpp built outside git). */
export const COMMIT = ((): string => {
  if (!existsSync(`${ROOT}.git`)) return 'unknown';
  try {
    const out = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short=7', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).trim();
    return /^[0-9a-f]{7,}$/.test(out) ? out : 'unknown';
  } catch {
    return 'unknown';
  }
})();

/** system_fingerprint: `b<version>-<commit>`, llama-server's `b<build>-<commit>` shape. */
export const SYSTEM_FINGERPRINT = `b${VERSION}-${COMMIT}`;
