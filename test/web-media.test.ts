// Media only a browser decodes, in Debian's chromium (puppeteer-core) against `llama-ts web`'s
// server: AVIF (made here by libavif's lossless encoder) decodes in the page and in a worker to
// libavif's own pixels, an ICO to its PNG's; WebM and MP4 audio recorded in the page by MediaRecorder decode to what
// the page's OfflineAudioContext gives; SVG is refused, and sizes and durations a file declares
// are checked before it is decoded. Node refuses the same bytes, naming the format. With the
// mtmd fixtures: gemma3 reads an AVIF in the page as Node reads a lossless WebP of the same
// pixels, and qwen2a hears WebM audio (decoded on the page for the engine worker) as Node hears
// a WAV of the samples the page decoded.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import { serveWeb, type WebServer } from '../src/cli/web.js';
import { type LlamaCompletionOptions, loadModel } from '../src/index.js';
import {
  audioFormat,
  decodeAudio,
  decodeImage,
  detectMediaKind,
  nativeAudioFormat,
  nativeImageFormat,
} from '../src/media/index.js';
import { declaredSeconds, declaredSizes } from '../src/media/native.js';
import { checkedMedia } from '../src/server/media.js';
import { encodeAvifLossless, libavifRgba } from './helpers/avif-encode.js';
import { encodePng, encodeWav } from './helpers/media-encode.js';
import { missingShared, sharedPath } from './helpers/shared.js';
import { encodeWebp, rgbOf, sampleRgba } from './helpers/webp-encode.js';

