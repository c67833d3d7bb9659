// What the llama.cpp comparison benches share: running ../shared/tools/ref.mjs with a chosen
// node-llama-cpp install, and the distance between two of its answers.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** ref.mjs (or a copy of it) run on a model: its cases. `env` is added to this process's. */
export function reference(tool, model, prompts, out, env = {}) {
  execFileSync(process.execPath, [tool, model, prompts, out, '--ctx', '256', '--no-second'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return JSON.parse(readFileSync(out, 'utf8')).cases;
}

/** Largest |Δ| of b's top-10 log-probabilities relative to a's top-1, over a's top-10 ids b also lists. */
export function refDelta(a, b) {
  let worst = 0;
  let missing = 0;
  for (const [i, ca] of a.entries()) {
    const cb = b[i];
    if (JSON.stringify(ca.tokens) !== JSON.stringify(cb.tokens)) throw new Error(`tokens differ on '${ca.prompt}'`);
    const lb = new Map(cb.top10.map(([id, lp]) => [id, lp]));
    const [top1, lp1] = ca.top10[0];
    if (!lb.has(top1)) {
      missing += 10;
      continue;
    }
    for (const [id, lp] of ca.top10) {
      if (!lb.has(id)) missing++;
      else worst = Math.max(worst, Math.abs(lb.get(id) - lb.get(top1) - (lp - lp1)));
    }
  }
  return { worst, missing };
}
