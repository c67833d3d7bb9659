// A parsed grammar in llama.cpp's element form: each rule is a list of elements, its
// alternatives separated by ALT and closed by END; a terminal is one CHAR / CHAR_NOT /
// CHAR_ANY element followed by CHAR_ALT (another char of the class) and CHAR_RNG_UPPER
// (upper bound of a range) elements. `checkGrammar` rejects what the matcher cannot run:
// references to undefined rules and left recursion (a rule that can reach itself without
// consuming a character would make the pushdown expansion loop forever).
//
// `FlatGrammar` is the same grammar as typed arrays: what the matcher runs, and what a
// grammar compiled on another thread crosses to the sampler's thread as (structured clone).

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

/** A grammar as flat arrays: every rule's elements one after another. */
export interface FlatGrammar {
  /** Element types and values; each rule ends with END. */
  readonly types: Uint8Array;
  readonly values: Int32Array;
  /** First element of each rule; ruleStart[nRules] = types.length. */
  readonly ruleStart: Int32Array;
  /** Symbol name of each rule. */
  readonly names: readonly string[];
  readonly root: number;
}

/** A parsed grammar: rules by id (symbol names alongside), and the start rule. */
export class Grammar {
  private flatForm: FlatGrammar | undefined;

  constructor(
    /** Elements of each rule, END-terminated. */
    readonly rules: readonly (readonly Element[])[],
    /** Symbol name of each rule id (generated ones are `name_N`). */
    readonly names: readonly string[],
    readonly root: number,
    /** Where rule r was defined (for messages): [line, column], or [0, 0] when unknown. */
    readonly where: (rule: number) => readonly [number, number] = () => [0, 0],
  ) {}

  ruleId(name: string): number {
    return this.names.indexOf(name);
  }

  /** The grammar as flat arrays (made once). */
  flat(): FlatGrammar {
    if (!this.flatForm) {
      let total = 0;
      for (const r of this.rules) total += r.length;
      const types = new Uint8Array(total);
      const values = new Int32Array(total);
      const ruleStart = new Int32Array(this.rules.length + 1);
      let p = 0;
      for (let r = 0; r < this.rules.length; r++) {
        ruleStart[r] = p;
        for (const e of this.rules[r]!) {
          types[p] = e.type;
          values[p] = e.value;
          p++;
        }
      }
      ruleStart[this.rules.length] = p;
      this.flatForm = { types, values, ruleStart, names: this.names, root: this.root };
    }
    return this.flatForm;
  }

