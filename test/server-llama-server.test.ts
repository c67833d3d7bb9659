// Where `serve` now answers as llama-server does (its sources, tools/server/*.cpp, and its own
// test suite, tools/server/tests, run through bench/llama-server-suite): media parts without a
// projector, trailing assistant messages, system_fingerprint's shape, the first and last chunks
// of a chat stream, /completion's streamed token ids, Anthropic's message_start usage and
// thinking blocks in the history, and a context larger than the model was trained with.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { LlamaServer } from '../src/server/index.js';
import { tinyLlama } from './helpers/models.js';

// a template that, as Qwen3's, looks inside an assistant's content and renders its reasoning
const TEMPLATE = `{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
<|assistant|>{% if '</think>' in m.content %}[split]{% endif %}{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}{% if m.tool_calls %}{% for t in m.tool_calls %}<call>{{ t.function.name }}</call>{% endfor %}{% endif %}
{%- else -%}
<|{{ m.role }}|>{{ m.content }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}`;

// biome-ignore lint/suspicious/noExplicitAny: bodies are read by shape
type Json = any;

async function post(url: string, body: unknown): Promise<{ status: number; json: Json }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** The `data:` payloads of an SSE answer (up to [DONE]). */
async function events(url: string, body: unknown): Promise<Json[]> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200);
  const out: Json[] = [];
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    out.push(JSON.parse(line.slice(6)));
  }
  return out;
}

const USER = [{ role: 'user', content: 'Once upon a time' }];

