// `llama-ts serve` as a child process, for the tests that drive the real command: started
// on port 0, resolved with the URL it prints once its model is loaded ("ready on": it
// listens before, answering 503 meanwhile), rejected if it exits first.

import { type ChildProcess, spawn } from 'node:child_process';
import { REPO_ROOT } from './shared.js';

export const BIN = `${REPO_ROOT}bin/llama-ts.js`;

export interface ServeChild {
  url: string;
  process: ChildProcess;
  /** Everything the child wrote to stderr so far. */
  stderr(): string;
}

export async function startServe(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServeChild> {
  const p = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    p.stderr.on('data', (d) => {
      err += d;
      const m = /ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    p.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  return { url, process: p, stderr: () => err };
}
