// Reading JSON that is still being written (a tool call as the model streams it): where
// an object's members are and how far each value got, the text of a string so far, and
// compact JSON text that only grows as its source grows. Nothing here parses a value
// whole; JSON.parse does that once a value is complete.

const WS = /\s/;

function skipWs(text: string, i: number): number {
  while (i < text.length && WS.test(text[i]!)) i++;
  return i;
}

/** End (exclusive) of the string starting at `start` (a quote), or -1 when it is not closed yet. */
export function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '"') return i + 1;
  }
  return -1;
}

/**
 * End (exclusive) of the JSON value starting at `start` (after whitespace), or -1 when it
 * is not complete yet (a number or literal at the very end may still grow).
 */
export function valueEnd(text: string, start: number): number {
  const i = skipWs(text, start);
  if (i >= text.length) return -1;
  const c = text[i]!;
  if (c === '"') return stringEnd(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') {
        const e = stringEnd(text, j);
        if (e < 0) return -1;
        j = e - 1;
      } else if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && /[-+0-9.eEa-z]/.test(text[j]!)) j++;
  if (j === i) return i; // not a value: nothing to take
  return j < text.length ? j : -1;
}

/** A member of an object being written: its key and where its value starts and ends (-1: not yet). */
export interface PartialMember {
  key: string;
  valueStart: number;
  valueEnd: number;
}

/** The members of the object starting at `start` (`{`) so far, and its end (-1: not closed yet). */
export function readObject(text: string, start: number): { members: PartialMember[]; end: number } {
  const members: PartialMember[] = [];
  let i = skipWs(text, start + 1);
  for (;;) {
    if (i >= text.length) return { members, end: -1 };
    if (text[i] === '}') return { members, end: i + 1 };
    if (text[i] === ',') {
      i = skipWs(text, i + 1);
      continue;
    }
    if (text[i] !== '"') return { members, end: -1 };
    const kEnd = stringEnd(text, i);
    if (kEnd < 0) return { members, end: -1 };
    let key: string;
    try {
      key = JSON.parse(text.slice(i, kEnd)) as string;
    } catch {
      return { members, end: -1 };
    }
    i = skipWs(text, kEnd);
    if (i >= text.length) return { members, end: -1 };
    if (text[i] !== ':') return { members, end: -1 };
    const vStart = skipWs(text, i + 1);
    if (vStart >= text.length) return { members, end: -1 };
    const vEnd = valueEnd(text, vStart);
    members.push({ key, valueStart: vStart, valueEnd: vEnd });
    if (vEnd < 0 || vEnd === vStart) return { members, end: -1 };
    i = skipWs(text, vEnd);
  }
}

/** Starts (and ends, -1 when open) of the values of the array starting at `start` (`[`). */
export function readArray(text: string, start: number): { items: { start: number; end: number }[]; end: number } {
  const items: { start: number; end: number }[] = [];
  let i = skipWs(text, start + 1);
  for (;;) {
    if (i >= text.length) return { items, end: -1 };
    if (text[i] === ']') return { items, end: i + 1 };
    if (text[i] === ',') {
      i = skipWs(text, i + 1);
      continue;
    }
    const e = valueEnd(text, i);
    items.push({ start: i, end: e });
    if (e < 0 || e === i) return { items, end: -1 };
    i = skipWs(text, e);
  }
}

/**
 * JSON text without the whitespace between tokens. A prefix of a JSON text gives a prefix
 * of the compact form of the whole, so compact arguments stream as growing text.
 */
export function compactJson(text: string): string {
  let out = '';
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const e = stringEnd(text, i);
      i = e < 0 ? text.length : e;
    } else if (WS.test(c)) {
      out += text.slice(from, i);
      while (i < text.length && WS.test(text[i]!)) i++;
      from = i;
    } else i++;
  }
  return out + text.slice(from);
}

/** The text of a JSON string so far (`raw` starts at its quote), without an escape cut at the end. */
export function partialString(raw: string): string {
  const e = stringEnd(raw, 0);
  if (e >= 0) {
    try {
      return JSON.parse(raw.slice(0, e)) as string;
    } catch {
      return '';
    }
  }
  // drop an escape cut at the end (\ or \uXXX), then close the string
  let body = raw.slice(1);
  for (let i = 0; i < body.length; i++) {
    if (body[i] !== '\\') continue;
    const need = body[i + 1] === 'u' ? 6 : 2;
    if (i + need > body.length) {
      body = body.slice(0, i);
      break;
    }
    i += need - 1;
  }
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    return '';
  }
}
