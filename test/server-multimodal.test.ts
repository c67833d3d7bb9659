// serve with a projector (--mmproj), end to end on the mtmd fixture pair gemma3 (../shared/fixtures/mtmd):
// an image through llama-server's multimodal_data, OpenAI image_url parts, Anthropic image blocks and
// Responses input_image parts gives llama.cpp's first-token probabilities (gemma3.ref.json, llama.node
// 1.7.15), /props and /v1/models report vision; Ollama's /api/generate images answer as /api/chat's and,
// raw, as multimodal_data; a broken image is a 400, audio to a vision-only projector a 500 (as llama-server).
// A projector file with a vision and an audio encoder (generated pair gemma4-omni): /props reports both,
// and an image and a clip in one multimodal_data prompt give llama.cpp's layout and first token.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultCacheDir } from '../src/generator/index.js';
import { LlamaServer } from '../src/server/index.js';
import { encodeWav, toneSamples } from './helpers/media-encode.js';
import { ensurePair, genPairs, writeMedia } from './helpers/mtmd-gen-pairs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

// biome-ignore lint/suspicious/noExplicitAny: bodies are read by shape
type Json = any;

const dir = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;

async function post(url: string, body: unknown): Promise<{ status: number; json: Json }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

const GREEDY_PROBS = { temperature: 1, top_k: 0, top_p: 1, min_p: 0 };

