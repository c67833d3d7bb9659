// The chat page: conversations (a tree of messages each, kept in IndexedDB), replies
// streamed from /v1/chat/completions, a model picker fed by /v1/models, settings,
// attachments. State lives in the App component; a conversation object is mutated in
// place while its reply streams and redrawn at most once per frame.
import type { JSX } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiClient, chatRequest, type Modalities, type ModelInfo, splitThink } from './api.js';
import { acceptFor, readAttachment } from './attachments.js';
import { copyText, MarkdownView, onMathReady } from './markdown.js';
import {
  applyTheme,
  loadSettings,
  SAMPLING_FIELDS,
  type Settings,
  sampling,
  saveSettings,
  type Theme,
} from './settings.js';
import { exportJson, MAX_IMPORT_BYTES, parseImport, type Store } from './store.js';
import {
  type Attachment,
  append,
  type Conversation,
  fork,
  type Node,
  newConversation,
  path,
  selectBranch,
  siblings,
} from './tree.js';

interface Streaming {
  conversation: string;
  node: string;
  abort: AbortController;
}

/** Redraws every Markdown once KaTeX has loaded. */
function useMathVersion(): number {
  const [v, setV] = useState(0);
  useEffect(() => onMathReady(() => setV((x) => x + 1)), []);
  return v;
}

function Markdown({ text }: { text: string }): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  const view = useRef<MarkdownView | undefined>(undefined);
  const math = useMathVersion();
  useLayoutEffect(() => view.current?.reset(), [math]);
  useLayoutEffect(() => {
    if (!ref.current) return;
    view.current ??= new MarkdownView(ref.current);
    view.current.render(text);
  }, [text, math]);
  return <div class="content" ref={ref} />;
}