describe('serve as llama-server answers', () => {
  let server: LlamaServer;
  before(async () => {
    server = await LlamaServer.start({ model: tinyLlama(), port: 0, parallel: 2, nCtx: 512, chatTemplate: TEMPLATE });
  });
  after(async () => {
    await server?.close();
  });

  // llama-server's words; its status is a 500 (a runtime_error), which makes OpenAI's clients retry a
  // request that cannot succeed: a 400 here (media.ts)
  test('image and audio parts are refused (no projector), never read or fetched', async () => {
    for (const url of ['file:///etc/passwd', 'malformed', 'http://127.0.0.1:9/404.png', 'data:image/png;base64,AAAA']) {
      const messages = [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this' },
            { type: 'image_url', image_url: { url } },
          ],
        },
      ];
      for (const path of ['/v1/chat/completions', '/apply-template']) {
        const r = await post(`${server.url}${path}`, { messages, max_tokens: 1 });
        assert.equal(r.status, 400, `${path} ${url}`);
        assert.match(r.json.error.message, /^image input is not supported/);
      }
    }
    const audio = [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }];
    const r = await post(`${server.url}/v1/chat/completions`, { messages: audio, max_tokens: 1 });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /^audio input is not supported/);
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    const a = await post(`${server.url}/v1/messages`, {
      model: 'm',
      max_tokens: 1,
      messages: [{ role: 'user', content: [image, { type: 'text', text: 'What is this?' }] }],
    });
    assert.equal(a.status, 400);
    assert.match(a.json.error.message, /^image input is not supported/);
  });

  test('two assistant messages at the end are refused; one is a reply to continue', async () => {
    const one = [...USER, { role: 'assistant', content: 'there was' }];
    assert.equal((await post(`${server.url}/v1/chat/completions`, { messages: one, max_tokens: 2 })).status, 200);
    const two = [...one, { role: 'assistant', content: 'a cat' }];
    const r = await post(`${server.url}/v1/chat/completions`, { messages: two, max_tokens: 2 });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /Cannot have 2 or more assistant messages at the end of the list/);
  });

  test("a last assistant message is continued (llama-server's prefill): the generation prompt, then its text", async () => {
    const history = [{ role: 'system', content: 'Book' }, ...USER];
    const open = await post(`${server.url}/apply-template`, { messages: history });
    for (const prefill of [
      'Whill',
      [
        { type: 'text', text: 'Wh' },
        { type: 'text', text: 'ill' },
      ],
    ]) {
      const messages = [...history, { role: 'assistant', content: prefill }];
      const t = await post(`${server.url}/apply-template`, { messages });
      assert.equal(t.json.prompt, `${open.json.prompt}Whill`);
      const chat = await post(`${server.url}/v1/chat/completions`, { messages, max_tokens: 1 });
      const tok = await post(`${server.url}/tokenize`, {
        content: t.json.prompt,
        add_special: true,
        parse_special: true,
      });
      assert.equal(chat.json.usage.prompt_tokens, tok.json.tokens.length);
    }
    // the library alone renders it as a whole turn (llama.node's), unless asked
    const ctx = server.ctx;
    const whole = await ctx.completion({
      messages: [...history, { role: 'assistant', content: 'Whill' }],
      n_predict: 1,
    });
    const cont = await ctx.completion({
      messages: [...history, { role: 'assistant', content: 'Whill' }],
      n_predict: 1,
      prefill_assistant: true,
    });
    const tok = await post(`${server.url}/tokenize`, {
      content: `${open.json.prompt}Whill`,
      add_special: true,
      parse_special: true,
    });
    assert.equal(cont.tokens_evaluated, tok.json.tokens.length);
    assert.ok(whole.tokens_evaluated > cont.tokens_evaluated, `${whole.tokens_evaluated} > ${cont.tokens_evaluated}`);
  });

  test("system_fingerprint has llama-server's b<build>-<commit> shape", async () => {
    const r = await post(`${server.url}/v1/chat/completions`, { messages: USER, max_tokens: 2 });
    assert.match(r.json.system_fingerprint, /^b\d+\.\d+\.\d+-([0-9a-f]{7,}|unknown)$/);
    const chunks = await events(`${server.url}/v1/chat/completions`, { messages: USER, max_tokens: 2, stream: true });
    for (const c of chunks) assert.equal(c.system_fingerprint, r.json.system_fingerprint);
  });

  test("a chat stream opens with content null and ends with the timings (the usage chunk's, when asked)", async () => {
    const body = { messages: USER, max_tokens: 4, stream: true };
    const plain = await events(`${server.url}/v1/chat/completions`, body);
    assert.deepEqual(plain[0].choices[0].delta, { role: 'assistant', content: null });
    const last = plain[plain.length - 1];
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.equal(last.timings.predicted_n, 4);
    const usage = await events(`${server.url}/v1/chat/completions`, {
      ...body,
      stream_options: { include_usage: true },
    });
    const u = usage[usage.length - 1];
    assert.deepEqual(u.choices, []);
    assert.equal(u.usage.completion_tokens, 4);
    assert.equal(u.timings.predicted_n, 4);
    assert.equal(usage[usage.length - 2].timings, undefined, 'the timings are on the last chunk only');
  });

  test("/completion's stream chunks carry their token ids, the non-streamed answer's", async () => {
    const body = { prompt: 'Once upon a time', n_predict: 8, temperature: 0, ignore_eos: true };
    const whole = await post(`${server.url}/completion`, { ...body, return_tokens: true });
    const chunks = await events(`${server.url}/completion`, { ...body, stream: true });
    const partial = chunks.filter((c) => c.stop === false);
    for (const c of partial) assert.ok(c.tokens.length >= 1 && c.tokens.every(Number.isInteger), JSON.stringify(c));
    assert.deepEqual(
      partial.flatMap((c) => c.tokens),
      whole.json.tokens,
    );
    assert.equal(partial.map((c) => c.content).join(''), whole.json.content);
  });

  test('Anthropic: an empty message list is accepted (llama-server is permissive)', async () => {
    const r = await post(`${server.url}/v1/messages`, { model: 'm', max_tokens: 2, messages: [] });
    assert.equal(r.status, 200);
    assert.equal(r.json.type, 'message');
  });

  test("Anthropic: message_start reports the prompt's tokens; thinking blocks in the history reach the template", async () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    const count = await post(`${server.url}/v1/messages/count_tokens`, { model: 'm', messages });
    assert.ok(count.json.input_tokens > 0);
    const stream = await events(`${server.url}/v1/messages`, { model: 'm', messages, max_tokens: 2, stream: true });
    const start = stream.find((e) => e.type === 'message_start');
    assert.equal(start.message.usage.input_tokens, count.json.input_tokens);

    const tool = { name: 'list_files', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };
    const history = (thinking: boolean) => [
      { role: 'user', content: 'Fix the bug' },
      {
        role: 'assistant',
        content: [
          ...(thinking ? [{ type: 'thinking', thinking: 'look at the files first' }] : []),
          { type: 'tool_use', id: 'call_1', name: 'list_files', input: { path: '.' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'main.py' }] },
    ];
    const without = await post(`${server.url}/v1/messages/count_tokens`, {
      model: 'm',
      messages: history(false),
      tools: [tool],
    });
    const withThinking = await post(`${server.url}/v1/messages/count_tokens`, {
      model: 'm',
      messages: history(true),
      tools: [tool],
    });
    assert.equal(without.status, 200);
    assert.ok(
      withThinking.json.input_tokens > without.json.input_tokens,
      `${withThinking.json.input_tokens} > ${without.json.input_tokens}`,
    );
  });
});

test('a context larger than the model was trained with: a warning, and slots of the training context', async () => {
  const model = ensureModel('tiny-llama', 'Q8_0', undefined, { shape: { nCtxTrain: 256 } });
  const server = await LlamaServer.start({ model, port: 0, parallel: 1, nCtx: 1024 });
  try {
    const props = (await (await fetch(`${server.url}/props`)).json()) as Json;
    assert.equal(props.default_generation_settings.n_ctx, 256);
    const r = await post(`${server.url}/completion`, { prompt: 'Once', n_predict: 2 });
    assert.equal(r.status, 200);
  } finally {
    await server.close();
  }
});
