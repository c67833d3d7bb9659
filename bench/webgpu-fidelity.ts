// The WebGPU fidelity test over every shared fixture, one process per model (SwiftShader
// takes minutes for the larger ones), and a table of the results: per model, offloaded
// and at -ngl 1, the worst top-10 |Δ| (relative logits) over its prompts, greedy steps
// matched / required, pass or the failure. Usage (after npm run build; needs an adapter,
// e.g. VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json):
//   node dist/bench/webgpu-fidelity.js [NAME ...]   (names as rand-llama-Q6_K, gemma3-Q8_0)

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fidelityTolerance, generativeFixtures } from '../test/helpers/fidelity-fixtures.js';

const TEST = fileURLToPath(new URL('../test/webgpu-fidelity.test.js', import.meta.url));

interface Row {
  model: string;
  tol: number;
  runs: Record<string, string>;
}

const wanted = process.argv.slice(2);
const files = generativeFixtures().filter((rel) => wanted.length === 0 || wanted.some((n) => rel.endsWith(`/${n}`)));
const rows: Row[] = [];
for (const rel of files) {
  const name = rel.slice(rel.lastIndexOf('/') + 1);
  const r = spawnSync(process.execPath, ['--test', '--test-timeout=3600000', TEST], {
    env: { ...process.env, LLAMA_TS_WEBGPU_FIDELITY: name },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  const row: Row = { model: rel, tol: fidelityTolerance(rel), runs: {} };
  for (const label of ['offloaded', '-ngl 1']) {
    const line = new RegExp(`# webgpu ${label} ${rel}: (.*)`).exec(out)?.[1];
    if (line) {
      const deltas = [...line.matchAll(/max\|Δ\| ([0-9.]+)/g)].map((m) => Number(m[1]));
      const greedy = [...line.matchAll(/greedy (\d+)\/(\d+)/g)];
      const matched = greedy.reduce((n, m) => n + Number(m[1]), 0);
      const required = greedy.reduce((n, m) => n + Number(m[2]), 0);
      row.runs[label] = `${Math.max(...deltas).toFixed(4)}, greedy ${matched}/${required}`;
    } else {
      const failed = new RegExp(
        `not ok \\d+ - webgpu fidelity \\(${label.replace('-', '\\-')}\\): ${rel}[\\s\\S]*?error: (.*)`,
      ).exec(out);
      row.runs[label] = `FAIL: ${failed?.[1]?.slice(0, 160) ?? `no result (exit ${r.status})`}`;
    }
  }
  rows.push(row);
  process.stderr.write(`${rel}: ${row.runs.offloaded} | ${row.runs['-ngl 1']}\n`);
}
process.stdout.write(
  '| model | tolerance | offloaded: max |Δ|, greedy | -ngl 1: max |Δ|, greedy |\n|---|---|---|---|\n',
);
for (const r of rows) process.stdout.write(`| ${r.model} | ${r.tol} | ${r.runs.offloaded} | ${r.runs['-ngl 1']} |\n`);
