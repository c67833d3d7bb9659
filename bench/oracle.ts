// node-llama-cpp, the benchmarks' reference engine: native llama.cpp with prebuilt binaries,
// installed on first use outside the repository (never a dependency).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const NLC_VERSION = '3.21.1';

function oracleDir(): string {
  const root = process.env.LLAMA_TS_ORACLES ?? join(homedir(), '.cache', 'llama-ts', 'oracles');
  return join(root, `node-llama-cpp-${NLC_VERSION}`);
}

/** The path of node-llama-cpp's entry module, installing it into ~/.cache/llama-ts/oracles (or $LLAMA_TS_ORACLES) first if needed. */
export function ensureOracle(): string {
  const dir = oracleDir();
  const entry = join(dir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  if (!existsSync(entry)) {
    mkdirSync(dir, { recursive: true });
    process.stderr.write(`bench: installing node-llama-cpp@${NLC_VERSION} into ${dir} (hundreds of MB)\n`);
    execFileSync(
      'npm',
      ['install', '--prefix', dir, `node-llama-cpp@${NLC_VERSION}`, '--ignore-scripts', '--no-audit', '--no-fund'],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
  }
  return entry;
}

export const LLAMA_NODE_VERSION = '1.7.15';

/** The folder @fugood/llama.node (llama.cpp with mtmd) is installed in, installing it first if needed. */
export function ensureLlamaNode(): string {
  const root = process.env.LLAMA_TS_ORACLES ?? join(homedir(), '.cache', 'llama-ts', 'oracles');
  const dir = join(root, 'llama.node');
  if (!existsSync(join(dir, 'node_modules', '@fugood', 'llama.node', 'package.json'))) {
    mkdirSync(dir, { recursive: true });
    process.stderr.write(`bench: installing @fugood/llama.node@${LLAMA_NODE_VERSION} into ${dir}\n`);
    execFileSync(
      'npm',
      ['install', '--prefix', dir, `@fugood/llama.node@${LLAMA_NODE_VERSION}`, '--no-audit', '--no-fund'],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return dir;
}
