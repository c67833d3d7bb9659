// The command line on each recurrent / hybrid architecture (the generator's tiny qwen35,
// lfm2, granitehybrid and nemotron_h in Q8_0, and their mixtures of experts qwen35moe,
// lfm2moe, granitehybrid with experts and nemotron_h_moe, so no ../shared is needed):
// `inspect` shows the architecture, its recurrent (and expert) hyper-parameters and the
// convolution kernels (and routers) left F32 as llama-quantize leaves them; `run` gives the same tokens at 1, 2 and 3 threads; `chat`
// answers through the architecture's own chat template (test/refs/chat-recurrent/); and
// `serve` answers a completion with `run`'s text and a chat completion with a message.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { REPO_ROOT } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const PROMPT = 'Once upon a time there was';

interface Case {
  preset: string;
  arch: string;
  /** Hyper-parameters `inspect --json` must show. */
  hparams: Record<string, unknown>;
  /** Layer-0 (or -1) tensors kept F32: the recurrent layer's convolution kernel, a router. */
  conv: string;
  router?: string;
  template: string;
}

const CASES: Case[] = [
  {
    preset: 'tiny-qwen35',
    arch: 'qwen35',
    hparams: { 'ssm.conv_kernel': 4, 'ssm.group_count': 2, full_attention_interval: 4 },
    conv: 'blk.0.ssm_conv1d.weight',
    template: 'qwen35.jinja',
  },
  {
    preset: 'tiny-lfm2',
    arch: 'lfm2',
    hparams: { 'shortconv.l_cache': 3, 'attention.head_count_kv': [0, 0, 2, 0] },
    conv: 'blk.0.shortconv.conv.weight',
    template: 'lfm2.jinja',
  },
  {
    preset: 'tiny-granitehybrid',
    arch: 'granitehybrid',
    hparams: { 'ssm.group_count': 1, embedding_scale: 4, residual_scale: 0.5, logit_scale: 2 },
    conv: 'blk.0.ssm_conv1d.weight',
    template: 'granite4.jinja',
  },
  {
    preset: 'tiny-nemotron-h',
    arch: 'nemotron_h',
    hparams: { 'ssm.group_count': 2, feed_forward_length: [0, 128, 0, 128, 0, 128] },
    conv: 'blk.0.ssm_conv1d.weight',
    template: 'nemotron-nano-v2.jinja',
  },
  {
    preset: 'tiny-qwen35moe',
    arch: 'qwen35moe',
    hparams: {
      full_attention_interval: 4,
      expert_count: 8,
      expert_used_count: 2,
      expert_shared_feed_forward_length: 64,
    },
    conv: 'blk.0.ssm_conv1d.weight',
    router: 'blk.0.ffn_gate_inp.weight',
    template: 'qwen35.jinja',
  },
  {
    preset: 'tiny-lfm2moe',
    arch: 'lfm2moe',
    hparams: { 'shortconv.l_cache': 3, expert_count: 8, leading_dense_block_count: 1, expert_gating_func: 2 },
    conv: 'blk.0.shortconv.conv.weight',
    router: 'blk.1.ffn_gate_inp.weight',
    template: 'lfm2.jinja',
  },
  {
    preset: 'tiny-granitehybrid-moe',
    arch: 'granitehybrid',
    hparams: { expert_count: 8, expert_used_count: 2, expert_shared_feed_forward_length: 64, logit_scale: 2 },
    conv: 'blk.0.ssm_conv1d.weight',
    router: 'blk.0.ffn_gate_inp.weight',
    template: 'granite4.jinja',
  },
  {
    preset: 'tiny-nemotron-h-moe',
    arch: 'nemotron_h_moe',
    hparams: { expert_count: 8, expert_weights_scale: 2.5, feed_forward_length: [0, 128, 0, 128, 0, 128] },
    conv: 'blk.0.ssm_conv1d.weight',
    router: 'blk.1.ffn_gate_inp.weight',
    template: 'nemotron-nano-v2.jinja',
  },
];

function cli(args: string[], input = '') {
  const r = spawnSync(process.execPath, [BIN, ...args], { input, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `llama-ts serve` on a free port; resolves with its URL once the model is loaded and a stop function (SIGTERM, exit 0). */
async function serve(args: string[]): Promise<{ url: string; stop: () => Promise<number | null> }> {
  const p = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    p.stderr.on('data', (d) => {
      err += d;
      const m = /ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    p.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  const stop = () =>
    new Promise<number | null>((resolve) => {
      p.on('exit', (c) => resolve(c));
      p.kill('SIGTERM');
    });
  return { url, stop };
}

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()) as Record<string, unknown>;
}

for (const c of CASES) {
  test(`${c.preset} (${c.arch}): inspect, run at 1/2/3 threads, chat with its template, serve`, {
    timeout: 300_000,
  }, async () => {
    const model = ensureModel(c.preset, 'Q8_0');
    const template = readFileSync(join(REPO_ROOT, 'test/refs/chat-recurrent', c.template), 'utf8');

    const ins = cli(['inspect', model, '--json']);
    assert.equal(ins.code, 0, ins.stderr);
    const info = JSON.parse(ins.stdout);
    assert.equal(info.architecture, c.arch);
    for (const [k, v] of Object.entries(c.hparams)) assert.deepEqual(info.hparams[k], v, `${c.arch}: ${k}`);
    const types = new Map<string, string>(info.tensors.map((t: { name: string; type: string }) => [t.name, t.type]));
    assert.equal(types.get(c.conv), 'F32', `${c.conv} stays F32`);
    if (c.router) assert.equal(types.get(c.router), 'F32', `${c.router} stays F32`);
    assert.equal(types.get('blk.0.ffn_norm.weight') ?? 'F32', 'F32');
    assert.ok([...types.values()].includes('Q8_0'), 'the weight matrices are Q8_0');

    const runs = [1, 2, 3].map((t) => {
      const r = cli(['run', '-m', model, '-p', PROMPT, '-n', '10', '--temp', '0', '-t', String(t), '--json']);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as { generated_tokens: number[]; text: string };
    });
    assert.equal(runs[0].generated_tokens.length, 10);
    assert.deepEqual(runs[1].generated_tokens, runs[0].generated_tokens, '2 threads vs 1');
    assert.deepEqual(runs[2].generated_tokens, runs[0].generated_tokens, '3 threads vs 1');

    // greedy: the same message after /reset gets the same reply
    const chat = cli(
      ['chat', '-m', model, '-n', '8', '--temp', '0', '-t', '3', '--chat-template', template],
      'Hi\n/reset\nHi\n/exit\n',
    );
    assert.equal(chat.code, 0, chat.stderr);
    const half = chat.stdout.length / 2;
    assert.ok(half >= 1 && chat.stdout.slice(0, half) === chat.stdout.slice(half), JSON.stringify(chat.stdout));

    const srv = await serve(['-m', model, '-t', '2', '-c', '256', '-np', '1', '--chat-template', template]);
    try {
      const done = await post(`${srv.url}/v1/completions`, { prompt: PROMPT, max_tokens: 10, temperature: 0 });
      const choice = (done.choices as { text: string }[])[0];
      assert.equal(choice.text, runs[0].text, 'serve gives run\u2019s text');
      const reply = await post(`${srv.url}/v1/chat/completions`, {
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 8,
        temperature: 0,
      });
      const msg = (reply.choices as { message: { content: string; reasoning_content?: string } }[])[0].message;
      assert.ok(msg.content.length + (msg.reasoning_content ?? '').length > 0, JSON.stringify(msg));
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
}