  /** A Grammar from flat arrays (checked to be well formed: GrammarError if not). */
  static fromFlat(f: FlatGrammar): Grammar {
    checkFlatGrammar(f);
    const rules: Element[][] = [];
    for (let r = 0; r + 1 < f.ruleStart.length; r++) {
      const rule: Element[] = [];
      for (let p = f.ruleStart[r]!; p < f.ruleStart[r + 1]!; p++)
        rule.push({ type: f.types[p] as El, value: f.values[p]! });
      rules.push(rule);
    }
    const g = new Grammar(rules, f.names, f.root);
    g.flatForm = f;
    return g;
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

/**
 * Checks that flat arrays form a grammar the matcher can walk: lengths agree, every rule
 * ends with END (and holds no other), class elements follow a character element, rule
 * references and the root are rule ids. (Grammars that crossed from another thread.)
 */
export function checkFlatGrammar(f: FlatGrammar): void {
  const bad = (why: string) => new GrammarError(`malformed compiled grammar: ${why}`);
  const { types, values, ruleStart, names } = f;
  if (!(types instanceof Uint8Array) || !(values instanceof Int32Array) || !(ruleStart instanceof Int32Array)) {
    throw bad('expected typed arrays');
  }
  const n = ruleStart.length - 1;
  if (n < 1 || values.length !== types.length || ruleStart[0] !== 0 || ruleStart[n] !== types.length) {
    throw bad('rule offsets do not match the elements');
  }
  if (!Array.isArray(names) || names.length !== n) throw bad('one name per rule expected');
  if (!Number.isInteger(f.root) || f.root < 0 || f.root >= n) throw bad(`root ${f.root} is not a rule`);
  for (let r = 0; r < n; r++) {
    const a = ruleStart[r]!;
    const b = ruleStart[r + 1]!;
    if (b <= a || types[b - 1] !== El.END) throw bad(`rule ${r} does not end with END`);
    for (let p = a; p < b; p++) {
      const t = types[p]!;
      if (t > El.TOKEN_NOT || (t === El.END && p !== b - 1)) throw bad(`element ${p} has type ${t}`);
      if (t === El.RULE_REF && (values[p]! < 0 || values[p]! >= n))
        throw bad(`element ${p} refers to rule ${values[p]}`);
      if (t === El.CHAR_RNG_UPPER || t === El.CHAR_ALT) {
        const prev = p > a ? types[p - 1]! : -1;
        if (prev !== El.CHAR && prev !== El.CHAR_NOT && prev !== El.CHAR_ALT && prev !== El.CHAR_RNG_UPPER) {
          throw bad(`element ${p} continues no character class`);
        }
      }
    }
  }
}

/**
 * Checks a grammar can be run: every referenced rule defined, a root, no left recursion.
 * Linear in the grammar's size (a worklist for nullable rules, an explicit stack for the
 * depth-first search), so long rule chains cost no more than short ones.
 */
export function checkGrammar(grammar: Grammar | FlatGrammar): void {
  const g = grammar instanceof Grammar ? grammar.flat() : grammar;
  const { types, values, ruleStart, names } = g;
  const n = ruleStart.length - 1;
  const where = (r: number): [number, number] =>
    grammar instanceof Grammar ? ([...grammar.where(r)] as [number, number]) : [0, 0];
  const empty = (r: number) => ruleStart[r + 1]! === ruleStart[r]!;
  if (g.root < 0 || g.root >= n || empty(g.root)) {
    throw new GrammarError(`grammar does not contain a '${names[g.root] ?? 'root'}' rule`, 1, 1);
  }
  for (let r = 0; r < n; r++) {
    for (let p = ruleStart[r]!; p < ruleStart[r + 1]!; p++) {
      if (types[p] === El.RULE_REF && (values[p]! >= n || empty(values[p]!))) {
        throw new GrammarError(`undefined rule '${names[values[p]!] ?? values[p]}'`, ...where(r));
      }
    }
  }
  const nullable = nullableRules(g);
  // left edges: r -> x when x may start an alternative of r (after nullable refs only)
  const edgeStart = new Int32Array(n + 1);
  const edgeList: number[] = [];
  for (let r = 0; r < n; r++) {
    edgeStart[r] = edgeList.length;
    let atStart = true;
    for (let p = ruleStart[r]!; p < ruleStart[r + 1]!; p++) {
      const t = types[p]! as El;
      if (isEndOfSequence(t)) atStart = true;
      else if (!atStart) continue;
      else if (t === El.RULE_REF) {
        edgeList.push(values[p]!);
        if (!nullable[values[p]!]) atStart = false;
      } else atStart = false;
    }
  }
  edgeStart[n] = edgeList.length;
  const state = new Uint8Array(n); // 0 new, 1 on path, 2 done
  const stack: number[] = []; // rules on the path, and for each the next edge to follow
  const next: number[] = [];
  for (let start = 0; start < n; start++) {
    if (state[start] !== 0) continue;
    state[start] = 1;
    stack.push(start);
    next.push(edgeStart[start]!);
    while (stack.length > 0) {
      const top = stack.length - 1;
      const r = stack[top]!;
      const k = next[top]!;
      if (k === edgeStart[r + 1]) {
        state[r] = 2;
        stack.pop();
        next.pop();
        continue;
      }
      next[top] = k + 1;
      const x = edgeList[k]!;
      if (state[x] === 1) {
        throw new GrammarError(
          `left recursion: rule '${names[x]}' can reach itself without consuming input`,
          ...where(x),
        );
      }
      if (state[x] === 0) {
        state[x] = 1;
        stack.push(x);
        next.push(edgeStart[x]!);
      }
    }
  }
}

/** Rules that may match the empty string: each alternative waits on the refs it still needs. */
function nullableRules(g: FlatGrammar): Uint8Array {
  const { types, values, ruleStart } = g;
  const n = ruleStart.length - 1;
  const nullable = new Uint8Array(n);
  // alternatives made only of rule refs: count the refs not yet known nullable
  const altRule: number[] = [];
  const altMissing: number[] = [];
  const waiting: number[][] = Array.from({ length: n }, () => []); // ref -> alternatives using it
  const ready: number[] = [];
  for (let r = 0; r < n; r++) {
    let refs: number[] = [];
    let onlyRefs = true;
    for (let p = ruleStart[r]!; p < ruleStart[r + 1]!; p++) {
      const t = types[p]! as El;
      if (isEndOfSequence(t)) {
        if (onlyRefs) {
          const alt = altRule.length;
          altRule.push(r);
          altMissing.push(refs.length);
          for (const x of refs) waiting[x]!.push(alt);
          if (refs.length === 0) ready.push(r);
        }
        refs = [];
        onlyRefs = true;
        if (t === El.END) break;
      } else if (t === El.RULE_REF) refs.push(values[p]!);
      else onlyRefs = false;
    }
  }
  while (ready.length > 0) {
    const r = ready.pop()!;
    if (nullable[r]) continue;
    nullable[r] = 1;
    for (const alt of waiting[r]!) if (--altMissing[alt]! === 0) ready.push(altRule[alt]!);
  }
  return nullable;
}
