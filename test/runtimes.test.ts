// The same engine on Deno and Bun, under each runtime whose executable LLAMA_TS_DENO /
// LLAMA_TS_BUN names (.ci/run installs them from the npm registry): the CLI (`run --json
// --top-logits`) and the library smoke (test/runtimes/smoke.ts: completion, tokenize,
// embedding, sessions) must give this Node's output byte for byte (the same greedy token
// ids, raw logits and embeddings to the bit), and part of the library's suite must pass
// under the runtime's own test runner. Skips a runtime whose variable is unset, and
// stories260K without ../shared.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tinyBert, tinyLlama } from './helpers/models.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const SMOKE = fileURLToPath(new URL('./runtimes/smoke.js', import.meta.url));
const CLI = join(REPO_ROOT, 'bin', 'llama-ts.js');
const tmp = mkdtempSync(join(tmpdir(), 'llama-ts-runtimes-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

interface Runtime {
  name: string;
  env?: Record<string, string>;
  /** The command line that runs a script with the runtime's Node compatibility. */
  argv: (script: string) => string[];
}

/**
 * Test files of the library's own suite that run unchanged under `deno test` and `bun
 * test` (both run node:test files). The others are left out because they drive Node-only
 * tooling: child processes started with process.execPath and Node flags (`--input-type`,
 * `--expose-gc`), the server and its clients, nginx, the oracles, the generator's and the
 * quantizer's heavier runs; and for time.
 */
const SUITE = [
  'gguf-reader',
  'gguf-hostile',
  'platform',
  'model-context',
  'sampling-chain',
  'chat-template',
  'untrusted-worker',
  'api-completion',
  'api-embedding',
  'api-session',
  'api-grammar',
  'api-parallel',
];

const RUNTIMES: {
  name: string;
  env: string;
  argv: (bin: string, script: string) => string[];
  test: (bin: string, files: string[]) => string[];
  /** Passed and failed counts from the test command's summary. */
  summary: (out: string) => { passed: number; failed: number } | undefined;
}[] = [
  {
    name: 'deno',
    env: 'LLAMA_TS_DENO',
    argv: (bin, script) => [bin, 'run', '-A', script],
    test: (bin, files) => [bin, 'test', '-A', ...files],
    summary(out) {
      // "ok | 12 passed (152 steps) | 0 failed": steps are the node:test subtests
      const m = /(\d+) passed(?: \((\d+) steps\))? \| (\d+) failed/.exec(out);
      return m ? { passed: Number(m[2] ?? m[1]), failed: Number(m[3]) } : undefined;
    },
  },
  {
    name: 'bun',
    env: 'LLAMA_TS_BUN',
    argv: (bin, script) => [bin, script],
    test: (bin, files) => [bin, 'test', ...files],
    summary(out) {
      const p = /^\s*(\d+) pass$/m.exec(out);
      const f = /^\s*(\d+) fail$/m.exec(out);
      return p && f ? { passed: Number(p[1]), failed: Number(f[1]) } : undefined;
    },
  },
];

/**
 * Node with the CPU kernel build a runtime picks: relaxed SIMD and plain SIMD128 round
 * differently. Where the runtime's relaxed_madd is unfused (JavaScriptCore: Bun), its
 * relaxed build rounds as the SIMD128 build does, so Node's SIMD128 build is the reference.
 */
const node = (variant: string): Runtime => {
  const build = variant === 'relaxed' ? 'relaxed' : 'strict';
  return {
    name: `node (${build} SIMD)`,
    env: { LLAMA_TS_CPU_SIMD: build },
    argv: (script) => [process.execPath, script],
  };
};

function exec(rt: Runtime, script: string, args: string[]): string {
  const [cmd, ...pre] = rt.argv(script);
  const t0 = performance.now();
  const r = spawnSync(cmd as string, [...pre, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...rt.env },
  });
  const ms = performance.now() - t0;
  assert.equal(
    r.status,
    0,
    `${rt.name} ${script} ${args.join(' ')} exited ${r.status} (${r.error ?? ''}):\n${r.stderr}`,
  );
  process.stdout.write(`# ${rt.name}: ${script.slice(REPO_ROOT.length)} ${args[0] ?? ''}… ${ms.toFixed(0)} ms\n`);
  return r.stdout;
}

/** The cases: what to run and with which arguments (the session file is per runtime). */
function cases(): { name: string; skip?: string; run: (rt: Runtime) => string }[] {
  const stories = sharedPath('models/stories260K.gguf');
  const out: { name: string; skip?: string; run: (rt: Runtime) => string }[] = [];
  for (const [label, model] of [
    ['tiny-llama Q8_0', tinyLlama('Q8_0')],
    ['tiny-llama Q4_0', tinyLlama('Q4_0')],
    ['stories260K', stories],
  ] as const) {
    const skip = model ? undefined : missingShared('models/stories260K.gguf');
    out.push({
      name: `library smoke on ${label}`,
      skip,
      run: (rt) => exec(rt, SMOKE, [model as string, join(tmp, `${rt.name}-${label.replace(/\W/g, '_')}.sess`)]),
    });
    out.push({
      name: `llama-ts run --json --top-logits on ${label}`,
      skip,
      run: (rt) =>
        exec(
          rt,
          CLI,
          ['run', '-m', model as string, '-p', 'Once upon a time', '-n', '16', '--temp', '0', '-t', '2'].concat([
            '--json',
            '--top-logits',
            '1000',
          ]),
        ).replace(/"timings":\{[^}]*\}/, '"timings":{}'),
    });
  }
  const bert = tinyBert('F16');
  out.push({
    name: 'library embedding on tiny-bert F16',
    run: (rt) => exec(rt, SMOKE, [bert, join(tmp, `${rt.name}-bert.sess`), '--embedding']),
  });
  return out;
}

