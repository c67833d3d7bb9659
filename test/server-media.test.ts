// Media in server requests (src/server/media.ts). Without a projector every kind of media part is
// a 400 in llama-server's words before anything is read or fetched (a local HTTP server counts the
// fetches); the reading rules themselves (file:// refused, malformed base64, remote URLs only when
// allowed and bounded in bytes and time, decoded under the media limits) are checked directly.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ApiError } from '../src/server/http.js';
import { LlamaServer } from '../src/server/index.js';
import { DEFAULT_MEDIA_POLICY, mediaUrlBytes, resolveRequestMedia } from '../src/server/media.js';
import { encodePng, encodeWav, sampleRamp, toneSamples } from './helpers/media-encode.js';
import { tinyLlama } from './helpers/models.js';
import { encodeWebp, sampleRgba } from './helpers/webp-encode.js';

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

const png = encodePng({ width: 4, height: 3, colorType: 2, depth: 8, samples: sampleRamp(36, 8, 1) });
const pngUrl = `data:image/png;base64,${Buffer.from(png).toString('base64')}`;
const wav = encodeWav({ sampleRate: 16000, channels: 1, bits: 16, samples: toneSamples(800, 1, 16000) });

/** A local HTTP server: /png (the image), /big (20 MB), /slow (never answers), else 404; it counts requests. */
let hits = 0;
let media: Server;
let base = '';
before(async () => {
  media = createServer((req, res) => {
    hits++;
    if (req.url === '/png') res.end(png);
    else if (req.url === '/big') res.end(Buffer.alloc(20 * 1024 * 1024));
    else if (req.url === '/slow') res.write(png.subarray(0, 10));
    else {
      res.statusCode = 404;
      res.end('no');
    }
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
});
after(() => {
  media.closeAllConnections();
  media.close();
});

const apiError = (status: number, re: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ApiError, `an ApiError, not ${e}`);
  assert.equal(e.status, status);
  assert.match(e.message, re);
  return true;
};

describe('a text-only model refuses media with a 400 (llama-server words), fetching nothing', () => {
  let server: LlamaServer;
  before(async () => {
    server = await LlamaServer.start({ model: tinyLlama(), port: 0, parallel: 1, nCtx: 256, allowRemoteMedia: true });
  });
  after(async () => {
    await server?.close();
  });
  const imageMsg = (url: string) => [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'what is this' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ];
  const NOT_IMAGE = /^image input is not supported - hint: if this is unexpected, you may need to provide the mmproj/;

  test('OpenAI chat: image_url of every kind, input_audio', async () => {
    hits = 0;
    for (const url of [pngUrl, `${base}/png`, 'file:///etc/passwd', 'malformed']) {
      const r = await post(`${server.url}/v1/chat/completions`, { messages: imageMsg(url), max_tokens: 1 });
      assert.equal(r.status, 500, url);
      assert.match(r.json.error.message, NOT_IMAGE);
    }
    const audio = [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }];
    const r = await post(`${server.url}/v1/chat/completions`, { messages: audio, max_tokens: 1 });
    assert.equal(r.status, 500);
    assert.match(r.json.error.message, /^audio input is not supported/);
    assert.equal(hits, 0, 'nothing was fetched');
  });

  test('Anthropic image blocks, Responses input_image, llama-server multimodal_data, Ollama images', async () => {
    const a = await post(`${server.url}/v1/messages`, {
      model: 'm',
      max_tokens: 1,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'url', url: `${base}/png` } },
            { type: 'text', text: 'hi' },
          ],
        },
      ],
    });
    assert.equal(a.status, 500);
    assert.match(a.json.error.message, NOT_IMAGE);
    const count = await post(`${server.url}/v1/messages/count_tokens`, {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
        },
      ],
    });
    assert.equal(count.status, 500);
    const resp = await post(`${server.url}/v1/responses`, {
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'hi' },
            { type: 'input_image', image_url: pngUrl },
          ],
        },
      ],
    });
    assert.equal(resp.status, 500);
    assert.match(resp.json.error.message, NOT_IMAGE);
    const native = await post(`${server.url}/completion`, {
      prompt: { prompt_string: 'look <__media__>', multimodal_data: [Buffer.from(png).toString('base64')] },
      n_predict: 1,
    });
    assert.equal(native.status, 400);
    assert.equal(
      native.json.error.message,
      'Multimodal data provided, but model does not support multimodal requests.',
    );
    const ollama = await post(`${server.url}/api/chat`, {
      model: server.modelId,
      messages: [{ role: 'user', content: 'hi', images: ['AAAA'] }],
      stream: false,
    });
    assert.equal(ollama.status, 400);
    assert.match(ollama.json.error, /text-only model: it does not take images/);
    assert.equal(hits, 0, 'nothing was fetched');
  });

  test('/props and /v1/models report no modalities', async () => {
    const props: Json = await (await fetch(`${server.url}/props`)).json();
    assert.deepEqual(props.modalities, { vision: false, audio: false });
    const models: Json = await (await fetch(`${server.url}/v1/models`)).json();
    assert.deepEqual(models.models[0].capabilities, ['completion']);
  });
});