function AttachmentChips({ list, onRemove }: { list: Attachment[]; onRemove?: (i: number) => void }) {
  if (list.length === 0) return null;
  return (
    <ul class="chips" aria-label="Attachments">
      {list.map((a, i) => (
        <li key={`${a.name}-${i}`} class={`chip kind-${a.kind}`}>
          {a.kind === 'image' && a.data.startsWith('data:image/') && <img class="thumb" src={a.data} alt="" />}
          <span class="kind">{a.kind}</span>
          <span>{a.name}</span>
          {onRemove && (
            <button type="button" aria-label={`Remove ${a.name}`} onClick={() => onRemove(i)}>
              ×
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}

interface MessageProps {
  conv: Conversation;
  node: Node;
  streaming: boolean;
  busy: boolean;
  onSwitch: (id: string) => void;
  onRegenerate: (n: Node) => void;
  onEdit: (n: Node, text: string) => void;
  onBranch: (n: Node) => void;
}

function Message({ conv, node, streaming, busy, onSwitch, onRegenerate, onEdit, onBranch }: MessageProps) {
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const sibs = siblings(conv, node);
  const at = sibs.indexOf(node.id);
  const nav = sibs.length > 1 && (
    <span class="branches">
      <button
        type="button"
        class="prev"
        aria-label="Previous version"
        disabled={busy || at <= 0}
        onClick={() => onSwitch(sibs[at - 1]!)}
      >
        ‹
      </button>
      <span class="branch-pos">
        {at + 1}/{sibs.length}
      </span>
      <button
        type="button"
        class="next"
        aria-label="Next version"
        disabled={busy || at >= sibs.length - 1}
        onClick={() => onSwitch(sibs[at + 1]!)}
      >
        ›
      </button>
    </span>
  );
  if (node.role === 'user') {
    if (editing !== undefined) {
      return (
        <div class="msg user editing" data-id={node.id}>
          <textarea
            class="edit-text"
            aria-label="Edit message"
            value={editing}
            rows={Math.min(12, editing.split('\n').length + 1)}
            onInput={(e) => setEditing(e.currentTarget.value)}
          />
          <div class="actions">
            <button
              type="button"
              class="resend"
              disabled={busy || !editing.trim()}
              onClick={() => {
                setEditing(undefined);
                onEdit(node, editing.trim());
              }}
            >
              Send
            </button>
            <button type="button" class="cancel" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
        </div>
      );
    }
    return (
      <div class="msg user" data-id={node.id}>
        <div class="text">{node.content}</div>
        <AttachmentChips list={node.attachments ?? []} />
        <div class="actions">
          {nav}
          <button type="button" class="edit" disabled={busy} onClick={() => setEditing(node.content)}>
            Edit
          </button>
        </div>
      </div>
    );
  }
  // reasoning from the server's reasoning_content, or a <think> block left in the content
  const think = node.reasoning === undefined ? splitThink(node.content) : undefined;
  const reasoning = node.reasoning ?? think?.reasoning;
  const content = think ? think.content : node.content;
  const state = streaming ? 'streaming' : node.incomplete ? 'stopped' : 'done';
  return (
    <div class="msg assistant" data-id={node.id} data-state={state}>
      {reasoning ? (
        <details class="reasoning">
          <summary>{streaming && !content ? 'Reasoning…' : 'Reasoning'}</summary>
          <div class="reasoning-text">{reasoning}</div>
        </details>
      ) : null}
      <Markdown text={content} />
      {node.incomplete && !streaming && <div class="note">(stopped)</div>}
      {node.finish === 'length' && <div class="note">(cut at the token limit)</div>}
      {!streaming && (
        <div class="actions">
          {nav}
          <button type="button" class="copy-reply" onClick={() => void copyText(content)}>
            Copy
          </button>
          <button type="button" class="regenerate" disabled={busy} onClick={() => onRegenerate(node)}>
            Regenerate
          </button>
          <button
            type="button"
            class="branch"
            title="A new conversation from here"
            disabled={busy}
            onClick={() => onBranch(node)}
          >
            Branch
          </button>
          {node.model && <span class="model-name">{node.model}</span>}
          {node.stats && (
            <span class="stats">
              {node.stats.tokens} tokens, {node.stats.perSecond.toFixed(1)} tokens/s
            </span>
          )}
        </div>
      )}
    </div>
  );
}

function SettingsPanel({ settings, onChange }: { settings: Settings; onChange: (s: Settings) => void }) {
  return (
    <form id="settings" class="settings" onSubmit={(e) => e.preventDefault()}>
      <label class="wide">
        System prompt
        <textarea
          id="system"
          rows={3}
          value={settings.system}
          onInput={(e) => onChange({ ...settings, system: e.currentTarget.value })}
        />
      </label>
      {SAMPLING_FIELDS.map((f) => (
        <label key={f.key}>
          {f.label}
          <input
            id={`s-${f.key.replace('_', '-')}`}
            type="number"
            inputMode="decimal"
            min={f.min}
            max={f.max}
            step={f.step}
            placeholder="default"
            value={settings.sampling[f.key]}
            onInput={(e) =>
              onChange({ ...settings, sampling: { ...settings.sampling, [f.key]: e.currentTarget.value } })
            }
          />
        </label>
      ))}
      <label>
        Theme
        <select
          id="theme"
          value={settings.theme}
          onChange={(e) => onChange({ ...settings, theme: e.currentTarget.value as Theme })}
        >
          <option value="system">System</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </label>
      <label>
        API key
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={settings.apiKey}
          onInput={(e) => onChange({ ...settings, apiKey: e.currentTarget.value })}
        />
      </label>
    </form>
  );
}

export function App({ store }: { store: Store }) {
  const [settings, setSettingsState] = useState<Settings>(loadSettings);
  const api = useMemo(() => new ApiClient(settings.apiKey), []);
  api.apiKey = settings.apiKey;
  const [list, setList] = useState<Conversation[]>([]);
  const [current, setCurrent] = useState<Conversation | undefined>(undefined);
  const [streaming, setStreaming] = useState<Streaming | undefined>(undefined);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [models, setModels] = useState<ModelInfo[]>([]);
  const [modalities, setModalities] = useState<Modalities>({ vision: false, audio: false });
  const [pending, setPending] = useState<Attachment[]>([]);
  const [input, setInput] = useState('');
  const [showSettings, setShowSettings] = useState(false);
  const [sidebar, setSidebar] = useState(false);
  const [, setTick] = useState(0);
  const deleted = useRef(new Set<string>());
  const askedModels = useRef(false);
  const frame = useRef(0);
  const stream = useRef<Streaming | undefined>(undefined);
  const sending = useRef(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const importInput = useRef<HTMLInputElement>(null);
  const end = useRef<HTMLDivElement>(null);

  const redraw = () => setTick((t) => t + 1);
  const setSettings = (s: Settings) => {
    setSettingsState(s);
    saveSettings(s);
  };
  const refreshList = async () => setList(await store.list());
  const model = models.find((m) => m.id === settings.model)?.id ?? models[0]?.id;

  useEffect(() => applyTheme(settings.theme), [settings.theme]);
  useEffect(() => {
    void refreshList();
  }, []);
  // the models, asked again once an API key typed in Settings settles
  useEffect(() => {
    const timer = setTimeout(
      () =>
        api
          .models()
          .then((m) => {
            setModels(m);
            setError('');
          })
          .catch((e: Error) => setError(e.message)),
      askedModels.current ? 400 : 0,
    );
    askedModels.current = true;
    return () => clearTimeout(timer);
  }, [settings.apiKey]);
  // /props answers for a loaded model; a router's unloaded one (an error there) takes what
  // its list entry says (the projector it will run), so attachments are offered before a reply
  const listed = models.find((m) => m.id === model)?.modalities;
  const askModalities = (m: string | undefined) => {
    if (!m) return;
    api
      .modalities(m)
      .then(setModalities)
      .catch(() => setModalities(listed ?? { vision: false, audio: false }));
  };
  useEffect(() => askModalities(model), [model, listed?.vision, listed?.audio]);
  useEffect(() => {
    document.title = current ? `${current.title} · llama-ts` : 'llama-ts chat';
  }, [current?.title]);
  // follow the reply as it grows, unless the reader scrolled up
  useLayoutEffect(() => {
    const box = end.current?.parentElement;
    if (box && box.scrollHeight - box.scrollTop - box.clientHeight < 120) end.current?.scrollIntoView({ block: 'end' });
  });

  const show = (c: Conversation | undefined) => {
    stream.current?.abort.abort();
    setCurrent(c);
    setError('');
    setSidebar(false);
  };

  /** Streams a reply under `parent` (the user's message it answers), then saves the conversation. */
  const reply = async (c: Conversation, parent: string) => {
    const history = path(c, parent);
    const n = append(c, parent, { role: 'assistant', content: '', ...(model ? { model } : {}) });
    const s: Streaming = { conversation: c.id, node: n.id, abort: new AbortController() };
    stream.current = s;
    setStreaming(s);
    setError('');
    const body = chatRequest(history, settings.system, sampling(settings), model);
    try {
      const end = await api.stream(body, s.abort.signal, (content, reasoning) => {
        n.content += content;
        if (reasoning) n.reasoning = (n.reasoning ?? '') + reasoning;
        // one redraw per frame, however many pieces arrive
        if (frame.current) return;
        frame.current = requestAnimationFrame(() => {
          frame.current = 0;
          redraw();
        });
      });
      if (end.finish) n.finish = end.finish;
      if (end.stats) n.stats = end.stats;
    } catch (e) {
      n.incomplete = true;
      if (!s.abort.signal.aborted) setError((e as Error).message);
    } finally {
      if (stream.current === s) stream.current = undefined;
      setStreaming((x) => (x === s ? undefined : x));
    }
    c.updated = Date.now();
    if (!deleted.current.has(c.id)) await store.put(c);
    await refreshList();
    redraw();
    // a router may have loaded (or let go of) models meanwhile, this one included
    if (models.length > 1) {
      api.models().then(setModels, () => undefined);
      askModalities(model);
    }
  };

  /** Runs `f` unless a message is being sent or a reply streams (a double click sends once). */
  const once = async (f: () => Promise<void>) => {
    if (sending.current || stream.current) return;
    sending.current = true;
    try {
      await f();
    } finally {
      sending.current = false;
    }
  };

  const send = () =>
    once(async () => {
      const text = input.trim();
      if (!text && pending.length === 0) return;
      let c = current;
      if (!c) {
        c = newConversation((text || pending[0]!.name).slice(0, 60));
        setCurrent(c);
      }
      const u = append(c, c.leaf, { role: 'user', content: text, ...(pending.length ? { attachments: pending } : {}) });
      setInput('');
      setPending([]);
      // listed and kept from the first message, whatever becomes of the reply
      await store.put(c);
      await refreshList();
      await reply(c, u.id);
    });

  const regenerate = (n: Node) =>
    once(async () => {
      if (current && n.parent) await reply(current, n.parent);
    });
  const edit = (n: Node, text: string) =>
    once(async () => {
      if (!current) return;
      // a sibling of the message edited: the old branch stays, one click away
      const u = append(current, n.parent, {
        role: 'user',
        content: text,
        ...(n.attachments ? { attachments: n.attachments } : {}),
      });
      await store.put(current);
      await reply(current, u.id);
    });
  const switchBranch = async (id: string) => {
    if (!current) return;
    selectBranch(current, id);
    redraw();
    await store.put(current);
  };
  const branch = async (n: Node) => {
    if (!current || stream.current) return;
    const c = fork(current, n.id);
    await store.put(c);
    await refreshList();
    show(c);
  };
  const remove = async (c: Conversation) => {
    deleted.current.add(c.id);
    await store.delete(c.id);
    if (current?.id === c.id) show(undefined);
    await refreshList();
  };

  const attach = async (files: FileList | null) => {
    setError('');
    // copied before the first await: the input is cleared right after this call
    for (const f of [...(files ?? [])]) {
      try {
        const a = await readAttachment(f, modalities);
        setPending((p) => [...p, a]);
      } catch (e) {
        setError((e as Error).message);
      }
    }
  };

  const exportAll = async () => {
    const blob = new Blob([exportJson(await store.list())], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `llama-ts-chats-${new Date().toISOString().slice(0, 10)}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  };
  const importFile = async (files: FileList | null) => {
    const f = files?.[0];
    if (!f) return;
    setError('');
    try {
      if (f.size > MAX_IMPORT_BYTES) throw new Error(`${f.name}: ${f.size} bytes, over ${MAX_IMPORT_BYTES}`);
      const convs = parseImport(await f.text(), f.name);
      for (const c of convs) {
        deleted.current.delete(c.id);
        await store.put(c);
      }
      await refreshList();
      setNotice(`Imported ${convs.length} conversation${convs.length === 1 ? '' : 's'} from ${f.name}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const busy = streaming !== undefined;
  const shown = current ? path(current) : [];
  return (
    <div id="app-root" class={sidebar ? 'sidebar-open' : ''}>
      <nav id="sidebar" aria-label="Conversations">
        <button id="new-chat" type="button" onClick={() => show(undefined)}>
          New chat
        </button>
        <ul id="conversations">
          {list.map((c) => (
            <li key={c.id} class={c.id === current?.id ? 'current' : ''} data-id={c.id}>
              <button type="button" class="open" title={c.title} onClick={() => show(c)}>
                {c.title}
              </button>
              <button type="button" class="delete" aria-label={`Delete ${c.title}`} onClick={() => void remove(c)}>
                ×
              </button>
            </li>
          ))}
        </ul>
        <div class="sidebar-tools">
          <button id="export" type="button" onClick={() => void exportAll()}>
            Export
          </button>
          <button id="import" type="button" onClick={() => importInput.current?.click()}>
            Import
          </button>
          <input
            ref={importInput}
            id="import-file"
            type="file"
            accept="application/json,.json"
            hidden
            aria-label="Import conversations"
            onChange={(e) => {
              void importFile(e.currentTarget.files);
              e.currentTarget.value = '';
            }}
          />
        </div>
      </nav>
      <main
        // at a phone's width the list lies over the chat: a touch beside it, or Escape, closes it
        onClick={(e) => !(e.target as Element).closest('#toggle-sidebar') && setSidebar(false)}
        onKeyDown={(e) => e.key === 'Escape' && setSidebar(false)}
      >
        <header>
          <button
            id="toggle-sidebar"
            type="button"
            aria-label="Conversations"
            aria-expanded={sidebar}
            onClick={() => setSidebar(!sidebar)}
          >
            ☰
          </button>
          <h1 id="title">{current?.title ?? 'llama-ts'}</h1>
          <select
            id="model"
            aria-label="Model"
            value={model ?? ''}
            disabled={busy || models.length < 2}
            onChange={(e) => setSettings({ ...settings, model: e.currentTarget.value })}
          >
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
                {m.state ? ` (${m.state})` : ''}
              </option>
            ))}
          </select>
          <button
            id="toggle-settings"
            type="button"
            aria-expanded={showSettings}
            onClick={() => setShowSettings(!showSettings)}
          >
            Settings
          </button>
        </header>
        {showSettings && <SettingsPanel settings={settings} onChange={setSettings} />}
        <div id="messages" aria-live="polite" aria-busy={busy}>
          {shown.length === 0 && <p class="empty">Ask anything. Replies come from {model ?? 'the server'}.</p>}
          {current &&
            shown.map((n) => (
              <Message
                key={n.id}
                conv={current}
                node={n}
                streaming={streaming?.node === n.id}
                busy={busy}
                onSwitch={(id) => void switchBranch(id)}
                onRegenerate={(node) => void regenerate(node)}
                onEdit={(node, text) => void edit(node, text)}
                onBranch={(node) => void branch(node)}
              />
            ))}
          <div ref={end} />
        </div>
        <p id="error" role="alert" hidden={!error}>
          {error}
        </p>
        <p id="notice" role="status" hidden={!notice}>
          {notice}
        </p>
        <form
          id="composer"
          onSubmit={(e) => {
            e.preventDefault();
            void send();
          }}
        >
          <AttachmentChips list={pending} onRemove={(i) => setPending((p) => p.filter((_, j) => j !== i))} />
          <div class="row">
            <button
              id="attach"
              type="button"
              title={`Attach text files${modalities.vision ? ', images' : ''}${modalities.audio ? ', audio' : ''}`}
              onClick={() => fileInput.current?.click()}
            >
              Attach
            </button>
            <input
              ref={fileInput}
              id="attach-file"
              type="file"
              multiple
              hidden
              accept={acceptFor(modalities)}
              aria-label="Attach files"
              onChange={(e) => {
                void attach(e.currentTarget.files);
                e.currentTarget.value = '';
              }}
            />
            <textarea
              id="input"
              rows={2}
              placeholder="Message"
              aria-label="Message"
              value={input}
              onInput={(e) => setInput(e.currentTarget.value)}
              onKeyDown={(e) => {
                // Enter sends, Shift+Enter is a new line
                if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                  e.preventDefault();
                  void send();
                }
              }}
            />
            {busy ? (
              <button id="stop" type="button" onClick={() => stream.current?.abort.abort()}>
                Stop
              </button>
            ) : (
              <button id="send" type="submit">
                Send
              </button>
            )}
          </div>
        </form>
      </main>
    </div>
  );
}
