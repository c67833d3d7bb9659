// Model output → sanitised DOM: marked (GFM) to HTML, code highlighted by highlight.js (a
// few languages), math by KaTeX (MathML, loaded on first use), then DOMPurify, and only
// then into the page. Raw HTML a model writes is shown as text; links are http(s) or
// mailto only; nothing of the model's can carry a script, a handler or a style.
import DOMPurify, { type Config } from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';

for (const [name, lang] of Object.entries({
  bash,
  c,
  cpp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
}))
  hljs.registerLanguage(name, lang);

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** The URL if it is absolute http(s) or mailto, else undefined (javascript:, data:, relative…). */
export function safeHref(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : undefined;
  } catch {
    return undefined;
  }
}

// ---- math: KaTeX, loaded as dist/webui/math.js the first time a reply holds math ----

type MathRenderer = (tex: string, display: boolean) => string;
let renderMath: MathRenderer | undefined;
let mathLoading: Promise<void> | undefined;
const mathWaiters = new Set<() => void>();

/** Calls `cb` once KaTeX is loaded (for redrawing what showed math as source meanwhile). */
export function onMathReady(cb: () => void): () => void {
  mathWaiters.add(cb);
  return () => mathWaiters.delete(cb);
}

function loadMath(): void {
  // the same query as this script's URL: the server's cache key for this build
  if (mathLoading) return;
  const url = new URL(`math.js${new URL(import.meta.url).search}`, import.meta.url).href;
  mathLoading = (import(/* @vite-ignore */ url) as Promise<{ renderMath: MathRenderer }>)
    .then((m) => {
      renderMath = m.renderMath;
      for (const cb of mathWaiters) cb();
    })
    .catch((e: Error) => console.error(`math.js: ${e.message}`));
}

function mathHtml(tex: string, display: boolean): string {
  if (renderMath) return renderMath(tex, display);
  loadMath();
  return `<code class="math-source">${escapeHtml(tex)}</code>`;
}

interface MathToken {
  type: 'math';
  raw: string;
  text: string;
  display: boolean;
}

const BLOCK_MATH = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/;
// $$…$$ or \[…\] (display) within a line, $…$ not around spaces and not followed by a
// digit (so "$5 and $6" stays text), or \(…\)
const INLINE_MATH =
  /^(?:\$\$([^$]+?)\$\$|\\\[([\s\S]+?)\\\]|\$(?![\s$])((?:\\.|[^\\\n$])+?)(?<!\s)\$(?!\d)|\\\(([\s\S]+?)\\\))/;

const md = new Marked({
  gfm: true,
  breaks: true,
  extensions: [
    {
      name: 'math',
      level: 'block',
      // only after a line's start (marked asks from its text's second character on): a
      // paragraph is not cut before math inside a line
      start(src) {
        const m = /\n[ \t]*(?:\$\$|\\\[)/.exec(src);
        return m ? m.index + m[0].length - 2 : undefined;
      },
      tokenizer(src) {
        const m = BLOCK_MATH.exec(src);
        if (m) return { type: 'math', raw: m[0], text: (m[1] ?? m[2] ?? '').trim(), display: true };
        return undefined;
      },
      renderer: (t) => `<p class="math-display">${mathHtml((t as MathToken).text, true)}</p>`,
    },
    {
      name: 'inlineMath',
      level: 'inline',
      start: (src) => src.match(/\$|\\[([]/)?.index,
      tokenizer(src) {
        const m = INLINE_MATH.exec(src);
        if (!m) return undefined;
        const display = m[1] !== undefined || m[2] !== undefined;
        return { type: 'inlineMath', raw: m[0], text: (m[1] ?? m[2] ?? m[3] ?? m[4] ?? '').trim(), display };
      },
      renderer: (t) => mathHtml((t as MathToken).text, (t as MathToken).display),
    },
  ],
  renderer: {
    // a model's HTML is shown, not rendered
    html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHtml(text),
    code({ text, lang }: Tokens.Code) {
      const name = (lang ?? '').trim().split(/\s/)[0]!.toLowerCase();
      const known = name && hljs.getLanguage(name) ? name : '';
      const body = known ? hljs.highlight(text, { language: known, ignoreIllegals: true }).value : escapeHtml(text);
      const label = name ? ` data-lang="${escapeHtml(name)}"` : '';
      return `<pre><code class="hljs${known ? ` language-${known}` : ''}"${label}>${body}</code></pre>\n`;
    },
    link(this: { parser: { parseInline(t: Tokens.Link['tokens']): string } }, t: Tokens.Link) {
      const href = safeHref(t.href);
      if (!href) return escapeHtml(t.raw);
      return `<a href="${escapeHtml(href)}">${this.parser.parseInline(t.tokens)}</a>`;
    },
    // the page loads no images from elsewhere (its CSP would refuse them): a link instead
    image({ href, text, raw }: Tokens.Image) {
      const safe = safeHref(href);
      return safe ? `<a href="${escapeHtml(safe)}">🖼 ${escapeHtml(text || safe)}</a>` : escapeHtml(raw);
    },
  },
});

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});
const PURIFY: Config & { RETURN_DOM_FRAGMENT: true } = {
  USE_PROFILES: { html: true, mathMl: true },
  FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'video', 'audio'],
  FORBID_ATTR: ['style', 'id', 'name', 'srcset'],
  // URLs: http(s) and mailto only; values without a scheme (MathML's display="block") pass
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  RETURN_DOM_FRAGMENT: true,
};

