// Reasoning blocks in replies (<think>…</think>, Qwen3 / Qwen3.5 / DeepSeek-R1 style), split
// off as llama.cpp's reasoning_format "auto" does: what the model writes inside the block
// is `reasoning_content` (trimmed), what follows it (after its whitespace) is the content.
// A template whose generation prompt already opens the block (Qwen3.5 with thinking on:
// "…assistant\n<think>\n") leaves the model inside it from its first token: the reply is
// reasoning until the closing tag, and all reasoning when the tag never comes.

export const THINK_START = '<think>';
export const THINK_END = '</think>';

/** Whether a template writes reasoning blocks (both tags appear in its text). */
export function templateThinks(template: string): boolean {
  return template.includes(THINK_START) && template.includes(THINK_END);
}

/** Whether a rendered prompt ends inside an open reasoning block (llama.cpp's thinking_forced_open). */
export function thinkingForcedOpen(prompt: string): boolean {
  return /<think>\s*$/.test(prompt);
}

/** A reply's reasoning (undefined when it has none) and content. */
export function splitReasoning(text: string, forcedOpen: boolean): { reasoning_content?: string; content: string } {
  let rest = text;
  if (!forcedOpen) {
    const lead = /^\s*/.exec(text)![0].length;
    if (!text.startsWith(THINK_START, lead)) return { content: text };
    rest = text.slice(lead + THINK_START.length);
  }
  const end = rest.indexOf(THINK_END);
  const reasoning = (end < 0 ? rest : rest.slice(0, end)).trim();
  const content = end < 0 ? '' : rest.slice(end + THINK_END.length).replace(/^\s+/, '');
  return reasoning ? { reasoning_content: reasoning, content } : { content };
}

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);

/**
 * splitReasoning over a reply as it grows (one call per streamed piece, each given the whole
 * text so far): text that may still become a tag is held back, so each answer's reasoning
 * and content only ever extend the previous ones (deltas are `cur.slice(prev.length)`), and
 * the last answer for the whole text is splitReasoning's. Each call costs about the new text.
 */
export class ReasoningStream {
  private phase: 'start' | 'reasoning' | 'after' | 'content';
  /** Where the reasoning's text begins (after the opening tag and its whitespace, once seen). */
  private body = 0;
  private bodySeen = false;
  /** Where the search for the closing tag resumes; then where the reasoning ends. */
  private scan = 0;
  /** Where the content begins (after the closing tag and its whitespace, once seen). */
  private contentAt = 0;
  private contentSeen = false;
  private reasoning = '';

  constructor(forcedOpen: boolean) {
    this.phase = forcedOpen ? 'reasoning' : 'start';
  }

  update(text: string): { reasoning_content?: string; content: string } {
    if (this.phase === 'start') {
      let lead = 0;
      while (lead < text.length && isSpace(text.charCodeAt(lead))) lead++;
      const rest = text.length - lead;
      if (rest < THINK_START.length && THINK_START.startsWith(text.slice(lead))) return { content: '' };
      if (!text.startsWith(THINK_START, lead)) this.phase = 'content';
      else {
        this.phase = 'reasoning';
        this.body = this.scan = lead + THINK_START.length;
      }
    }
    if (this.phase === 'content') return { content: text };
    if (this.phase === 'reasoning') {
      if (!this.bodySeen) {
        while (this.body < text.length && isSpace(text.charCodeAt(this.body))) this.body++;
        this.bodySeen = this.body < text.length;
        this.scan = Math.max(this.scan, this.body);
      }
      const end = text.indexOf(THINK_END, this.scan);
      let stop: number;
      if (end >= 0) {
        this.phase = 'after';
        this.contentAt = end + THINK_END.length;
        stop = end;
      } else {
        // hold back a tail that could begin the closing tag
        let held = Math.min(THINK_END.length - 1, text.length - this.scan);
        while (held > 0 && !THINK_END.startsWith(text.slice(text.length - held))) held--;
        stop = text.length - held;
        this.scan = stop;
      }
      while (stop > this.body && isSpace(text.charCodeAt(stop - 1))) stop--;
      this.reasoning = stop > this.body ? text.slice(this.body, stop) : '';
      if (this.phase === 'reasoning') return this.answer('');
    }
    if (!this.contentSeen) {
      while (this.contentAt < text.length && isSpace(text.charCodeAt(this.contentAt))) this.contentAt++;
      this.contentSeen = this.contentAt < text.length;
    }
    return this.answer(this.contentSeen ? text.slice(this.contentAt) : '');
  }

  private answer(content: string): { reasoning_content?: string; content: string } {
    return this.reasoning ? { reasoning_content: this.reasoning, content } : { content };
  }
}
