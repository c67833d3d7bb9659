// A minimal markdown renderer for model output: fenced code blocks, inline code, bold,
// italic and links (http and https only), built from DOM nodes and text nodes. Never
// innerHTML: whatever a model writes (tags, event handlers, javascript: links) stays text.

// code, **bold**, *italic* or _italic_ (not inside a word: snake_case stays), [label](url)
const INLINE =
  /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\s][^*\n]*?\*|(?<!\w)_[^_\s][^_\n]*?_(?!\w))|(\[[^\]\n]+\]\([^)\s]+\))/g;

/** The URL if it is absolute http(s), else undefined (javascript:, data:, relative…). */
export function safeHref(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

function inline(text: string, into: Node): void {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    const at = m.index ?? 0;
    if (at > last) into.appendChild(document.createTextNode(text.slice(last, at)));
    last = at + m[0].length;
    const [whole, code, bold, italic, link] = m;
    if (code) {
      const el = document.createElement('code');
      el.textContent = code.slice(1, -1);
      into.appendChild(el);
    } else if (bold) {
      const el = document.createElement('strong');
      inline(bold.slice(2, -2), el);
      into.appendChild(el);
    } else if (italic) {
      const el = document.createElement('em');
      inline(italic.slice(1, -1), el);
      into.appendChild(el);
    } else if (link) {
      const close = link.indexOf('](');
      const label = link.slice(1, close);
      const href = safeHref(link.slice(close + 2, -1));
      if (href === undefined) {
        // not a web link: shown as the text it is
        into.appendChild(document.createTextNode(whole));
        continue;
      }
      const a = document.createElement('a');
      a.href = href;
      a.rel = 'noopener noreferrer nofollow';
      a.target = '_blank';
      a.textContent = label;
      into.appendChild(a);
    }
  }
  if (last < text.length) into.appendChild(document.createTextNode(text.slice(last)));
}

function paragraphs(text: string, into: Node): void {
  for (const block of text.split(/\n{2,}/)) {
    if (block.trim() === '') continue;
    const p = document.createElement('p');
    const lines = block.split('\n');
    lines.forEach((line, i) => {
      if (i > 0) p.appendChild(document.createElement('br'));
      inline(line, p);
    });
    into.appendChild(p);
  }
}

/** `text` as DOM nodes (an unclosed code fence, as while streaming, runs to the end). */
export function renderMarkdown(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  const fence = /^```([^\n`]*)\n([\s\S]*?)(?:\n```[ \t]*(?:\n|$)|$)/gm;
  let last = 0;
  for (const m of text.matchAll(fence)) {
    const at = m.index ?? 0;
    paragraphs(text.slice(last, at), out);
    last = at + m[0].length;
    const pre = document.createElement('pre');
    const code = document.createElement('code');
    const lang = (m[1] ?? '').trim();
    if (lang) code.dataset.lang = lang;
    code.textContent = m[2] ?? '';
    pre.appendChild(code);
    out.appendChild(pre);
  }
  paragraphs(text.slice(last), out);
  return out;
}
