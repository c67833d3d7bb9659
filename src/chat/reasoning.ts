// Reasoning blocks in replies (<think>…</think>: Qwen3, Qwen3.5, DeepSeek-R1 and the
// models that copy them), split off as llama.cpp's reasoning_format "auto" / "deepseek"
// does: what the model writes inside the block is `reasoning_content` (trimmed), what
// follows it (after its whitespace) is the content. A template whose generation prompt
// already opens the block ("…assistant\n<think>\n") leaves the model inside it from its
// first token (llama.cpp's thinking_forced_open): the reply is reasoning until the closing
// tag, and all reasoning when the tag never comes. output.ts splits replies as they
// stream; splitReasoning does it for a whole reply.

export const THINK_START = '<think>';
export const THINK_END = '</think>';

/** Whether a template writes reasoning blocks (both tags appear in its text). */
export function templateThinks(template: string): boolean {
  return template.includes(THINK_START) && template.includes(THINK_END);
}

/** Whether a rendered prompt ends inside an open reasoning block (llama.cpp's thinking_forced_open). */
export function thinkingForcedOpen(prompt: string, start = THINK_START): boolean {
  const at = prompt.trimEnd();
  return at.endsWith(start);
}

/** A whole reply's reasoning (undefined when it has none) and content. */
export function splitReasoning(
  text: string,
  forcedOpen: boolean,
  start = THINK_START,
  end = THINK_END,
): { reasoning_content?: string; content: string } {
  let rest = text;
  if (!forcedOpen) {
    const lead = /^\s*/.exec(text)![0].length;
    if (!text.startsWith(start, lead)) return { content: text };
    rest = text.slice(lead + start.length);
  }
  const at = rest.indexOf(end);
  const reasoning = (at < 0 ? rest : rest.slice(0, at)).trim();
  const content = at < 0 ? '' : rest.slice(at + end.length).replace(/^\s+/, '');
  return reasoning ? { reasoning_content: reasoning, content } : { content };
}