describe('serve --mmproj (gemma3 fixture pair)', { skip: dir ? false : missingShared('fixtures/mtmd') }, () => {
  let server: LlamaServer;
  let ref: Json;
  const png = (name: string) => readFileSync(`${dir}img/${name}`).toString('base64');
  before(async () => {
    ref = JSON.parse(readFileSync(`${dir}gemma3.ref.json`, 'utf8'));
    server = await LlamaServer.start({
      model: `${dir}gemma3.gguf`,
      mmproj: `${dir}gemma3.mmproj.gguf`,
      port: 0,
      parallel: 1,
      nCtx: 4096,
    });
  });
  after(async () => {
    await server?.close();
  });
  const firstId = (ids: number | number[]) => (Array.isArray(ids) ? ids : [ids]);

  test('/props and /v1/models report vision', async () => {
    const props: Json = await (await fetch(`${server.url}/props`)).json();
    assert.deepEqual(props.modalities, { vision: true, audio: false });
    const models: Json = await (await fetch(`${server.url}/v1/models`)).json();
    assert.deepEqual(models.models[0].capabilities, ['completion', 'multimodal']);
  });

  test("multimodal_data on /completion: llama.cpp's prompt length and first-token probabilities", async () => {
    const c = ref.cases.find((x: Json) => x.name === 'mid');
    const r = await post(`${server.url}/completion`, {
      prompt: { prompt_string: c.prompt, multimodal_data: [png(c.images[0])] },
      n_predict: 1,
      n_probs: 10,
      ...GREEDY_PROBS,
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.tokens_evaluated, c.n_tokens);
    const top = r.json.completion_probabilities[0].top_logprobs;
    for (let k = 0; k < 3; k++) assert.ok(firstId(c.top10_ids[k]).includes(top[k].id), `rank ${k}`);
    assert.ok(Math.abs(Math.exp(top[0].logprob) - c.top10[0][1]) < 0.01);
  });

  test("OpenAI image_url (data URL): the chat case's first-token probabilities", async () => {
    const c = ref.cases.find((x: Json) => x.name === 'chat');
    const messages = structuredClone(c.messages);
    messages[0].content[1].image_url.url = `data:image/png;base64,${png(c.images[0])}`;
    const r = await post(`${server.url}/v1/chat/completions`, {
      messages,
      max_tokens: 1,
      logprobs: true,
      top_logprobs: 3,
      ...GREEDY_PROBS,
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const top = r.json.choices[0].logprobs.content[0].top_logprobs;
    for (let k = 0; k < 3; k++) assert.ok(firstId(c.top10_ids[k]).includes(top[k].id), `rank ${k}`);
    for (let k = 0; k < 3; k++) assert.ok(Math.abs(Math.exp(top[k].logprob) - c.top10[k][1]) < 0.01, `rank ${k}`);
  });

  test('Anthropic image blocks and Responses input_image parts are taken', async () => {
    const ask = async (image: string) => {
      const a = await post(`${server.url}/v1/messages`, {
        model: 'm',
        max_tokens: 4,
        temperature: 0,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in the picture ' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(image) } },
              { type: 'text', text: ' today?' },
            ],
          },
        ],
      });
      assert.equal(a.status, 200, JSON.stringify(a.json));
      assert.equal(a.json.content[0].type, 'text');
    };
    await ask('gray-40x40.png');
    await ask('grad-64x48.png');
    const r = await post(`${server.url}/v1/responses`, {
      max_output_tokens: 2,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look: ' },
            { type: 'input_image', image_url: `data:image/png;base64,${png('checker-37x53.png')}` },
          ],
        },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  });

  test("Ollama's /api/generate images: as /api/chat's; raw, at the prompt's <__media__> marker as /completion's multimodal_data", async () => {
    const img = png('gray-40x40.png');
    const greedy = { temperature: 0, num_predict: 4 };
    const gen = await post(`${server.url}/api/generate`, {
      model: server.modelId,
      prompt: 'What is in the picture?',
      images: [img],
      stream: false,
      options: greedy,
    });
    assert.equal(gen.status, 200, JSON.stringify(gen.json));
    const chat = await post(`${server.url}/api/chat`, {
      model: server.modelId,
      messages: [{ role: 'user', content: 'What is in the picture?', images: [img] }],
      stream: false,
      options: greedy,
    });
    assert.equal(chat.status, 200, JSON.stringify(chat.json));
    assert.equal(gen.json.response, chat.json.message.content);
    assert.equal(gen.json.prompt_eval_count, chat.json.prompt_eval_count);
    // without the image: another prompt length (the image's 16 positions and its markers)
    const plain = await post(`${server.url}/api/generate`, {
      model: server.modelId,
      prompt: 'What is in the picture?',
      stream: false,
      options: greedy,
    });
    assert.ok(gen.json.prompt_eval_count > plain.json.prompt_eval_count + 16);
    const c = ref.cases.find((x: Json) => x.name === 'mid');
    const raw = await post(`${server.url}/api/generate`, {
      model: server.modelId,
      prompt: c.prompt,
      raw: true,
      images: [png(c.images[0])],
      stream: false,
      options: greedy,
    });
    assert.equal(raw.status, 200, JSON.stringify(raw.json));
    const native = await post(`${server.url}/completion`, {
      prompt: { prompt_string: c.prompt, multimodal_data: [png(c.images[0])] },
      n_predict: 4,
      temperature: 0,
    });
    assert.equal(raw.json.response, native.json.content);
    assert.equal(raw.json.prompt_eval_count, c.n_tokens);
    const withContext = await post(`${server.url}/api/generate`, {
      model: server.modelId,
      prompt: 'x',
      images: [img],
      context: [2, 3],
      stream: false,
    });
    assert.equal(withContext.status, 400);
    assert.match(withContext.json.error, /images with context/);
  });

  test('a truncated PNG is a 400; audio for a vision-only projector a 500 (llama-server: its chat parser throws)', async () => {
    const broken = Buffer.from(readFileSync(`${dir}img/grad-64x48.png`).subarray(0, 100)).toString('base64');
    const msg = (part: unknown) => [{ role: 'user', content: [{ type: 'text', text: 'x' }, part] }];
    const r = await post(`${server.url}/v1/chat/completions`, {
      messages: msg({ type: 'image_url', image_url: { url: `data:image/png;base64,${broken}` } }),
      max_tokens: 1,
    });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /PNG: .*truncated/);
    const wav = encodeWav({ sampleRate: 16000, channels: 1, bits: 16, samples: toneSamples(1600, 1, 16000) });
    const a = await post(`${server.url}/v1/chat/completions`, {
      messages: msg({ type: 'input_audio', input_audio: { format: 'wav', data: Buffer.from(wav).toString('base64') } }),
      max_tokens: 1,
    });
    assert.equal(a.status, 500);
    assert.match(a.json.error.message, /^audio input is not supported/);
  });

  test('100 images in one request: each encoded and counted, the server answering meanwhile; over the context a 400 naming the sizes', async () => {
    const names = ['grad-64x48.png', 'checker-37x53.png', 'gray-40x40.png', 'alpha-50x30.png', 'photo-640x480.png'];
    const request = (n: number, pick = names) => ({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare these pictures:' },
            ...Array.from({ length: n }, (_, k) => ({
              type: 'image_url',
              image_url: { url: `data:image/png;base64,${png(pick[k % pick.length]!)}` },
            })),
          ],
        },
      ],
      max_tokens: 1,
      temperature: 0,
    });
    const promptTokens = async (n: number) => {
      const r = await post(`${server.url}/v1/chat/completions`, request(n));
      assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
      return r.json.usage.prompt_tokens as number;
    };
    const one = await promptTokens(1);
    const perImage = (await promptTokens(2)) - one;
    assert.ok(perImage >= 16, `an image adds its embedding rows and wrappers, got ${perImage}`);
    // the health endpoint answers while the 100 are decoded and encoded (that work is in the engine worker)
    const pending = promptTokens(100);
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(await pending, one + 99 * perImage);
    // small pictures only: 250 copies of the 357 KB photo would pass the body limit (a 413) first
    const tooMany = await post(`${server.url}/v1/chat/completions`, request(250, ['gray-40x40.png']));
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.json.error.type, 'exceed_context_size_error');
    assert.equal(tooMany.json.error.n_prompt_tokens, one + 249 * perImage);
  });
});

