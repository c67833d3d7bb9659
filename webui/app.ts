// The chat page served at `/` by `llama-ts serve`: conversations streamed from
// /v1/chat/completions (SSE), kept in IndexedDB. Model output only ever becomes text
// nodes (markdown.ts); the page runs under a CSP with no inline script.
import { renderMarkdown } from './markdown.js';

export { renderMarkdown, safeHref } from './markdown.js';

interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
  reasoning?: string;
  /** The reply was stopped or failed before its end. */
  incomplete?: boolean;
}

interface Conversation {
  id: string;
  title: string;
  updated: number;
  messages: Message[];
}

interface Settings {
  /** The model requests name (a router serves several; '' for a server of one). */
  model: string;
  system: string;
  temperature: number;
  maxTokens: number;
  apiKey: string;
}

const SETTINGS_KEY = 'llama-ts.settings';
const DEFAULTS: Settings = { model: '', system: '', temperature: 0.8, maxTokens: -1, apiKey: '' };

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
};

// ---- IndexedDB: one store of conversations, keyed by id ----

function openDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open('llama-ts-chat', 1);
    req.onupgradeneeded = () => req.result.createObjectStore('conversations', { keyPath: 'id' });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function tx<T>(db: IDBDatabase, mode: IDBTransactionMode, op: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = op(db.transaction('conversations', mode).objectStore('conversations'));
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export class Store {
  constructor(private db: IDBDatabase) {}
  static async open(): Promise<Store> {
    return new Store(await openDb());
  }
  async list(): Promise<Conversation[]> {
    const all = await tx<Conversation[]>(this.db, 'readonly', (s) => s.getAll());
    return all.sort((a, b) => b.updated - a.updated);
  }
  get(id: string): Promise<Conversation | undefined> {
    return tx<Conversation | undefined>(this.db, 'readonly', (s) => s.get(id));
  }
  async put(c: Conversation): Promise<void> {
    await tx(this.db, 'readwrite', (s) => s.put(c));
  }
  async delete(id: string): Promise<void> {
    await tx(this.db, 'readwrite', (s) => s.delete(id));
  }
}

// ---- settings (localStorage) ----

function loadSettings(): Settings {
  try {
    return { ...DEFAULTS, ...(JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? '{}') as Partial<Settings>) };
  } catch {
    return { ...DEFAULTS };
  }
}

// ---- streaming ----

/** Streams one reply; `onDelta` gets each piece of content and reasoning. */
async function streamReply(
  messages: Message[],
  settings: Settings,
  signal: AbortSignal,
  onDelta: (content: string, reasoning: string) => void,
): Promise<void> {
  const body: Record<string, unknown> = {
    messages: messages.map((m) => ({ role: m.role, content: m.content })),
    stream: true,
    temperature: settings.temperature,
  };
  if (settings.maxTokens > 0) body.max_tokens = settings.maxTokens;
  if (settings.model) body.model = settings.model;
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (settings.apiKey) headers.Authorization = `Bearer ${settings.apiKey}`;
  const res = await fetch('/v1/chat/completions', { method: 'POST', headers, body: JSON.stringify(body), signal });
  if (!res.ok || !res.body) {
    let msg = `${res.status} ${res.statusText}`;
    try {
      const j = (await res.json()) as { error?: { message?: string } };
      if (j.error?.message) msg += `: ${j.error.message}`;
    } catch {}
    throw new Error(msg);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
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
        if (data === '[DONE]') return;
        const j = JSON.parse(data) as {
          error?: { message?: string };
          choices?: { delta?: { content?: string | null; reasoning_content?: string | null } }[];
        };
        if (j.error) throw new Error(j.error.message ?? 'the server reported an error');
        const d = j.choices?.[0]?.delta;
        if (d) onDelta(d.content ?? '', d.reasoning_content ?? '');
      }
    }
  }
}

// ---- the page ----

class ChatPage {
  private current: Conversation | undefined;
  private abort: AbortController | undefined;
  private settings = loadSettings();
  /** Conversations deleted here: a reply still finishing is not saved back into them. */
  private deleted = new Set<string>();

  constructor(private store: Store) {}

