// A parsed grammar in llama.cpp's element form: each rule is a list of elements, its
// alternatives separated by ALT and closed by END; a terminal is one CHAR / CHAR_NOT /
// CHAR_ANY element followed by CHAR_ALT (another char of the class) and CHAR_RNG_UPPER
// (upper bound of a range) elements. `checkGrammar` rejects what the matcher cannot run:
// references to undefined rules and left recursion (a rule that can reach itself without
// consuming a character would make the pushdown expansion loop forever).

export const El = {
  END: 0,
  ALT: 1,
  RULE_REF: 2,
  CHAR: 3,
  CHAR_NOT: 4,
  CHAR_RNG_UPPER: 5,
  CHAR_ALT: 6,
  CHAR_ANY: 7,
  TOKEN: 8,
  TOKEN_NOT: 9,
} as const;
export type El = (typeof El)[keyof typeof El];

export interface Element {
  type: El;
  value: number;
}

/** A grammar error: where (1-based line and column, in characters) and why. */
export class GrammarError extends Error {
  override name = 'GrammarError';
  constructor(
    readonly reason: string,
    readonly line = 0,
    readonly column = 0,
  ) {
    super(line > 0 ? `${line}:${column}: ${reason}` : reason);
  }
}

/** A parsed grammar: rules by id (symbol names alongside), and the start rule. */
export class Grammar {
  constructor(
    /** Elements of each rule, END-terminated. */
    readonly rules: readonly (readonly Element[])[],
    /** Symbol name of each rule id (generated ones are `name_N`). */
    readonly names: readonly string[],
    readonly root: number,
    /** Where each rule was defined (for messages): [line, column]. */
    readonly positions: readonly (readonly [number, number])[] = [],
  ) {}

  ruleId(name: string): number {
    return this.names.indexOf(name);
  }

  /** The rules in GBNF text, one per line (generated rules included), as llama.cpp prints them. */
  toString(): string {
    let out = '';
    for (let r = 0; r < this.rules.length; r++) out += `${this.names[r]} ::= ${formatRule(this, this.rules[r]!)}\n`;
    return out;
  }
}

function formatChar(c: number): string {
  if (c === 0x5c || c === 0x22 || c === 0x5d || c === 0x5b || c === 0x2d) return `\\${String.fromCharCode(c)}`;
  if (c === 0x0a) return '\\n';
  if (c === 0x0d) return '\\r';
  if (c === 0x09) return '\\t';
  if (c < 0x20 || c === 0x7f) return `\\x${c.toString(16).padStart(2, '0')}`;
  if (c >= 0xd800 && c <= 0xdfff) return `\\u${c.toString(16).padStart(4, '0')}`;
  if (c > 0x10ffff) return `\\U${c.toString(16).padStart(8, '0')}`;
  return String.fromCodePoint(c);
}

function formatRule(g: Grammar, rule: readonly Element[]): string {
  const parts: string[] = [];
  for (let i = 0; i < rule.length - 1; i++) {
    const e = rule[i]!;
    switch (e.type) {
      case El.ALT:
        parts.push('|');
        break;
      case El.RULE_REF:
        parts.push(g.names[e.value] ?? `<rule ${e.value}>`);
        break;
      case El.TOKEN:
        parts.push(`<[${e.value}]>`);
        break;
      case El.TOKEN_NOT:
        parts.push(`!<[${e.value}]>`);
        break;
      case El.CHAR_ANY:
        parts.push('.');
        break;
      case El.CHAR:
      case El.CHAR_NOT: {
        let s = e.type === El.CHAR_NOT ? '[^' : '[';
        s += formatChar(e.value);
        while (i + 1 < rule.length) {
          const n = rule[i + 1]!;
          if (n.type === El.CHAR_RNG_UPPER) s += `-${formatChar(n.value)}`;
          else if (n.type === El.CHAR_ALT) s += formatChar(n.value);
          else break;
          i++;
        }
        parts.push(`${s}]`);
        break;
      }
      default:
        parts.push(`<bad element ${e.type}>`);
    }
  }
  return parts.join(' ');
}

/** True for the elements that end an alternative. */
export function isEndOfSequence(type: El): boolean {
  return type === El.END || type === El.ALT;
}

/** Checks a grammar can be run: every referenced rule defined, a root, no left recursion. */
export function checkGrammar(g: Grammar): void {
  const n = g.rules.length;
  const where = (r: number): [number, number] => (g.positions[r] as [number, number] | undefined) ?? [0, 0];
  if (g.root < 0 || g.root >= n || g.rules[g.root]!.length === 0) {
    throw new GrammarError(`grammar does not contain a '${g.names[g.root] ?? 'root'}' rule`, 1, 1);
  }
  for (let r = 0; r < n; r++) {
    for (const e of g.rules[r]!) {
      if (e.type === El.RULE_REF && (e.value >= n || g.rules[e.value]!.length === 0)) {
        throw new GrammarError(`undefined rule '${g.names[e.value] ?? e.value}'`, ...where(r));
      }
    }
  }
  // nullable rules (may match the empty string), to a fixed point
  const nullable = new Uint8Array(n);
  for (let changed = true; changed; ) {
    changed = false;
    for (let r = 0; r < n; r++) {
      if (nullable[r]) continue;
      let altNullable = true;
      let ruleNullable = false;
      for (const e of g.rules[r]!) {
        if (isEndOfSequence(e.type)) {
          if (altNullable) {
            ruleNullable = true;
            break;
          }
          altNullable = true;
        } else if (e.type !== El.RULE_REF || !nullable[e.value]) altNullable = false;
      }
      if (ruleNullable) {
        nullable[r] = 1;
        changed = true;
      }
    }
  }
  // left edges: r -> x when x may start an alternative of r (after nullable refs only)
  const edges: number[][] = [];
  for (let r = 0; r < n; r++) {
    const out: number[] = [];
    let atStart = true;
    for (const e of g.rules[r]!) {
      if (isEndOfSequence(e.type)) atStart = true;
      else if (!atStart) continue;
      else if (e.type === El.RULE_REF) {
        out.push(e.value);
        if (!nullable[e.value]) atStart = false;
      } else atStart = false;
    }
    edges.push(out);
  }
  const state = new Uint8Array(n); // 0 new, 1 on path, 2 done
  const visit = (r: number): void => {
    state[r] = 1;
    for (const x of edges[r]!) {
      if (state[x] === 1) {
        throw new GrammarError(
          `left recursion: rule '${g.names[x]}' can reach itself without consuming input`,
          ...where(x),
        );
      }
      if (state[x] === 0) visit(x);
    }
    state[r] = 2;
  };
  for (let r = 0; r < n; r++) if (state[r] === 0) visit(r);
}