/** Where two JSON outputs first differ: the key and element, both values (not 30 kB of text). */
function firstDifference(want: string, got: string): string {
  let a: Record<string, unknown>;
  let b: Record<string, unknown>;
  try {
    a = JSON.parse(want);
    b = JSON.parse(got);
  } catch {
    return `not JSON: ${got.slice(0, 300)}`;
  }
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[k];
    const y = b[k];
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    if (Array.isArray(x) && Array.isArray(y)) {
      const i = x.findIndex((v, j) => JSON.stringify(v) !== JSON.stringify(y[j]));
      return `${k}[${i}]: node ${JSON.stringify(x[i])}, here ${JSON.stringify(y[i])} (lengths ${x.length}, ${y.length})`;
    }
    return `${k}: node ${JSON.stringify(x)?.slice(0, 200)}, here ${JSON.stringify(y)?.slice(0, 200)}`;
  }
  return 'the same values, other text';
}

// (the models are generated only when a runtime is there to run them)
const CASES = RUNTIMES.some((r) => process.env[r.env]) ? cases() : [];
const expected = new Map<string, string>();

for (const { name, env, argv, test: testCmd, summary } of RUNTIMES) {
  const bin = process.env[env];
  const rt: Runtime = { name, argv: (script) => argv(bin as string, script) };
  describe(`${name} gives Node's bits`, {
    skip: bin ? undefined : `${env} is unset (the path of a ${name} executable)`,
  }, () => {
    let variant = '';
    test(`${name} --version, and the kernel build it picks`, () => {
      const r = spawnSync(bin as string, ['--version'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      variant = exec(rt, SMOKE, ['--variant']).trim();
      assert.match(variant, /^(relaxed|relaxed-unfused|strict)$/);
      process.stdout.write(`# ${name}: ${r.stdout.split('\n')[0]}: ${variant} SIMD kernels\n`);
    });
    for (const c of CASES) {
      test(c.name, { skip: c.skip }, () => {
        assert.ok(variant, 'the runtime did not start');
        let want = expected.get(`${variant} ${c.name}`);
        if (want === undefined) {
          want = c.run(node(variant));
          expected.set(`${variant} ${c.name}`, want);
        }
        const got = c.run(rt);
        assert.ok(want.length > 100, `Node's output is too short to compare: ${want}`);
        if (got !== want) assert.fail(`${name} differs from node: ${firstDifference(want, got)}`);
      });
    }
    if (name === 'deno')
      test("deno's navigator.gpu: `llama-ts run --device webgpu -ngl 99` gives Node's WebGPU tokens, top-10 logits within 0.02", (t) => {
        const stories = sharedPath('models/stories260K.gguf');
        if (!stories) return t.skip(missingShared('models/stories260K.gguf'));
        const listed = JSON.parse(exec(rt, CLI, ['devices', '--json'])) as { name: string; description: string }[];
        const gpu = listed.find((d) => d.name === 'WebGPU0');
        if (!gpu) return t.skip('deno finds no WebGPU adapter (for SwiftShader set VK_ICD_FILENAMES to its ICD)');
        process.stdout.write(`# deno's WebGPU adapter: ${gpu.description}\n`);
        const run = (r: Runtime, device: string) =>
          JSON.parse(
            exec(
              r,
              CLI,
              ['run', '-m', stories, '-p', 'Once upon a time', '-n', '16', '--temp', '0', '-t', '2'].concat([
                '--device',
                device,
                '-ngl',
                '99',
                '--json',
                '--top-logits',
                '10',
              ]),
            ),
          ) as { generated_tokens: number[]; top_logits: [number, number][] };
        const here = run(rt, 'webgpu');
        // Node's WebGPU (Dawn) where the optional package finds an adapter, else its CPU
        const nodeDevices = JSON.parse(exec(node('relaxed'), CLI, ['devices', '--json'])) as { name: string }[];
        const want = run(node('relaxed'), nodeDevices.some((d) => d.name === 'WebGPU0') ? 'webgpu' : 'CPU');
        assert.equal(here.generated_tokens.length, 16);
        assert.deepEqual(here.generated_tokens, want.generated_tokens);
        const top = (l: [number, number][]) => l.map(([id, v]) => [id, v - l[0]![1]] as const);
        for (const [i, [id, v]] of top(want.top_logits).entries()) {
          const got = top(here.top_logits).find(([j]) => j === id);
          assert.ok(got && Math.abs(got[1] - v) <= 0.02, `top-10 candidate ${i} (token ${id}): ${got?.[1]} vs ${v}`);
        }
      });
    test(`${name} test: ${SUITE.length} files of the library's suite pass`, () => {
      const files = SUITE.map((f) => join(REPO_ROOT, 'dist', 'test', `${f}.test.js`));
      const [cmd, ...args] = testCmd(bin as string, files);
      const t0 = performance.now();
      const r = spawnSync(cmd as string, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000 });
      const out = `${r.stdout}\n${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
      const sum = summary(out);
      process.stdout.write(
        `# ${name} test: ${sum ? `${sum.passed} passed, ${sum.failed} failed` : 'no summary'} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
      );
      assert.ok(sum, `no test summary from ${name}:\n${out.slice(-3000)}`);
      assert.equal(sum.failed, 0, out.slice(-6000));
      assert.equal(r.status, 0, out.slice(-3000));
      assert.ok(sum.passed >= SUITE.length * 4, `${name} ran only ${sum.passed} tests:\n${out.slice(-3000)}`);
    });
  });
}