  async start(): Promise<void> {
    this.bindSettings();
    $('new-chat').addEventListener('click', () => this.show(undefined));
    $('toggle-sidebar').addEventListener('click', () => document.body.classList.toggle('sidebar-open'));
    // at a phone's width the list lies over the chat: a touch beside it closes it
    document.querySelector('main')?.addEventListener('click', (e) => {
      if (!(e.target as Element).closest('#toggle-sidebar')) document.body.classList.remove('sidebar-open');
    });
    $('toggle-settings').addEventListener('click', () => {
      const form = $('settings');
      form.hidden = !form.hidden;
      $('toggle-settings').setAttribute('aria-expanded', String(!form.hidden));
    });
    $('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });
    $<HTMLTextAreaElement>('input').addEventListener('keydown', (e) => {
      // Enter sends, Shift+Enter is a new line
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      }
    });
    $('stop').addEventListener('click', () => this.abort?.abort());
    await this.loadModels();
    await this.refreshList();
  }

  /**
   * A router (serve with --models-*; its /v1/models gives each model a status) serves
   * several models: the settings then offer them, and requests name the one chosen
   * (kept; else a loaded one, else the first).
   */
  private async loadModels(): Promise<void> {
    let list: { id: string; status?: { value?: string } }[] = [];
    try {
      const r = await fetch('/v1/models');
      if (r.ok) list = ((await r.json()) as { data?: typeof list }).data ?? [];
    } catch {}
    if (!list.some((m) => m.status)) {
      this.settings.model = '';
      return;
    }
    const select = $<HTMLSelectElement>('model');
    for (const m of list) {
      const o = document.createElement('option');
      o.value = m.id;
      o.textContent = `${m.id} (${m.status?.value ?? '?'})`;
      select.append(o);
    }
    if (!list.some((m) => m.id === this.settings.model)) {
      this.settings.model = (list.find((m) => m.status?.value === 'loaded') ?? list[0])!.id;
    }
    select.value = this.settings.model;
    select.addEventListener('change', () => {
      this.settings.model = select.value;
      localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.settings));
    });
    $('model-field').hidden = false;
  }

  private bindSettings(): void {
    const fields: [string, keyof Settings, 'text' | 'number'][] = [
      ['system', 'system', 'text'],
      ['temperature', 'temperature', 'number'],
      ['max-tokens', 'maxTokens', 'number'],
      ['api-key', 'apiKey', 'text'],
    ];
    for (const [id, key, kind] of fields) {
      const el = $<HTMLInputElement | HTMLTextAreaElement>(id);
      el.value = String(this.settings[key]);
      el.addEventListener('input', () => {
        const v = kind === 'number' ? Number(el.value) : el.value;
        if (kind === 'number' && !Number.isFinite(v)) return;
        (this.settings as unknown as Record<string, unknown>)[key] = v;
        localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.settings));
      });
    }
  }

  private async refreshList(): Promise<void> {
    const ul = $('conversations');
    const items = (await this.store.list()).map((c) => {
      const li = document.createElement('li');
      li.dataset.id = c.id;
      if (c.id === this.current?.id) li.className = 'current';
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'open';
      open.textContent = c.title;
      open.title = c.title;
      open.addEventListener('click', async () => {
        document.body.classList.remove('sidebar-open');
        this.show(await this.store.get(c.id));
      });
      const del = document.createElement('button');
      del.type = 'button';
      del.className = 'delete';
      del.textContent = '×';
      del.setAttribute('aria-label', `Delete ${c.title}`);
      del.addEventListener('click', async () => {
        this.deleted.add(c.id);
        await this.store.delete(c.id);
        if (this.current?.id === c.id) this.show(undefined);
        await this.refreshList();
      });
      li.append(open, del);
      return li;
    });
    ul.replaceChildren(...items);
  }

  private show(c: Conversation | undefined): void {
    this.abort?.abort();
    this.current = c;
    $('title').textContent = c?.title ?? 'llama-ts';
    $('messages').replaceChildren(
      ...(c?.messages ?? []).map((m, i) => this.messageView(m, i === c!.messages.length - 1)),
    );
    this.setError(undefined);
    for (const li of $('conversations').querySelectorAll('li')) {
      li.classList.toggle('current', li.dataset.id === c?.id);
    }
  }

  private messageView(m: Message, last: boolean, streaming = false): HTMLElement {
    const div = document.createElement('div');
    div.className = `msg ${m.role}`;
    this.fill(div, m, last, streaming);
    return div;
  }

  /** (Re)draws one message: the user's as plain text, a reply as markdown with its reasoning apart. */
  private fill(div: HTMLElement, m: Message, last: boolean, streaming = false): void {
    div.replaceChildren();
    if (m.role !== 'assistant') {
      div.textContent = m.content;
      return;
    }
    if (m.reasoning) {
      const details = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = streaming && !m.content ? 'Reasoning…' : 'Reasoning';
      const body = document.createElement('div');
      body.className = 'reasoning';
      body.textContent = m.reasoning;
      details.append(summary, body);
      div.appendChild(details);
    }
    const content = document.createElement('div');
    content.className = 'content';
    content.appendChild(renderMarkdown(m.content));
    div.appendChild(content);
    div.dataset.state = streaming ? 'streaming' : m.incomplete ? 'stopped' : 'done';
    if (m.incomplete && !streaming) {
      const note = document.createElement('div');
      note.className = 'note';
      note.textContent = '(stopped)';
      div.appendChild(note);
    }
    if (last && !streaming) {
      const actions = document.createElement('div');
      actions.className = 'actions';
      const regen = document.createElement('button');
      regen.type = 'button';
      regen.className = 'regenerate';
      regen.textContent = 'Regenerate';
      regen.addEventListener('click', () => void this.regenerate());
      actions.appendChild(regen);
      div.appendChild(actions);
    }
  }

  private setError(msg: string | undefined): void {
    const p = $('error');
    p.hidden = msg === undefined;
    p.textContent = msg ?? '';
  }

  private async send(): Promise<void> {
    const input = $<HTMLTextAreaElement>('input');
    const text = input.value.trim();
    if (!text || this.abort) return;
    input.value = '';
    if (!this.current) {
      this.current = { id: crypto.randomUUID(), title: text.slice(0, 60), updated: Date.now(), messages: [] };
      $('title').textContent = this.current.title;
    }
    const m: Message = { role: 'user', content: text };
    this.current.messages.push(m);
    // the previous reply loses its Regenerate button
    const views = $('messages');
    views.lastElementChild?.querySelector('.actions')?.remove();
    views.appendChild(this.messageView(m, false));
    // listed and kept from the first message, whatever becomes of the reply
    await this.store.put(this.current);
    await this.refreshList();
    await this.reply();
  }

  private async regenerate(): Promise<void> {
    const c = this.current;
    if (!c || this.abort || c.messages.at(-1)?.role !== 'assistant') return;
    c.messages.pop();
    $('messages').lastElementChild?.remove();
    await this.reply();
  }

  /** Streams the assistant's reply to the conversation so far, then saves it. */
  private async reply(): Promise<void> {
    const c = this.current!;
    const m: Message = { role: 'assistant', content: '' };
    const div = this.messageView(m, false, true);
    $('messages').appendChild(div);
    const abort = new AbortController();
    this.abort = abort;
    this.setBusy(true);
    this.setError(undefined);
    const history = this.settings.system ? [{ role: 'system' as const, content: this.settings.system }] : [];
    let pending = false;
    try {
      await streamReply([...history, ...c.messages], this.settings, abort.signal, (content, reasoning) => {
        m.content += content;
        if (reasoning) m.reasoning = (m.reasoning ?? '') + reasoning;
        // one redraw per frame, however many pieces arrive
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          if (this.abort === abort) this.fill(div, m, false, true);
        });
      });
    } catch (e) {
      m.incomplete = true;
      if (!abort.signal.aborted) this.setError((e as Error).message);
    } finally {
      if (this.abort === abort) this.abort = undefined;
      this.setBusy(false);
    }
    c.messages.push(m);
    c.updated = Date.now();
    if (!this.deleted.has(c.id)) await this.store.put(c);
    // still the conversation on screen (not switched away meanwhile)
    if (this.current === c) this.fill(div, m, true);
    await this.refreshList();
  }

  private setBusy(busy: boolean): void {
    $('send').hidden = busy;
    $('stop').hidden = !busy;
  }
}

// started only as the page's script (tests import the module to call its renderer)
if (document.getElementById('composer') && !document.body.dataset.started) {
  document.body.dataset.started = '1';
  Store.open()
    .then((store) => new ChatPage(store).start())
    .catch((e: Error) => {
      const p = document.getElementById('error');
      if (p) {
        p.hidden = false;
        p.textContent = `The chat page could not start: ${e.message}`;
      }
    });
}