/** Each code block gets a bar with its language and a Copy button (made here, never from model text). */
function addCodeBars(root: DocumentFragment): void {
  // what may scroll sideways can take the focus, to be scrolled with the keyboard
  for (const el of root.querySelectorAll('pre, .math-display')) el.setAttribute('tabindex', '0');
  for (const pre of root.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    if (!code) continue;
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const lang = document.createElement('span');
    lang.textContent = code.dataset.lang ?? '';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.title = 'Copy the code';
    copy.addEventListener('click', () => {
      void copyText(code.textContent ?? '').then((ok) => {
        copy.textContent = ok ? 'Copied' : 'Copy failed';
        setTimeout(() => {
          copy.textContent = 'Copy';
        }, 1500);
      });
    });
    bar.append(lang, copy);
    const box = document.createElement('div');
    box.className = 'code-block';
    pre.replaceWith(box);
    box.append(bar, pre);
  }
}

/** Copies text; the Clipboard API needs a secure context (localhost is one; a LAN address is not). */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.className = 'offscreen';
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand('copy');
    ta.remove();
    return ok;
  }
}

/** Sanitised DOM nodes from marked's HTML. */
function toDom(html: string): DocumentFragment {
  const frag = purify.sanitize(html, PURIFY);
  addCodeBars(frag);
  return frag;
}

/** `text` (markdown) as sanitised DOM nodes. */
export function renderMarkdown(text: string): DocumentFragment {
  return toDom(md.parse(text, { async: false }) as string);
}

/**
 * Markdown kept in an element and redrawn block by block: the blocks at the start of the new
 * text that are the same as before keep their nodes, and only the rest is lexed, rendered
 * and sanitised again. While a reply streams that is its last blocks, so a frame's work
 * stays about the same as the reply grows (the whole text each frame: quadratic).
 */
export class MarkdownView {
  private blocks: { raw: string; nodes: ChildNode[] }[] = [];

  constructor(private box: HTMLElement) {}

  /** Forgets the blocks (after KaTeX loads: the math they show as source is drawn again). */
  reset(): void {
    this.blocks = [];
    this.box.replaceChildren();
  }

  render(text: string): void {
    let keep = 0;
    let at = 0;
    while (keep < this.blocks.length && text.startsWith(this.blocks[keep]!.raw, at)) {
      at += this.blocks[keep]!.raw.length;
      keep++;
    }
    // the last blocks kept may read otherwise with what follows them (a list, a paragraph)
    for (let back = 0; back < 2 && keep > 0; back++) at -= this.blocks[--keep]!.raw.length;
    for (const b of this.blocks.splice(keep)) for (const n of b.nodes) n.remove();
    const tokens = md.lexer(text.slice(at));
    for (const t of tokens) {
      const one = Object.assign([t], { links: tokens.links });
      const frag = toDom(md.parser(one) as string);
      const nodes = [...frag.childNodes];
      this.box.appendChild(frag);
      this.blocks.push({ raw: t.raw, nodes });
    }
  }
}
