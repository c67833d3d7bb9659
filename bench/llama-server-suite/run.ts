// Runs llama.cpp's server test suite (tools/server/tests of a llama.cpp checkout, outside this
// repository) against `llama-ts serve` and prints pass / fail / skip counts per file.
//
//   npm run suite:llama-server -- --suite DIR [--json FILE] [--log FILE] [--timeout S] [FILE|NODEID ...]
//
// DIR is llama.cpp's tools/server/tests (or LLAMA_SUITE_DIR); FILEs are relative to it
// (e.g. unit/test_basic.py; all of unit/ by default). The suite runs from its own
// folder (its tests read ../../../models/templates), with llama-server replaced by ./llama-server
// (shim.ts), the preset downloads off and unavailable models skipped (llama_ts_suite.py), slow
// tests deselected (-m "not slow"), on a free port. Python: LLAMA_SUITE_PYTHON, else
// /usr/bin/python3 (pytest, requests, aiohttp, pytest-timeout, numpy, jsonschema, wget, openai).
import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = dirname(fileURLToPath(import.meta.url));
const SRC = resolve(HERE, '..', '..', '..', 'bench', 'llama-server-suite');

export interface FileCounts {
  passed: number;
  failed: number;
  skipped: number;
  /** failed test ids with the first line of their message */
  failures: string[];
}

/** Per-file counts from pytest's JUnit XML (one <testcase> per test; failure, error or skipped inside). */
export function countJUnit(xml: string): Map<string, FileCounts> {
  const files = new Map<string, FileCounts>();
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const attrs = m[1]!;
    const body = m[3] ?? '';
    const cls = /classname="([^"]*)"/.exec(attrs)?.[1] ?? '?';
    const name = /\bname="([^"]*)"/.exec(attrs)?.[1] ?? '?';
    const file = `${cls.replace(/\./g, '/')}.py`;
    let c = files.get(file);
    if (!c) {
      c = { passed: 0, failed: 0, skipped: 0, failures: [] };
      files.set(file, c);
    }
    if (/<(failure|error)\b/.test(body)) {
      c.failed++;
      const msg = /<(?:failure|error)\b[^>]*message="([^"]*)"/.exec(body)?.[1] ?? '';
      c.failures.push(`${name}: ${xmlUnescape(msg).split('\n')[0]!.slice(0, 160)}`);
    } else if (/<skipped\b/.test(body)) c.skipped++;
    else c.passed++;
  }
  return files;
}

function xmlUnescape(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#10;/g, '\n')
    .replace(/&amp;/g, '&');
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

async function main(): Promise<number> {
  const { values: o, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      suite: { type: 'string', default: process.env.LLAMA_SUITE_DIR },
      json: { type: 'string' },
      log: { type: 'string', default: join(tmpdir(), 'llama-server-suite.log') },
      timeout: { type: 'string', default: '180' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (o.help) {
    process.stdout.write(
      readFileSync(fileURLToPath(import.meta.url), 'utf8')
        .split('\nimport')[0]!
        .replace(/^\/\/ ?/gm, ''),
    );
    return 0;
  }
  if (o.suite === undefined) {
    process.stderr.write("suite: --suite DIR (or LLAMA_SUITE_DIR): llama.cpp's tools/server/tests\n");
    return 2;
  }
  const suite = resolve(o.suite);
  if (!existsSync(join(suite, 'utils.py'))) {
    process.stderr.write(`suite: no utils.py in ${suite} (--suite DIR: llama.cpp's tools/server/tests)\n`);
    return 2;
  }
  const python = process.env.LLAMA_SUITE_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
  const xml = join(tmpdir(), `llama-server-suite-${process.pid}.xml`);
  const port = await freePort();
  const args = [
    '-m',
    'pytest',
    '-p',
    'llama_ts_suite',
    '-p',
    'no:cacheprovider',
    '-m',
    'not slow',
    `--timeout=${o.timeout}`,
    `--junitxml=${xml}`,
    '-o',
    'junit_family=xunit1',
    ...(positionals.length > 0 ? positionals : ['unit']),
  ];
  const log = openSync(o.log!, 'w');
  process.stderr.write(`suite: ${python} ${args.join(' ')} (in ${suite}, port ${port}; log: ${o.log})\n`);
  const code = await new Promise<number>((res) => {
    const p = spawn(python, args, {
      cwd: suite,
      stdio: ['ignore', log, log],
      env: {
        ...process.env,
        PYTHONPATH: [SRC, process.env.PYTHONPATH].filter(Boolean).join(':'),
        LLAMA_SERVER_BIN_PATH: join(SRC, 'llama-server'),
        PORT: String(port),
      },
    });
    p.on('close', (c) => res(c ?? 1));
  });
  if (!existsSync(xml)) {
    process.stderr.write(`suite: pytest wrote no report (exit ${code}); see ${o.log}\n`);
    return 1;
  }
  const files = countJUnit(readFileSync(xml, 'utf8'));
  const rows = [...files.entries()].sort(([a], [b]) => a.localeCompare(b));
  const total = { passed: 0, failed: 0, skipped: 0 };
  process.stdout.write(`${'file'.padEnd(36)} ${'pass'.padStart(5)} ${'fail'.padStart(5)} ${'skip'.padStart(5)}\n`);
  for (const [f, c] of rows) {
    total.passed += c.passed;
    total.failed += c.failed;
    total.skipped += c.skipped;
    process.stdout.write(
      `${f.padEnd(36)} ${String(c.passed).padStart(5)} ${String(c.failed).padStart(5)} ${String(c.skipped).padStart(5)}\n`,
    );
  }
  process.stdout.write(
    `${'total'.padEnd(36)} ${String(total.passed).padStart(5)} ${String(total.failed).padStart(5)} ${String(total.skipped).padStart(5)}\n`,
  );
  for (const [f, c] of rows) for (const x of c.failures) process.stdout.write(`FAIL ${f}::${x}\n`);
  if (o.json) {
    writeFileSync(o.json, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`);
  }
  return total.failed > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (c) => process.exit(c),
    (e) => {
      process.stderr.write(`suite: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exit(1);
    },
  );
}
