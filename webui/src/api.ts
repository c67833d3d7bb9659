// The server's API as the page uses it: /v1/models (one model, or a router's several
// with their state), /props (the modalities a model takes), and /v1/chat/completions
// streamed as server-sent events.
import type { Attachment, Node } from './tree.js';

export interface ModelInfo {
  id: string;
  /** A router's state for it ('loaded', 'unloaded', 'loading'…), when reported. */
  state?: string;
  /** What it takes, when the list's capabilities say ('vision', 'audio': llama-ts's router, from the projector). */
  modalities?: Modalities;
}

export interface Modalities {
  vision: boolean;
  audio: boolean;
}

/** The sampling settings sent with each request; undefined: the server's default. */
export interface Sampling {
  temperature?: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
  repeat_penalty?: number;
  max_tokens?: number;
  seed?: number;
}

/** How a streamed reply ended: its finish_reason, and llama-server's timings when sent. */
export interface StreamEnd {
  finish?: string;
  stats?: { tokens: number; perSecond: number };
}

export class ApiClient {
  constructor(public apiKey = '') {}

  private headers(json = false): Record<string, string> {
    const h: Record<string, string> = {};
    if (json) h['Content-Type'] = 'application/json';
    if (this.apiKey) h.Authorization = `Bearer ${this.apiKey}`;
    return h;
  }

  private async get(url: string): Promise<unknown> {
    const res = await fetch(url, { headers: this.headers() });
    if (!res.ok) throw new Error(await errorText(res, url));
    return res.json();
  }

  /** The models that chat: a router's list leaves out those whose capabilities lack completion (embedding, rerank). */
  async models(): Promise<ModelInfo[]> {
    const j = (await this.get('/v1/models')) as {
      data?: { id?: unknown; status?: { value?: unknown }; capabilities?: unknown }[];
    };
    return (j.data ?? [])
      .filter((m) => typeof m.id === 'string')
      .filter((m) => !Array.isArray(m.capabilities) || m.capabilities.includes('completion'))
      .map((m) => {
        const caps = Array.isArray(m.capabilities) ? m.capabilities : [];
        const modalities = { vision: caps.includes('vision'), audio: caps.includes('audio') };
        return {
          id: m.id as string,
          ...(typeof m.status?.value === 'string' ? { state: m.status.value } : {}),
          ...(modalities.vision || modalities.audio ? { modalities } : {}),
        };
      });
  }

  /**
   * What the model takes besides text. A router answers /props for the model named, and
   * autoload=false keeps it from loading one only to be asked (an error while unloaded: the
   * page asks again after a reply); a one-model server leaves the query be.
   */
  async modalities(model: string): Promise<Modalities> {
    const j = (await this.get(`/props?model=${encodeURIComponent(model)}&autoload=false`)) as {
      modalities?: Partial<Modalities>;
    };
    return { vision: j.modalities?.vision === true, audio: j.modalities?.audio === true };
  }

  /** Streams one reply; `onDelta` gets each piece of content and reasoning; resolves with how it ended. */
  async stream(
    body: Record<string, unknown>,
    signal: AbortSignal,
    onDelta: (content: string, reasoning: string) => void,
  ): Promise<StreamEnd> {
    const result: StreamEnd = {};
    const res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: this.headers(true),
      body: JSON.stringify({ ...body, stream: true }),
      signal,
    });
    if (!res.ok || !res.body) throw new Error(await errorText(res, 'the reply'));
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return result;
      buf += value;
      // SSE: events end with a blank line; `data:` lines carry the JSON
      let end = buf.indexOf('\n\n');
      while (end >= 0) {
        const event = buf.slice(0, end);
        buf = buf.slice(end + 2);
        end = buf.indexOf('\n\n');
        for (const line of event.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return result;
          const j = JSON.parse(data) as {
            error?: { message?: string };
            choices?: {
              delta?: { content?: string | null; reasoning_content?: string | null };
              finish_reason?: string | null;
            }[];
            timings?: { predicted_n?: number; predicted_per_second?: number };
          };
          if (j.error) throw new Error(j.error.message ?? 'the server reported an error');
          const choice = j.choices?.[0];
          if (choice?.delta) onDelta(choice.delta.content ?? '', choice.delta.reasoning_content ?? '');
          if (choice?.finish_reason) result.finish = choice.finish_reason;
          const t = j.timings;
          if (typeof t?.predicted_n === 'number' && typeof t.predicted_per_second === 'number')
            result.stats = { tokens: t.predicted_n, perSecond: t.predicted_per_second };
        }
      }
    }
  }
}

async function errorText(res: Response, what: string): Promise<string> {
  let msg = `${what}: ${res.status} ${res.statusText}`;
  try {
    const j = (await res.json()) as { error?: { message?: string } };
    if (j.error?.message) msg += `: ${j.error.message}`;
  } catch {}
  return msg;
}

/** A text file as it goes into the message: named, fenced. */
function textFile(a: Attachment): string {
  const fence = a.data.includes('```') ? '~~~~' : '```';
  return `\n\n${a.name}:\n${fence}\n${a.data}\n${fence}`;
}

/** One message as OpenAI's chat format has it: a string, or parts when it carries media. */
export function toApiMessage(n: Node): { role: string; content: unknown } {
  const files = n.attachments ?? [];
  const text =
    n.content +
    files
      .filter((a) => a.kind === 'text')
      .map(textFile)
      .join('');
  const media = files.filter((a) => a.kind !== 'text');
  if (media.length === 0) return { role: n.role, content: text };
  const parts: unknown[] = [];
  if (text) parts.push({ type: 'text', text });
  for (const a of media) {
    parts.push(
      a.kind === 'image'
        ? { type: 'image_url', image_url: { url: a.data } }
        : { type: 'input_audio', input_audio: { data: a.data, format: a.format ?? 'wav' } },
    );
  }
  return { role: n.role, content: parts };
}

/** The request's body for a reply to `history`. */
export function chatRequest(
  history: Node[],
  system: string,
  sampling: Sampling,
  model: string | undefined,
): Record<string, unknown> {
  const messages = history.map(toApiMessage);
  if (system) messages.unshift({ role: 'system', content: system });
  const body: Record<string, unknown> = { messages };
  if (model) body.model = model;
  for (const [k, v] of Object.entries(sampling)) if (typeof v === 'number' && Number.isFinite(v)) body[k] = v;
  return body;
}

/** A reply's `<think>…</think>` opening, for servers that leave reasoning in the content. */
export function splitThink(content: string): { reasoning: string; content: string } | undefined {
  const m = /^\s*<think>([\s\S]*?)(?:<\/think>\s*|$)/.exec(content);
  return m ? { reasoning: m[1]!.trim(), content: content.slice(m[0].length) } : undefined;
}
