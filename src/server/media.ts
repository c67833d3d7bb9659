// Media in requests (OpenAI image_url / input_audio parts, Anthropic image blocks, Responses
// input_image parts, llama-server's multimodal_data): refused at once when the model has no
// projector for them (a 500 in llama-server's words, as llama-server), else read from a data URL or bare base64
// (file:// never; http(s) only when the server allows remote media, bounded in bytes and time),
// told image from audio by their first bytes, and handed to the library as a data URL, so the
// engine never touches the network or disk; it decodes them in its worker (a bad file: a 400).
import { audioFormat, detectMediaKind, imageFormat, unreadMessage } from '../media/index.js';
import { ApiError } from './http.js';

/** What the model takes, from its projector (none: both false). */
export interface Modalities {
  vision: boolean;
  audio: boolean;
}

export interface MediaPolicy {
  /** Fetch http(s) URLs (--allow-remote-media). */
  allowRemote: boolean;
  /** Most bytes one media item may have (decoded base64 or downloaded). */
  maxBytes: number;
  /** Longest a download may take, in milliseconds. */
  timeoutMs: number;
}

export const DEFAULT_MEDIA_POLICY: MediaPolicy = { allowRemote: false, maxBytes: 10 * 1024 * 1024, timeoutMs: 10_000 };

/**
 * Media for a model without a projector for it: llama-server's words and status, a 500 (its
 * parser throws a runtime_error there, which its handlers answer as a server error; the
 * suite's test_compat_anthropic.py::test_anthropic_vision_format_accepted asserts the 500).
 */
export function mediaNotSupported(kind: 'image' | 'audio', param = 'messages'): ApiError {
  return new ApiError(
    500,
    `${kind} input is not supported - hint: if this is unexpected, you may need to provide the mmproj`,
    undefined,
    param,
  );
}

const bad = (message: string, param: string) => new ApiError(400, message, undefined, param);

/** Standard base64 (whitespace allowed, padding optional); anything else is refused, not skipped. */
export function strictBase64(s: string, param: string, maxBytes: number): Uint8Array {
  const t = s.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(t) || t.length % 4 === 1) throw bad(`${param}: malformed base64 data`, param);
  if (Math.floor((t.length * 3) / 4) > maxBytes + 2)
    throw bad(
      `${param}: media of about ${Math.floor((t.length * 3) / 4)} bytes is over the limit of ${maxBytes}`,
      param,
    );
  return new Uint8Array(Buffer.from(t, 'base64'));
}

/** The bytes a URL names: a data URL, bare base64, or (when allowed) an http(s) download. */
export async function mediaUrlBytes(url: string, policy: MediaPolicy, param: string): Promise<Uint8Array> {
  if (/^file:/i.test(url)) throw bad(`${param}: file:// URLs are not allowed`, param);
  if (/^https?:\/\//i.test(url)) {
    if (!policy.allowRemote)
      throw bad(
        `${param}: remote media URLs are not allowed (the server was started without --allow-remote-media)`,
        param,
      );
    return download(url, policy, param);
  }
  if (/^data:/i.test(url)) {
    const comma = url.indexOf(',');
    if (comma < 0) throw bad(`${param}: invalid data URL (no comma)`, param);
    const head = url.slice(5, comma);
    if (!/;base64$/i.test(head)) throw bad(`${param}: the data URL must be base64 encoded`, param);
    return strictBase64(url.slice(comma + 1), param, policy.maxBytes);
  }
  if (url.length === 0) throw bad(`${param}: the url is empty`, param);
  if (/^[a-z][a-z0-9+.-]*:/i.test(url))
    throw bad(`${param}: unsupported URL scheme in ${JSON.stringify(url.slice(0, 40))}`, param);
  return strictBase64(url, param, policy.maxBytes);
}

