// The command line on every sliding-window architecture, as child processes: `inspect`
// names the architecture, `run --json` tokenizes the prompt as llama.cpp did and decodes
// llama.cpp's greedy tokens (../shared/fixtures/archs, up to the first near-tie), `chat`
// answers a message through the model's template or the built-in fallback, `serve`
// answers a chat completion, and `embed` on EmbeddingGemma gives llama.cpp's vector
// (test/refs/swa, a generated model).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { generateModel } from '../src/generator/index.js';
import type { RefCase } from './helpers/arch-refs.js';
import { BIN, startServe } from './helpers/serve-child.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';
import { REF_MODELS } from './helpers/swa-ref-models.js';

const ARCHS = ['gemma2', 'gemma3', 'gemma4', 'phi3', 'smollm3'];

function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-cli-swa-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const arch of ARCHS) {
  const rel = `fixtures/archs/${arch}-Q8_0.gguf`;
  const skip = sharedPath(rel) ? false : missingShared(rel);
  describe(`${arch}: the command line`, { skip }, () => {
    const file = () => sharedPath(rel)!;
    const ref = () =>
      JSON.parse(readFileSync(sharedPath(`fixtures/archs/${arch}-Q8_0.ref.json`)!, 'utf8')) as { cases: RefCase[] };

    test('inspect names the architecture', () => {
      const r = cli(['inspect', file()]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`\\b${arch}\\b`));
    });

    test("run: llama.cpp's prompt tokens and greedy tokens up to the first near-tie", () => {
      // the case with the longest run of clear (gap > 2 × 0.1) greedy steps
      const clear = (c: RefCase) => {
        const n = c.greedy_gap.findIndex((g) => g <= 0.2);
        return n < 0 ? c.greedy.length : n;
      };
      const c = ref().cases.reduce((a, b) => (clear(b) > clear(a) ? b : a));
      const steps = clear(c);
      assert.ok(steps >= 2, `${arch}: no reference case has two clear greedy steps`);
      const r = cli(['run', '-m', file(), '-p', c.prompt, '-n', String(steps), '--temp', '0', '--json', '-t', '2']);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { prompt_tokens: number[]; generated_tokens: number[] };
      assert.deepEqual(out.prompt_tokens, c.tokens);
      assert.deepEqual(out.generated_tokens.slice(0, steps), c.greedy.slice(0, steps));
    });

    test('chat: a message in, a reply out, /exit leaves', () => {
      const r = cli(['chat', '-m', file(), '-n', '4', '--temp', '0', '-c', '256'], 'Hello there\n/exit\n');
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.length > 0, `${arch}: chat printed nothing`);
    });

    test('serve: a chat completion', { timeout: 120_000 }, async () => {
      const { url, process: p } = await startServe(['-m', file(), '-c', '256', '-np', '1']);
      try {
        const r = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 }),
        });
        assert.equal(r.status, 200);
        const body = (await r.json()) as {
          choices: { message: { role: string } }[];
          usage: { completion_tokens: number };
        };
        assert.equal(body.choices[0]!.message.role, 'assistant');
        assert.ok(body.usage.completion_tokens >= 1);
      } finally {
        p.kill('SIGTERM');
      }
    });
  });
}

function cosine(v: readonly number[], w: readonly number[]): number {
  assert.equal(v.length, w.length);
  let dot = 0;
  let a = 0;
  let b = 0;
  for (let i = 0; i < v.length; i++) {
    dot += v[i]! * w[i]!;
    a += v[i]! * v[i]!;
    b += w[i]! * w[i]!;
  }
  return dot / Math.sqrt(a * b);
}

const embeddingGemma = () => {
  const m = REF_MODELS.find((r) => r.name === 'tiny-gemma-embedding-F32')!;
  const path = join(dir, 'gemma-embedding.gguf');
  generateModel(m.spec, path);
  const ref = JSON.parse(readFileSync(join(REPO_ROOT, 'test/refs/swa', m.refs[0]!.file), 'utf8')) as {
    cases: { prompt: string; embedding: number[] }[];
  };
  return { path, cases: ref.cases };
};

test("EmbeddingGemma: embed and serve's /v1/embeddings give llama.cpp's vectors", { timeout: 120_000 }, async () => {
  const { path, cases } = embeddingGemma();
  for (const c of cases) {
    const r = cli(['embed', '-m', path, '-p', c.prompt]);
    assert.equal(r.code, 0, r.stderr);
    const cos = cosine(JSON.parse(r.stdout) as number[], c.embedding);
    assert.ok(cos > 0.9999, `embed: cosine ${cos} for "${c.prompt}"`);
  }
  const { url, process: p } = await startServe(['-m', path, '-c', '256']);
  try {
    const r = await fetch(`${url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: cases.map((c) => c.prompt) }),
    });
    assert.equal(r.status, 200);
    const body = (await r.json()) as { data: { index: number; embedding: number[] }[] };
    for (const d of body.data) {
      const cos = cosine(d.embedding, cases[d.index]!.embedding);
      assert.ok(cos > 0.9999, `/v1/embeddings: cosine ${cos} for input ${d.index}`);
    }
    assert.equal(body.data.length, cases.length);
  } finally {
    p.kill('SIGTERM');
  }
});