const CHROMIUM = '/usr/bin/chromium';
const MTMD = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;
const noBrowser = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent (Debian's chromium); the browser tests are skipped`;

// The page-side callbacks run in the browser; this program has no DOM library.
// biome-ignore lint/suspicious/noExplicitAny: objects as the page sees them
type Web = any;
declare const window: { web: Web };
declare const location: { origin: string };
declare const Worker: Web;
const ENTRY = '/dist/src/web/index.js';
const MEDIA = '/dist/src/media/index.js';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

/** An Ogg stream that declares 700 s of Opus (its last page's granule) and holds nothing decodable. */
function oggDeclaring(seconds: number): Uint8Array {
  const page = (granule: number, packet: Uint8Array) => {
    const p = new Uint8Array(28 + packet.length);
    p.set([0x4f, 0x67, 0x67, 0x53]);
    const v = new DataView(p.buffer);
    v.setUint32(6, granule % 2 ** 32, true);
    v.setUint32(10, Math.floor(granule / 2 ** 32), true);
    p[26] = 1;
    p[27] = packet.length;
    p.set(packet, 28);
    return p;
  };
  const head = new Uint8Array(19);
  head.set(Buffer.from('OpusHead'));
  head[8] = 1;
  head[9] = 1;
  return Buffer.concat([page(0, head), page(seconds * 48000, new Uint8Array([0xfc]))]);
}

/** `head` (text, \x escapes for bytes) padded to 32 bytes. */
const magic = (head: string) => Uint8Array.from(head.padEnd(32, '\0'), (c) => c.charCodeAt(0));

describe('media only a browser decodes, on Node', () => {
  test('their first bytes say which format, and image or audio; Node refuses them naming it', async () => {
    const images = {
      AVIF: magic('\0\0\0\x1cftypavif\0\0\0\0avifmif1miaf'),
      // a HEIF brand with AVIF among the compatible ones
      'AVIF ': magic('\0\0\0\x18ftypmif1\0\0\0\0mif1avif'),
      HEIC: magic('\0\0\0\x18ftypheic\0\0\0\0mif1heic'),
      JXL: magic('\xff\x0a\xfa\x7f'),
      'JXL ': magic('\0\0\0\x0cJXL \r\n\x87\n'),
      ICO: magic('\0\0\x01\0\x01\0\x10\x10'),
    };
    for (const [name, b] of Object.entries(images)) {
      const format = name.trim();
      assert.equal(nativeImageFormat(b), format, name);
      assert.equal(detectMediaKind(b), 'image', name);
      await assert.rejects(
        decodeImage(b),
        new RegExp(`^MediaError: ${format}: not an image mtmd reads .*; ${format} is decoded only in a browser`),
      );
    }
    const audio = {
      Ogg: magic('OggS\0\x02'),
      WebM: magic('\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01'),
      MP4: magic('\0\0\0\x1cftypM4A \0\0\0\0M4A isommp42'),
      'MP4 ': magic('\0\0\0\x18ftypmp42\0\0\0\0mp42isom'),
      // ADTS: the sync word mtmd takes for MP3, with the layer bits MP3 never has
      AAC: magic('\xff\xf1\x50\x80\x02\x1f\xfc'),
    };
    for (const [name, b] of Object.entries(audio)) {
      const format = name.trim();
      assert.equal(nativeAudioFormat(b), format, name);
      assert.equal(detectMediaKind(b), 'audio', name);
      await assert.rejects(
        decodeAudio(b),
        new RegExp(
          `^MediaError: ${format}: not audio mtmd reads \\(WAV, MP3, FLAC\\); ${format} is decoded only in a browser`,
        ),
      );
    }
    assert.equal(audioFormat(audio.AAC), 'MP3', "mtmd's own check");
    assert.equal(nativeAudioFormat(magic('\xff\xfb\x90\x64')), undefined, 'MPEG-1 layer III is MP3');
    assert.equal(nativeImageFormat(magic('\0\0\0\x1cftypM4A \0\0\0\0')), undefined);
    // the server names the format, and says audio where it is audio
    assert.throws(
      () => checkedMedia(audio.Ogg, 'audio', { vision: true, audio: true }, 'messages[0].content[0]'),
      /messages\[0\]\.content\[0\]: not audio mtmd reads \(WAV, MP3, FLAC\); Ogg is decoded only in a browser/,
    );
    assert.throws(
      () => checkedMedia(images.AVIF, 'image', { vision: true, audio: true }, 'image_url'),
      /image_url: not an image mtmd reads \(PNG, JPEG, GIF, BMP, WebP\); AVIF is decoded only in a browser/,
    );
  });
});

/** An ICO holding one PNG image (as Windows Vista's icons hold their large sizes). */
function icoOfPng(png: Uint8Array, width: number, height: number): Uint8Array {
  const head = new Uint8Array(22);
  const v = new DataView(head.buffer);
  v.setUint16(2, 1, true);
  v.setUint16(4, 1, true);
  head[6] = width;
  head[7] = height;
  v.setUint16(10, 1, true);
  v.setUint16(12, 32, true);
  v.setUint32(14, png.length, true);
  v.setUint32(18, 22, true);
  return Buffer.concat([head, png]);
}

/** A WebM whose Segment's Info declares `seconds` (TimecodeScale 1 ms, Duration a float64), and no audio. */
function webmDeclaring(seconds: number): Uint8Array {
  const duration = Buffer.alloc(8);
  duration.writeDoubleBE(seconds * 1000);
  const info = Buffer.concat([Buffer.from([0x2a, 0xd7, 0xb1, 0x83, 0x0f, 0x42, 0x40, 0x44, 0x89, 0x88]), duration]);
  return Buffer.concat([
    Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x87, 0x42, 0x82, 0x84]),
    Buffer.from('webm'),
    // a Segment of unknown size (as a live recorder writes it), then its Info
    Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
    Buffer.from([0x15, 0x49, 0xa9, 0x66, 0x80 | info.length]),
    info,
  ]);
}

describe('the headers read before a browser decodes', () => {
  test('sizes and durations as declared; every truncation and random bytes read in bounds, never throwing', async () => {
    const avif = await encodeAvifLossless(sampleRgba(23, 17, false));
    assert.deepEqual(declaredSizes('AVIF', avif), [[23, 17]]);
    assert.equal(declaredSeconds('Ogg', oggDeclaring(700)), 700);
    assert.equal(declaredSeconds('WebM', webmDeclaring(12.5)), 12.5);
    const files: [Parameters<typeof declaredSizes>[0] | Parameters<typeof declaredSeconds>[0], Uint8Array][] = [
      ['AVIF', avif],
      ['Ogg', oggDeclaring(700)],
      ['WebM', webmDeclaring(700)],
    ];
    let seed = 5;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed >>> 24;
    };
    for (const [format, b] of files)
      for (let n = 0; n <= b.length; n++) {
        const cut = b.slice(0, n);
        const garbled = b.map((x, i) => (i >= n ? rand() : x));
        for (const x of [cut, garbled])
          if (format === 'AVIF') declaredSizes(format, x);
          else declaredSeconds(format as 'Ogg' | 'WebM', x);
      }
    for (let k = 0; k < 200; k++) {
      const x = Uint8Array.from({ length: 64 }, rand);
      for (const f of ['AVIF', 'HEIC', 'ICO'] as const) declaredSizes(f, x);
      for (const f of ['Ogg', 'WebM', 'MP4', 'AAC'] as const) declaredSeconds(f, x);
    }
  });
});

