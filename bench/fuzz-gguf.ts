// npm run bench:fuzz [-- CASES]: the GGUF fuzzer at scale (default 100,000 cases).
import { readdirSync, readFileSync } from 'node:fs';
import { type FuzzSeed, runFuzz, seedOf } from '../test/helpers/gguf-fuzz.js';
import { sampleBytes } from '../test/helpers/gguf-samples.js';
import { SHARED_DIR } from '../test/helpers/shared.js';

const cases = Number(process.argv[2] ?? 100_000);
const seeds: FuzzSeed[] = [seedOf('sample', sampleBytes()), seedOf('sample-a64', sampleBytes(64))];
for (const dir of ['models', 'fixtures']) {
  try {
    for (const n of readdirSync(`${SHARED_DIR}${dir}`).filter((f) => f.endsWith('.gguf'))) {
      seeds.push(seedOf(`${dir}/${n}`, new Uint8Array(readFileSync(`${SHARED_DIR}${dir}/${n}`))));
    }
  } catch {
    console.error(`../shared/${dir} is absent: fuzzing fewer seeds`);
  }
}
const rss0 = process.memoryUsage().rss;
const t0 = performance.now();
const res = runFuzz(seeds, cases, Number(process.env.FUZZ_SEED ?? 1));
const secs = (performance.now() - t0) / 1000;
console.log(
  JSON.stringify(
    {
      cases: res.cases,
      seeds: seeds.length,
      parsed: res.parsed,
      rejected: res.rejected,
      unexpected: res.unexpected.length,
      byMutation: res.byMutation,
      seconds: Number(secs.toFixed(1)),
      casesPerSecond: Math.round(cases / secs),
      rssGrowthMB: Math.round((process.memoryUsage().rss - rss0) / 2 ** 20),
    },
    null,
    2,
  ),
);
for (const u of res.unexpected.slice(0, 5)) console.log(u);
process.exitCode = res.unexpected.length ? 1 : 0;