async function download(url: string, policy: MediaPolicy, param: string): Promise<Uint8Array> {
  const fail = (why: string) => bad(`${param}: failed to download ${url}: ${why}`, param);
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(policy.timeoutMs), redirect: 'follow' });
  } catch (e) {
    const name = (e as Error).name;
    throw fail(
      name === 'TimeoutError'
        ? `no answer within ${policy.timeoutMs} ms`
        : (((e as Error).cause as Error)?.message ?? (e as Error).message),
    );
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw fail(`HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? 'NaN');
  if (declared > policy.maxBytes) {
    await res.body?.cancel();
    throw fail(`${declared} bytes is over the limit of ${policy.maxBytes}`);
  }
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > policy.maxBytes) {
        await reader.cancel();
        throw fail(`more than the limit of ${policy.maxBytes} bytes`);
      }
      parts.push(value);
    }
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw fail((e as Error).name === 'TimeoutError' ? `not done within ${policy.timeoutMs} ms` : (e as Error).message);
  }
  return new Uint8Array(Buffer.concat(parts));
}

/** The image or audio parts of a conversation, in order, with the request field each sits at. */
function mediaParts(
  messages: readonly unknown[],
): { kind: 'image' | 'audio'; part: Record<string, unknown>; param: string }[] {
  const out: { kind: 'image' | 'audio'; part: Record<string, unknown>; param: string }[] = [];
  for (const [i, m] of messages.entries()) {
    const content = (m as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const [j, p] of content.entries()) {
      const type = (p as { type?: unknown } | null)?.type;
      if (type === 'image_url' || type === 'input_audio')
        out.push({
          kind: type === 'image_url' ? 'image' : 'audio',
          part: p as Record<string, unknown>,
          param: `messages[${i}].content[${j}]`,
        });
    }
  }
  return out;
}

/** Refuses (400) image or audio parts the model cannot take, before anything is read or fetched. */
export function checkMessageModalities(messages: readonly unknown[], modalities: Modalities): void {
  for (const { kind } of mediaParts(messages)) {
    if (kind === 'image' ? !modalities.vision : !modalities.audio) throw mediaNotSupported(kind);
  }
}

/**
 * Resolves the media of a request in place: every image_url and input_audio part of
 * `o.messages` (copied, not changed) and every `o.media_paths` entry (llama-server's
 * multimodal_data) becomes a checked data URL.
 */
export async function resolveRequestMedia(
  o: { messages?: unknown; media_paths?: string[] },
  modalities: Modalities,
  policy: MediaPolicy,
): Promise<void> {
  if (Array.isArray(o.messages)) {
    checkMessageModalities(o.messages, modalities);
    const parts = mediaParts(o.messages);
    if (parts.length > 0) {
      const messages = structuredClone(o.messages) as unknown[];
      const copies = mediaParts(messages);
      for (const [k, { kind, part, param }] of parts.entries()) {
        const copy = copies[k].part;
        if (kind === 'image') {
          const url = (part.image_url as { url?: unknown } | undefined)?.url;
          if (typeof url !== 'string') throw bad(`${param}.image_url.url must be a string`, param);
          const bytes = await mediaUrlBytes(url, policy, `${param}.image_url.url`);
          copy.image_url = { url: checkedMedia(bytes, 'image', modalities, `${param}.image_url`) };
        } else {
          const a = part.input_audio as { data?: unknown; format?: unknown } | undefined;
          if (a?.format !== 'wav' && a?.format !== 'mp3')
            throw bad("input_audio.format must be either 'wav' or 'mp3'", `${param}.input_audio.format`);
          if (typeof a.data !== 'string') throw bad(`${param}.input_audio.data must be a base64 string`, param);
          const bytes = strictBase64(a.data, `${param}.input_audio.data`, policy.maxBytes);
          copy.input_audio = {
            format: a.format,
            url: checkedMedia(bytes, 'audio', modalities, `${param}.input_audio`),
          };
        }
      }
      o.messages = messages;
    }
  }
  if (o.media_paths?.length) {
    const out: string[] = [];
    for (const [i, m] of o.media_paths.entries()) {
      const param = `multimodal_data[${i}]`;
      const bytes = await mediaUrlBytes(m, { ...policy, allowRemote: false }, param);
      out.push(checkedMedia(bytes, detectMediaKind(bytes), modalities, param));
    }
    o.media_paths = out;
  }
}

/**
 * Checks that `bytes` are the kind the part claims, by the magic bytes mtmd tells images from
 * audio with (an image part holding audio, or a format mtmd cannot read, is a 400 here), and
 * returns them as a data URL. The decoding itself runs in the engine worker, off this thread,
 * under the media limits: a corrupt file is a 400 from there (`media: …: PNG: …`).
 */
export function checkedMedia(
  bytes: Uint8Array,
  kind: 'image' | 'audio',
  modalities: Modalities,
  param: string,
): string {
  const actual = detectMediaKind(bytes);
  if (actual !== kind)
    throw bad(
      `${param}: the data is ${actual === 'audio' ? 'audio' : 'not audio'}, not ${kind === 'image' ? 'an image' : 'audio'}`,
      param,
    );
  if (kind === 'image' ? !modalities.vision : !modalities.audio) throw mediaNotSupported(kind, param);
  const format = kind === 'image' ? imageFormat(bytes) : audioFormat(bytes);
  if (format === undefined) throw bad(`${param}: ${unreadMessage(kind, bytes)}`, param);
  const mime = `${kind}/${format.toLowerCase()}`;
  return `data:${mime};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}`;
}
