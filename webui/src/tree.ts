// A conversation is a tree of messages: editing a message or regenerating a reply adds a
// sibling (a branch) instead of overwriting; `leaf` names the branch on screen, and the
// path from the root to it is what is sent.

export interface Attachment {
  kind: 'text' | 'image' | 'audio';
  name: string;
  /** text: the file's text; image: a data: URL; audio: base64 of the file. */
  data: string;
  /** audio: OpenAI's input_audio format ('wav' or 'mp3'). */
  format?: string;
}

export interface Node {
  id: string;
  parent: string | null;
  role: 'user' | 'assistant';
  content: string;
  reasoning?: string;
  attachments?: Attachment[];
  /** The model that wrote a reply. */
  model?: string;
  /** The reply was stopped or failed before its end. */
  incomplete?: boolean;
  /** The reply's finish_reason ('length': cut at the token limit). */
  finish?: string;
  /** Tokens generated and their rate, from the server's timings. */
  stats?: { tokens: number; perSecond: number };
  created: number;
  children: string[];
}

export interface Conversation {
  id: string;
  title: string;
  updated: number;
  nodes: Record<string, Node>;
  /** The first messages of each branch from the start. */
  roots: string[];
  /** The last message of the branch on screen (null: empty). */
  leaf: string | null;
}

export const newId = (): string => crypto.randomUUID();

export function newConversation(title: string): Conversation {
  return { id: newId(), title, updated: Date.now(), nodes: {}, roots: [], leaf: null };
}

/** The messages from the first to `leaf`. */
export function path(c: Conversation, leaf: string | null = c.leaf): Node[] {
  const out: Node[] = [];
  // bounded by the number of messages: an imported file's parents may form a loop
  const max = Object.keys(c.nodes).length;
  for (let id = leaf; id !== null && out.length < max; ) {
    const n = c.nodes[id];
    if (!n) break;
    out.push(n);
    id = n.parent;
  }
  return out.reverse();
}

/** The ids of `n` and its siblings, in order of creation. */
export function siblings(c: Conversation, n: Node): string[] {
  return n.parent === null ? c.roots : (c.nodes[n.parent]?.children ?? [n.id]);
}

/** Adds a message under `parent` (null: a new first message) and makes it the leaf. */
export function append(
  c: Conversation,
  parent: string | null,
  m: Omit<Node, 'id' | 'parent' | 'children' | 'created'>,
): Node {
  const n: Node = { ...m, id: newId(), parent, children: [], created: Date.now() };
  c.nodes[n.id] = n;
  if (parent === null) c.roots.push(n.id);
  else c.nodes[parent]!.children.push(n.id);
  c.leaf = n.id;
  c.updated = Date.now();
  return n;
}

/** Shows the branch through `id`: down from it along the latest replies. */
export function selectBranch(c: Conversation, id: string): void {
  let n = c.nodes[id];
  for (let steps = Object.keys(c.nodes).length; n && n.children.length > 0 && steps > 0; steps--)
    n = c.nodes[n.children.at(-1)!];
  c.leaf = n?.id ?? null;
}

function validAttachment(a: Attachment): boolean {
  if (!a || typeof a.name !== 'string' || typeof a.data !== 'string') return false;
  if (a.kind === 'image') return a.data.startsWith('data:image/');
  return a.kind === 'text' || (a.kind === 'audio' && (a.format === 'wav' || a.format === 'mp3'));
}

/** A new conversation holding a copy of the branch up to `id` (a fork, to go on apart). */
export function fork(c: Conversation, id: string): Conversation {
  const copy = newConversation(`${c.title} (branch)`);
  let parent: string | null = null;
  for (const n of path(c, id)) {
    const { id: _id, parent: _parent, children: _children, created: _created, ...m } = n;
    parent = append(copy, parent, m).id;
  }
  return copy;
}

/** A conversation read from IndexedDB or an imported file, checked and made whole; throws naming what is wrong. */
export function normalize(raw: unknown, where: string): Conversation {
  const o = raw as Record<string, unknown> | null;
  if (!o || typeof o !== 'object' || typeof o.id !== 'string') throw new Error(`${where}: not a conversation (no id)`);
  const title = typeof o.title === 'string' ? o.title : 'Untitled';
  const updated = typeof o.updated === 'number' ? o.updated : Date.now();
  // the first page's form: a list of messages
  if (Array.isArray(o.messages)) {
    const c: Conversation = { id: o.id, title, updated, nodes: {}, roots: [], leaf: null };
    let parent: string | null = null;
    for (const m of o.messages as Record<string, unknown>[]) {
      if (m.role !== 'user' && m.role !== 'assistant') continue;
      parent = append(c, parent, {
        role: m.role,
        content: String(m.content ?? ''),
        ...(typeof m.reasoning === 'string' ? { reasoning: m.reasoning } : {}),
        ...(m.incomplete ? { incomplete: true } : {}),
      }).id;
    }
    c.updated = updated;
    return c;
  }
  const nodes = o.nodes as Record<string, Node> | undefined;
  if (!nodes || typeof nodes !== 'object') throw new Error(`${where}: conversation ${o.id} has no messages`);
  for (const [id, n] of Object.entries(nodes)) {
    if (!n || n.id !== id || (n.role !== 'user' && n.role !== 'assistant') || typeof n.content !== 'string')
      throw new Error(`${where}: conversation ${o.id}: message ${id} is not a message`);
    if (n.parent !== null && !nodes[n.parent])
      throw new Error(`${where}: message ${id}'s parent ${n.parent} is missing`);
    if (!Array.isArray(n.children) || n.children.some((k) => !nodes[k]))
      throw new Error(`${where}: message ${id} names a child that is missing`);
    // optional fields of another shape are dropped, not trusted
    if (typeof n.reasoning !== 'string') delete n.reasoning;
    if (typeof n.model !== 'string') delete n.model;
    if (typeof n.finish !== 'string') delete n.finish;
    if (typeof n.stats?.tokens !== 'number' || typeof n.stats.perSecond !== 'number') delete n.stats;
    if (typeof n.created !== 'number') n.created = updated;
    if (n.attachments !== undefined) {
      const ok = Array.isArray(n.attachments) ? n.attachments.filter(validAttachment) : [];
      if (ok.length > 0) n.attachments = ok;
      else delete n.attachments;
    }
  }
  // every message reaches a first message (no loop of parents): each walk stops at one known
  // to, so all the walks together take a step per message
  const reaches = new Set<string>();
  const count = Object.keys(nodes).length;
  for (const id of Object.keys(nodes)) {
    const walk: string[] = [];
    for (let at: string | null = id; at !== null && !reaches.has(at); at = nodes[at]!.parent) {
      walk.push(at);
      if (walk.length > count) throw new Error(`${where}: message ${id}'s parents form a loop`);
    }
    for (const w of walk) reaches.add(w);
  }
  const roots = Array.isArray(o.roots) ? (o.roots as string[]).filter((r) => nodes[r]) : [];
  const leaf = typeof o.leaf === 'string' && nodes[o.leaf] ? o.leaf : null;
  return { id: o.id, title, updated, nodes, roots, leaf };
}