const VOCAB = sharedPath('models/stories260K.gguf');

describe('serve --mmproj with a vision and an audio encoder (generated pair gemma4-omni)', {
  skip: VOCAB ? false : missingShared('models/stories260K.gguf'),
}, () => {
  let server: LlamaServer;
  let ref: Json;
  let media: string;
  before(async () => {
    const pair = genPairs(VOCAB!).find((p) => p.name === 'gemma4-omni')!;
    const cache = join(defaultCacheDir(), 'mtmd-gen');
    const files = ensurePair(pair, join(cache, 'models'));
    media = join(cache, 'media');
    writeMedia(media);
    ref = JSON.parse(readFileSync(new URL('../../test/refs/mtmd/gemma4-omni.ref.json', import.meta.url), 'utf8'));
    server = await LlamaServer.start({ model: files.model, mmproj: files.mmproj, port: 0, parallel: 1, nCtx: 2048 });
  });
  after(async () => {
    await server?.close();
  });

  test('/props reports vision and audio; an image and a clip in one prompt as llama.cpp lays them out', async () => {
    const props: Json = await (await fetch(`${server.url}/props`)).json();
    assert.deepEqual(props.modalities, { vision: true, audio: true });
    const c = ref.cases.find((x: Json) => x.name === 'mixed');
    const data = c.images.map((f: string) => readFileSync(join(media, f)).toString('base64'));
    const r = await post(`${server.url}/completion`, {
      prompt: { prompt_string: c.prompt, multimodal_data: data },
      n_predict: 1,
      n_probs: 10,
      ...GREEDY_PROBS,
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.tokens_evaluated, c.n_tokens);
    const top = r.json.completion_probabilities[0].top_logprobs;
    assert.ok([c.top10_ids[0]].flat().includes(top[0].id), `top-1 ${top[0].id}, llama.cpp ${c.top10_ids[0]}`);
    assert.ok(Math.abs(Math.exp(top[0].logprob) - c.top10[0][1]) < 0.01);
  });
});
