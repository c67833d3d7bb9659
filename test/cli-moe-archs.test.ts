// The command line on every mixture-of-experts architecture, as child processes: `inspect`
// names the architecture, `run --json` tokenizes every reference prompt as llama.cpp did
// and decodes llama.cpp's greedy tokens, parting from them only at a near-tie, `chat`
// answers a message through the model's template or the built-in fallback and leaves on
// /exit, `serve` answers a chat completion. The files are the shared fixtures
// ../shared/fixtures/archs/*-Q8_0.gguf (qwen3moe, Mixtral-style llama, gpt-oss, deepseek2)
// and the generated qwen2moe and Gemma 4 with experts of test/refs/moe and
// test/refs/gemma4-moe (regenerated from their recorded specs, checked by SHA-256).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { generateModel, type ModelSpec } from '../src/generator/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { readVocab, Vocab } from '../src/vocab/index.js';
import type { RefCase } from './helpers/arch-refs.js';
import { BIN, startServe } from './helpers/serve-child.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-cli-moe-archs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Subject {
  /** The architecture `inspect` must name (general.architecture). */
  arch: string;
  label: string;
  skip: string | false;
  /** The model's path (generated on first use) and its reference cases. */
  load: () => { file: string; cases: RefCase[] };
}

function shared(stem: string, arch: string): Subject {
  const rel = `fixtures/archs/${stem}-Q8_0`;
  return {
    arch,
    label: `${stem} Q8_0`,
    skip: sharedPath(`${rel}.gguf`) ? false : missingShared(`${rel}.gguf`),
    load: () => ({
      file: sharedPath(`${rel}.gguf`)!,
      cases: (JSON.parse(readFileSync(sharedPath(`${rel}.ref.json`)!, 'utf8')) as { cases: RefCase[] }).cases,
    }),
  };
}

function generated(refDir: string, name: string, arch: string): Subject {
  let made: { file: string; cases: RefCase[] } | undefined;
  return {
    arch,
    label: `${name} (generated, test/refs/${refDir})`,
    skip: false,
    load: () => {
      if (made) return made;
      const ref = JSON.parse(readFileSync(join(REPO_ROOT, 'test/refs', refDir, `${name}.ref.json`), 'utf8')) as {
        spec: ModelSpec;
        sha256: string;
        cases: RefCase[];
      };
      const file = join(dir, `${name}.gguf`);
      generateModel(ref.spec, file);
      const sha = createHash('sha256').update(readFileSync(file)).digest('hex');
      assert.equal(sha, ref.sha256, `${name}: the generator's output changed`);
      made = { file, cases: ref.cases };
      return made;
    },
  };
}

/** The BOS's text where llama.cpp's tokens start with a BOS that the vocabulary does not add. */
function bosText(file: string, tokens: readonly number[]): string {
  const f = openGGUF(file);
  try {
    const vocab = new Vocab(readVocab(f));
    return !vocab.addBos && tokens[0] === vocab.bos ? vocab.tokenText(vocab.bos) : '';
  } finally {
    f.close();
  }
}

const SUBJECTS: Subject[] = [
  shared('qwen3moe', 'qwen3moe'),
  shared('llama-moe', 'llama'),
  shared('gpt-oss', 'gpt-oss'),
  shared('deepseek2', 'deepseek2'),
  generated('moe', 'qwen2moe-Q8_0', 'qwen2moe'),
  generated('gemma4-moe', 'gemma4-moe-Q8_0', 'gemma4'),
];

for (const s of SUBJECTS) {
  describe(`${s.label}: the command line`, { skip: s.skip }, () => {
    test('inspect names the architecture', () => {
      const r = cli(['inspect', s.load().file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^architecture: +${s.arch}$`, 'm'));
    });

    test("run: llama.cpp's prompt tokens, and its greedy tokens until a near-tie", () => {
      // Random tiny models have many close calls (gaps under 2 × 0.1, Q8_0's tolerance): each
      // case decodes all of llama.cpp's greedy steps and may part from them only at a near-tie.
      const { file, cases } = s.load();
      let clear = 0;
      for (const c of cases) {
        const n = c.greedy.length;
        // ref.mjs puts a BOS in front even where the vocabulary adds none: so does the prompt
        // here, as text (`run` parses special tokens, as llama-cli does)
        const prompt = bosText(file, c.tokens) + c.prompt;
        const r = cli(['run', '-m', file, '-p', prompt, '-n', String(n), '--temp', '0', '--json', '-t', '2']);
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout) as { prompt_tokens: number[]; generated_tokens: number[] };
        assert.deepEqual(out.prompt_tokens, c.tokens, `${s.label} '${c.prompt}': prompt tokens`);
        assert.equal(out.generated_tokens.length, n, `${s.label} '${c.prompt}': generated tokens`);
        let d = out.generated_tokens.findIndex((t, i) => t !== c.greedy[i]);
        if (d >= 0) {
          assert.ok(
            c.greedy_gap[d]! <= 0.2,
            `${s.label} '${c.prompt}': step ${d} gave ${out.generated_tokens[d]}, llama.cpp ${c.greedy[d]} (gap ${c.greedy_gap[d]})`,
          );
        } else d = n;
        clear += c.greedy_gap.slice(0, d).filter((g) => g > 0.2).length;
      }
      assert.ok(clear >= 8, `${s.label}: only ${clear} clear greedy steps compared`);
    });

    test('chat: a message in, a reply out, /exit leaves', () => {
      const r = cli(['chat', '-m', s.load().file, '-n', '4', '--temp', '0', '-c', '256'], 'Hello there\n/exit\n');
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.length > 0, `${s.label}: chat printed nothing`);
    });

    test('serve: a chat completion', { timeout: 120_000 }, async () => {
      const { url, process: p } = await startServe(['-m', s.load().file, '-c', '256', '-np', '1']);
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