/** Sums of a completion to compare: its text, tokens and top-10 probabilities. */
function pick(r: Web) {
  return {
    text: r.text as string,
    tokens: r.tokens as number[],
    probs: (r.completion_probabilities ?? []).map((p: Web) => p.probs.map((q: Web) => [q.tok_str, q.prob])) as [
      string,
      number,
    ][][],
  };
}
type Picked = ReturnType<typeof pick>;

function sameCompletion(web: Picked, node: Picked, what: string): void {
  assert.equal(web.text, node.text, `${what}: text`);
  assert.deepEqual(web.tokens, node.tokens, `${what}: token ids`);
  assert.ok(node.probs.length > 0);
  assert.equal(web.probs.length, node.probs.length);
  for (let i = 0; i < node.probs.length; i++)
    for (let k = 0; k < node.probs[i]!.length; k++) {
      const [ws, wp] = web.probs[i]![k]!;
      const [ns, np] = node.probs[i]![k]!;
      assert.equal(ws, ns, `${what}: token ${i}, candidate ${k}`);
      assert.ok(Math.abs(wp - np) <= 1e-5, `${what}: token ${i}, candidate ${k}: ${wp} vs ${np}`);
    }
}

describe('media only a browser decodes, in chromium', { skip: noBrowser, timeout: 120_000 }, () => {
  let browser: Browser;
  let server: WebServer;
  let page: Page;
  const errors: string[] = [];
  const img = sampleRgba(23, 17, false);
  let avif: Uint8Array;
  /** WebM/Opus and MP4 recorded in the page (once), and what its OfflineAudioContext makes of them. */
  let recorded: { type: string; bytes: Uint8Array; mono: Float32Array; channels: number }[] = [];

  before(async () => {
    avif = await encodeAvifLossless(img);
    const models: Record<string, string> = {};
    if (MTMD)
      for (const f of ['gemma3', 'qwen2a']) for (const s of ['.gguf', '.mmproj.gguf']) models[f + s] = MTMD + f + s;
    server = await serveWeb({ port: 0, models });
    const { default: puppeteer } = await import('puppeteer-core');
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--autoplay-policy=no-user-gesture-required'],
    });
    page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/blank.html`);
    await page.evaluate(async (entry) => {
      window.web = await import(entry);
    }, ENTRY);
    // 0.6 s of a 440 Hz tone through two recorders at once (WebM/Opus, and MP4)
    const clips = (await page.evaluate(async () => {
      const ac = new (globalThis as Web).AudioContext({ sampleRate: 48000 });
      await ac.resume();
      const osc = new (globalThis as Web).OscillatorNode(ac, { frequency: 440 });
      const gain = new (globalThis as Web).GainNode(ac, { gain: 0.5 });
      const dest = ac.createMediaStreamDestination();
      osc.connect(gain).connect(dest);
      osc.start();
      const MR = (globalThis as Web).MediaRecorder;
      const types = ['audio/webm;codecs=opus', 'audio/mp4'].filter((t) => MR.isTypeSupported(t));
      const done = types.map((type) => {
        const rec = new MR(dest.stream, { mimeType: type });
        const chunks: Web[] = [];
        rec.ondataavailable = (e: Web) => chunks.push(e.data);
        rec.start();
        return {
          rec,
          blob: new Promise<Web>((resolve) => {
            rec.onstop = () => resolve(new Blob(chunks));
          }),
        };
      });
      await new Promise((r) => setTimeout(r, 600));
      for (const d of done) d.rec.stop();
      const out = [];
      for (const [k, d] of done.entries()) {
        const bytes = new Uint8Array(await (await d.blob).arrayBuffer());
        // the browser's own decoding at 16 kHz, channels averaged in float32
        const buf = await new (globalThis as Web).OfflineAudioContext(1, 1, 16000).decodeAudioData(
          bytes.slice().buffer,
        );
        const mono = new Float32Array(buf.length);
        for (let i = 0; i < buf.length; i++) {
          let t = 0;
          for (let c = 0; c < buf.numberOfChannels; c++) t = Math.fround(t + buf.getChannelData(c)[i]);
          mono[i] = t / buf.numberOfChannels;
        }
        let s = '';
        for (const x of bytes) s += String.fromCharCode(x);
        out.push({ type: types[k], bytes: btoa(s), mono: Array.from(mono), channels: buf.numberOfChannels });
      }
      osc.stop();
      await ac.close();
      return out;
    })) as { type: string; bytes: string; mono: number[]; channels: number }[];
    recorded = clips.map((c) => ({
      ...c,
      bytes: new Uint8Array(Buffer.from(c.bytes, 'base64')),
      mono: Float32Array.from(c.mono),
    }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('AVIF decodes in the page and in a worker to libavif’s pixels (translucent within 1, transparent black), ICO to its PNG’s; limits checked before decoding; SVG refused; Node refuses them', async () => {
    const want = rgbOf(await libavifRgba(avif));
    assert.deepEqual(want, rgbOf(img), 'lossless AVIF: libavif gives back the pixels encoded');
    assert.equal(detectMediaKind(avif), 'image');
    await assert.rejects(
      decodeImage(avif),
      /^MediaError: AVIF: not an image mtmd reads \(PNG, JPEG, GIF, BMP, WebP\); AVIF is decoded only in a browser/,
    );
    // with an alpha plane: RGB through the canvas's premultiplied pixels, so within 1 where
    // translucent and black where transparent (stb_image would keep the stored colour there)
    const alphaRgba = sampleRgba(23, 17, true);
    const alphaAvif = await encodeAvifLossless(alphaRgba);
    assert.deepEqual((await libavifRgba(alphaAvif)).data, alphaRgba.data);
    const ico = icoOfPng(
      encodePng({ width: 23, height: 17, colorType: 2, depth: 8, samples: Array.from(rgbOf(img)) }),
      23,
      17,
    );
    assert.equal(detectMediaKind(ico), 'image');
    await assert.rejects(
      decodeImage(ico),
      /^MediaError: ICO: not an image mtmd reads .*; ICO is decoded only in a browser/,
    );
    // the AV1 data cut short (the header boxes kept): what the file declares is checked before any decoding
    const broken = avif.slice(0, avif.length - 40);
    const svg = new TextEncoder().encode(
      '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>',
    );
    const web = await page.evaluate(
      async (media, avif64, broken64, svg64, alpha64, ico64) => {
        const bytes = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
        const m = await import(media);
        const shown = (p: Promise<Web>) =>
          p.then(
            () => 'decoded',
            (e: Error) => String(e),
          );
        const here = await m.decodeImage(bytes(avif64));
        // a module worker on the same modules: createImageBitmap and OffscreenCanvas exist there too
        const src = `import * as m from '${location.origin}${media}';
          onmessage = (e) => m.decodeImage(e.data).then(
            (i) => postMessage({ width: i.width, height: i.height, data: i.data }),
            (err) => postMessage({ error: String(err) }));
          postMessage({ listening: true });`;
        const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
        const there: Web = await new Promise((resolve, reject) => {
          // the bytes go once the worker listens (the platform's worker side also says it is ready)
          w.onmessage = (e: Web) => {
            if (e.data?.listening) w.postMessage(bytes(avif64));
            else if (e.data?.error) reject(new Error(e.data.error));
            else if (e.data?.data) resolve(e.data);
          };
          w.onerror = (e: Web) => reject(new Error(e.message));
        });
        w.terminate();
        return {
          here: { width: here.width, height: here.height, data: Array.from(here.data as Uint8Array) },
          there: { width: there.width, height: there.height, data: Array.from(there.data as Uint8Array) },
          sideLimit: await shown(m.decodeImage(bytes(broken64), { maxSide: 16 })),
          pixelLimit: await shown(m.decodeImage(bytes(avif64), { maxPixels: 390 })),
          broken: await shown(m.decodeImage(bytes(broken64))),
          svg: await shown(m.decodeImage(bytes(svg64))),
          alpha: Array.from((await m.decodeImage(bytes(alpha64))).data as Uint8Array),
          ico: Array.from((await m.decodeImage(bytes(ico64))).data as Uint8Array),
          icoLimit: await shown(m.decodeImage(bytes(ico64), { maxSide: 8 })),
        };
      },
      MEDIA,
      b64(avif),
      b64(broken),
      b64(svg),
      b64(alphaAvif),
      b64(ico),
    );
    for (const [where, got] of [
      ['page', web.here],
      ['worker', web.there],
    ] as const) {
      assert.equal(got.width, 23, where);
      assert.equal(got.height, 17, where);
      assert.deepEqual(Uint8Array.from(got.data), want, `${where}: the browser's pixels are libavif's`);
    }
    assert.match(web.sideLimit, /AVIF: image size 23x17 is over the limit of 16 per side/);
    assert.match(web.pixelLimit, /AVIF: image size 23x17 \(391 pixels\) is over the limit of 390 pixels/);
    assert.match(web.broken, /AVIF: the browser cannot decode it/);
    assert.match(web.svg, /SVG: a vector image is not read/);
    assert.deepEqual(Uint8Array.from(web.ico), rgbOf(img), "ICO: its PNG's pixels");
    assert.match(web.icoLimit, /ICO: image size 23x17 is over the limit of 8 per side/);
    for (let p = 0; p < 23 * 17; p++) {
      const a = alphaRgba.data[p * 4 + 3]!;
      for (let c = 0; c < 3; c++) {
        const got = web.alpha[p * 3 + c]!;
        const src = alphaRgba.data[p * 4 + c]!;
        if (a === 0) assert.equal(got, 0, `pixel ${p}: transparent reads black`);
        else assert.ok(Math.abs(got - src) <= 1, `pixel ${p}, channel ${c}: ${got} vs ${src} (alpha ${a})`);
      }
    }
    await assert.rejects(decodeImage(svg), /SVG: a vector image is not read/);
    assert.deepEqual(errors, []);
  });

  test('WebM and MP4 audio recorded in the page decode to its OfflineAudioContext’s samples; a declared duration over the limit is refused first; Node refuses them', async () => {
    assert.ok(
      recorded.some((r) => r.type.startsWith('audio/webm')),
      'MediaRecorder records WebM/Opus',
    );
    assert.deepEqual(
      recorded.map((r) => r.type),
      ['audio/webm;codecs=opus', 'audio/mp4'],
      "Chromium 156's MediaRecorder",
    );
    const declaring = [
      { type: 'audio/ogg', bytes: oggDeclaring(700) },
      { type: 'audio/webm', bytes: webmDeclaring(700) },
    ];
    for (const r of [...recorded, ...declaring]) {
      const format = r.type.startsWith('audio/webm') ? 'WebM' : r.type === 'audio/mp4' ? 'MP4' : 'Ogg';
      assert.equal(detectMediaKind(r.bytes), 'audio', r.type);
      await assert.rejects(
        decodeAudio(r.bytes),
        new RegExp(
          `^MediaError: ${format}: not audio mtmd reads \\(WAV, MP3, FLAC\\); ${format} is decoded only in a browser`,
        ),
      );
    }
    const web = (await page.evaluate(
      async (media, clips, long) => {
        const bytes = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
        const m = await import(media);
        const out = [];
        for (const c of clips) {
          const a = await m.decodeAudio(bytes(c));
          out.push({ sampleRate: a.sampleRate, samples: Array.from(a.samples as Float32Array) });
        }
        const refused = [];
        for (const c of long)
          refused.push(
            await m.decodeAudio(bytes(c)).then(
              () => 'decoded',
              (e: Error) => String(e),
            ),
          );
        return { out, refused };
      },
      MEDIA,
      recorded.map((r) => b64(r.bytes)),
      declaring.map((r) => b64(r.bytes)),
    )) as { out: { sampleRate: number; samples: number[] }[]; refused: string[] };
    for (const [k, r] of recorded.entries()) {
      assert.equal(web.out[k]!.sampleRate, 16000, r.type);
      // 0.6 s recorded: at 16 kHz, 0.4 to 1.5 s of samples (the recorders start and stop on their own clocks)
      assert.ok(r.mono.length > 6400 && r.mono.length < 24000, `${r.type}: ${r.mono.length} samples`);
      assert.ok(
        r.mono.some((x) => Math.abs(x) > 0.2),
        `${r.type}: the tone is heard`,
      );
      assert.deepEqual(Float32Array.from(web.out[k]!.samples), r.mono, `${r.type}: the browser's samples`);
    }
    // refused from what they declare (neither holds anything the browser could decode)
    assert.match(web.refused[0]!, /Ogg: 700\.0 s of audio is over the limit of 600 s/);
    assert.match(web.refused[1]!, /WebM: 700\.0 s of audio is over the limit of 600 s/);
    assert.deepEqual(errors, []);
  });

  test('gemma3 reads an AVIF in the page as Node reads a lossless WebP of the same pixels', {
    skip: MTMD ? false : missingShared('fixtures/mtmd/gemma3.mmproj.gguf'),
  }, async () => {
    const url = (mime: string, b: Uint8Array) => `data:${mime};base64,${b64(b)}`;
    const options = (image: string) => ({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in the picture ' },
            { type: 'image_url', image_url: { url: image } },
            { type: 'text', text: ' today?' },
          ],
        },
      ],
      n_predict: 4,
      temperature: 0,
      n_probs: 10,
      return_tokens: true,
    });
    const ctx = await loadModel({ model: `${MTMD}gemma3.gguf`, n_ctx: 2048, n_batch: 512, n_threads: 2 });
    await ctx.initMultimodal({ path: `${MTMD}gemma3.mmproj.gguf` });
    const node = pick(
      await ctx.completion(options(url('image/webp', await encodeWebp(img, true))) as LlamaCompletionOptions),
    );
    await assert.rejects(
      ctx.completion(options(url('image/avif', avif)) as LlamaCompletionOptions),
      /AVIF: not an image mtmd reads/,
    );
    await ctx.release();
    const web = await page.evaluate(
      async (o) => {
        const ctx = await window.web.loadModel({
          model: '/models/gemma3.gguf',
          n_ctx: 2048,
          n_batch: 512,
          n_threads: 2,
        });
        await ctx.initMultimodal({ path: '/models/gemma3.mmproj.gguf' });
        const r = await ctx.completion(o);
        await ctx.release();
        return { text: r.text, tokens: r.tokens, completion_probabilities: r.completion_probabilities };
      },
      options(url('image/avif', avif)),
    );
    sameCompletion(pick(web), node, 'AVIF in the page vs WebP on Node');
    assert.deepEqual(errors, []);
  });

  test('qwen2a hears WebM audio in the page (decoded on the page for the engine worker) as Node hears a WAV of those samples', {
    skip: MTMD ? false : missingShared('fixtures/mtmd/qwen2a.mmproj.gguf'),
  }, async () => {
    const clip = recorded.find((r) => r.type.startsWith('audio/webm'))!;
    const wav = encodeWav({ sampleRate: 16000, channels: 1, bits: 32, float: true, samples: clip.mono });
    const options = (media: string) => ({
      prompt: 'Listen <__media__> and she said',
      media_paths: [media],
      n_predict: 4,
      temperature: 0,
      n_probs: 10,
      return_tokens: true,
    });
    const ctx = await loadModel({ model: `${MTMD}qwen2a.gguf`, n_ctx: 2048, n_batch: 512, n_threads: 2 });
    await ctx.initMultimodal({ path: `${MTMD}qwen2a.mmproj.gguf` });
    const node = pick(await ctx.completion(options(`data:audio/wav;base64,${b64(wav)}`) as LlamaCompletionOptions));
    await ctx.release();
    const web = await page.evaluate(
      async (o) => {
        const ctx = await window.web.loadModel({
          model: '/models/qwen2a.gguf',
          n_ctx: 2048,
          n_batch: 512,
          n_threads: 2,
        });
        await ctx.initMultimodal({ path: '/models/qwen2a.mmproj.gguf' });
        const r = await ctx.completion(o);
        await ctx.release();
        return { text: r.text, tokens: r.tokens, completion_probabilities: r.completion_probabilities };
      },
      options(`data:audio/webm;base64,${b64(clip.bytes)}`),
    );
    sameCompletion(pick(web), node, 'WebM in the page vs WAV on Node');
    assert.deepEqual(errors, []);
  });
});
