// The command line on every mixture-of-experts architecture (generated tiny models):
// `inspect` shows the expert hyper-parameters and stacks, `run` decodes greedily with the
// same tokens at 1 and 3 threads, `chat` answers a message, `serve` answers a chat
// completion. Their logits against llama.cpp are model-moe.test.ts's concern.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { generateModel, type ModelSpec, presetSpec } from '../src/generator/index.js';
import { BIN, startServe } from './helpers/serve-child.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-cli-moe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[], input = '') {
  const r = spawnSync(process.execPath, [BIN, ...args], { input, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface Case {
  preset: string;
  type: ModelSpec['fileType'];
  arch: string;
  /** inspect lines the file must show (hyper-parameters and an expert stack's type). */
  shows: RegExp[];
}

const CASES: Case[] = [
  {
    preset: 'tiny-qwen3moe',
    type: 'Q8_0',
    arch: 'qwen3moe',
    shows: [/^ {2}expert_count +8$/m, /^ {2}expert_used_count +2$/m, /^ {2}blk\.0\.ffn_gate_exps\.weight +Q8_0 /m],
  },
  {
    preset: 'tiny-qwen2moe',
    type: 'Q8_0',
    arch: 'qwen2moe',
    shows: [/^ {2}expert_shared_feed_forward_length +\d+$/m, /^ {2}blk\.0\.ffn_gate_inp_shexp\.weight /m],
  },
  {
    preset: 'tiny-mixtral',
    type: 'Q4_0',
    arch: 'llama',
    shows: [/^ {2}expert_count +8$/m, /^ {2}blk\.0\.ffn_up_exps\.weight +Q4_0 /m],
  },
  {
    preset: 'tiny-deepseek2',
    // its attn_k_b rows (16) fit no Q8_0 block and llama-quantize has no fallback for Q8_0
    type: 'F16',
    arch: 'deepseek2',
    shows: [/^ {2}attention\.kv_lora_rank +\d+$/m, /^ {2}expert_gating_func +2$/m, /^ {2}blk\.0\.attn_k_b\.weight /m],
  },
  {
    preset: 'tiny-gpt-oss',
    type: 'MXFP4_MOE',
    arch: 'gpt-oss',
    shows: [
      /^file type: {5}MOSTLY_MXFP4_MOE$/m,
      /^ {2}attention\.sliding_window +8$/m,
      /^ {2}blk\.0\.ffn_down_exps\.weight +MXFP4 /m,
      /^ {2}blk\.0\.attn_sinks\.weight +F32 /m,
    ],
  },
];

async function serveOnce(
  model: string,
): Promise<{ status: number; body: { choices: { message: { content: string } }[] } }> {
  const { url, process: p } = await startServe(['-m', model, '-c', '512']);
  try {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 }),
    });
    return { status: r.status, body: (await r.json()) as { choices: { message: { content: string } }[] } };
  } finally {
    const exited = new Promise((res) => p.on('exit', res));
    p.kill('SIGTERM');
    await exited;
  }
}

for (const c of CASES) {
  test(`${c.arch} (${c.preset}, ${c.type}): inspect, run at 1 and 3 threads, chat, serve`, {
    timeout: 300_000,
  }, async () => {
    const model = join(dir, `${c.preset}-${c.type}.gguf`);
    generateModel(presetSpec(c.preset, c.type), model);

    const info = cli(['inspect', model]);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, new RegExp(`^architecture: {2}${c.arch}$`, 'm'));
    for (const re of c.shows) assert.match(info.stdout, re);

    const runs = [1, 3].map((t) =>
      cli(['run', '-m', model, '-p', 'Once upon a time', '-n', '8', '--temp', '0', '-t', `${t}`, '--json']),
    );
    for (const r of runs) assert.equal(r.code, 0, r.stderr);
    const [one, three] = runs.map((r) => JSON.parse(r.stdout) as { generated_tokens: number[]; text: string });
    assert.ok(one.generated_tokens.length > 0);
    assert.deepEqual(three.generated_tokens, one.generated_tokens, 'the same greedy tokens at 1 and 3 threads');

    const chat = cli(['chat', '-m', model, '-n', '6', '--temp', '0'], 'Hi\n/exit\n');
    assert.equal(chat.code, 0, chat.stderr);

    const served = await serveOnce(model);
    assert.equal(served.status, 200, JSON.stringify(served.body));
    assert.equal(typeof served.body.choices[0].message.content, 'string');
  });
}