describe('reading media (a projector taking images and audio)', () => {
  const policy = { ...DEFAULT_MEDIA_POLICY, allowRemote: true, timeoutMs: 500, maxBytes: 1024 * 1024 };
  const both = { vision: true, audio: true };

  test('file:// is refused; http(s) only when allowed; other schemes refused', async () => {
    await assert.rejects(
      mediaUrlBytes('file:///etc/passwd', policy, 'u'),
      apiError(400, /file:\/\/ URLs are not allowed/),
    );
    await assert.rejects(
      mediaUrlBytes(`${base}/png`, DEFAULT_MEDIA_POLICY, 'u'),
      apiError(400, /remote media URLs are not allowed .*--allow-remote-media/),
    );
    await assert.rejects(mediaUrlBytes('ftp://x/y.png', policy, 'u'), apiError(400, /unsupported URL scheme/));
  });

  test('malformed base64 and data URLs', async () => {
    await assert.rejects(mediaUrlBytes('data:image/png;base64,@@@', policy, 'u'), apiError(400, /malformed base64/));
    await assert.rejects(mediaUrlBytes('data:image/png,rawtext', policy, 'u'), apiError(400, /must be base64 encoded/));
    await assert.rejects(mediaUrlBytes('malformed', policy, 'u'), apiError(400, /malformed base64/));
    assert.deepEqual(await mediaUrlBytes(pngUrl, policy, 'u'), png);
  });

  test('downloads: the bytes, a 404, an unreachable host, too big, too slow', async () => {
    assert.deepEqual(await mediaUrlBytes(`${base}/png`, policy, 'u'), png);
    await assert.rejects(mediaUrlBytes(`${base}/nothing`, policy, 'u'), apiError(400, /failed to download .*HTTP 404/));
    await assert.rejects(mediaUrlBytes('http://127.0.0.1:9/x.png', policy, 'u'), apiError(400, /failed to download/));
    await assert.rejects(mediaUrlBytes(`${base}/big`, policy, 'u'), apiError(400, /over the limit of 1048576/));
    const t0 = performance.now();
    await assert.rejects(mediaUrlBytes(`${base}/slow`, policy, 'u'), apiError(400, /within 500 ms/));
    assert.ok(performance.now() - t0 < 3000);
  });

  test("parts become checked data URLs; a non-image, audio in an image part and a wrong format are 400s (decoding is the engine's)", async () => {
    const o: { messages?: unknown } = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `${base}/png` } },
            { type: 'text', text: 'and' },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'input_audio', input_audio: { format: 'wav', data: Buffer.from(wav).toString('base64') } }],
        },
      ],
    };
    const before = JSON.stringify(o.messages);
    await resolveRequestMedia(o, both, policy);
    const m = o.messages as Json[];
    assert.equal(m[0].content[0].image_url.url, pngUrl);
    assert.equal(m[1].content[0].input_audio.url, `data:audio/wav;base64,${Buffer.from(wav).toString('base64')}`);
    assert.notEqual(JSON.stringify(o.messages), before, "the caller's messages are a copy");
    const bad = (url: string) => ({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
    });
    const text = Buffer.from('just some text, not a picture').toString('base64');
    await assert.rejects(
      resolveRequestMedia(bad(`data:image/png;base64,${text}`), both, policy),
      apiError(400, /not an image mtmd reads/),
    );
    // WebP is read (libwebp in WebAssembly), so it passes as image/webp
    const webp = Buffer.from(await encodeWebp(sampleRgba(8, 8, false), true)).toString('base64');
    const w = bad(`data:image/png;base64,${webp}`);
    await resolveRequestMedia(w, both, policy);
    assert.equal((w.messages as Json[])[0].content[0].image_url.url, `data:image/webp;base64,${webp}`);
    await assert.rejects(
      resolveRequestMedia(bad(`data:audio/wav;base64,${Buffer.from(wav).toString('base64')}`), both, policy),
      apiError(400, /the data is audio, not an image/),
    );
    const flac = {
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { format: 'flac', data: 'AAAA' } }] }],
    };
    await assert.rejects(
      resolveRequestMedia(flac, both, policy),
      apiError(400, /input_audio.format must be either 'wav' or 'mp3'/),
    );
    await assert.rejects(
      resolveRequestMedia(bad(pngUrl), { vision: false, audio: true }, policy),
      apiError(500, /^image input is not supported/),
    );
  });

  test("llama-server's multimodal_data: bare base64, kind found from the bytes", async () => {
    const o = { media_paths: [Buffer.from(png).toString('base64'), Buffer.from(wav).toString('base64')] };
    await resolveRequestMedia(o, both, policy);
    assert.ok(o.media_paths[0].startsWith('data:image/png;base64,'));
    assert.ok(o.media_paths[1].startsWith('data:audio/wav;base64,'));
    await assert.rejects(
      resolveRequestMedia({ media_paths: [`${base}/png`] }, both, policy),
      apiError(400, /remote media URLs are not allowed/),
    );
  });
});
