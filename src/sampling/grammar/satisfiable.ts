// Whether a grammar can be met with a vocabulary's tokens, checked when the sampler is
// made, so a request whose grammar no token sequence can satisfy fails at once with a
// GrammarError naming why, instead of sampling until no token is left.
//
// Two checks, both cheap: (1) over the characters tokens can spell (every code point of
// every text token, and those a token's cut trailing character may become), which rules
// can match some text at all ("productive" rules, by a worklist, linear in the grammar):
// `root ::= "a" "\x00"` fails here, since no token spells NUL (llama.cpp never lets a
// piece containing NUL match); (2) whether some token may come first (the first step's
// filter: the same pass sampling does, kept in the sampler's cache for it).
import { GrammarMatcher } from './matcher.js';
import { El, type FlatGrammar, GrammarError, isEndOfSequence } from './rules.js';
import type { TokenIndex } from './token-index.js';

const CP_END = 0x110000;

/** Per vocabulary: prefix counts of the code points tokens can spell (length 0x110001). */
const alphabets = new WeakMap<TokenIndex, Int32Array>();

function alphabet(index: TokenIndex): Int32Array {
  let a = alphabets.get(index);
  if (a) return a;
  const diff = new Int32Array(CP_END + 1);
  for (let k = 0; k < index.cps.length; k++) {
    const c = index.cps[k]!;
    diff[c]!++;
    diff[c + 1]!--;
  }
  for (let t = 0; t < index.nTokens; t++) {
    if (index.partLo[t]! < 0) continue;
    diff[index.partLo[t]!]!++;
    diff[index.partHi[t]! + 1]!--;
  }
  a = new Int32Array(CP_END + 1);
  let depth = 0;
  for (let c = 0; c < CP_END; c++) {
    depth += diff[c]!;
    a[c + 1] = a[c]! + (depth > 0 ? 1 : 0);
  }
  alphabets.set(index, a);
  return a;
}

function formatClass(ranges: Int32Array): string {
  if (ranges.length === 0) return 'an empty character class';
  const ch = (c: number) =>
    c >= 0x20 && c < 0x7f && !'\\]-^'.includes(String.fromCharCode(c))
      ? String.fromCharCode(c)
      : c < 0x100
        ? `\\x${c.toString(16).padStart(2, '0')}`
        : `\\u${c.toString(16).padStart(4, '0')}`;
  let s = '';
  for (let k = 0; k < ranges.length && k < 16; k += 2) {
    s += ranges[k] === ranges[k + 1] ? ch(ranges[k]!) : `${ch(ranges[k]!)}-${ch(ranges[k + 1]!)}`;
  }
  return `[${s}${ranges.length > 16 ? '…' : ''}]`;
}

/**
 * Throws GrammarError when no sequence of the vocabulary's tokens (`index`) can satisfy
 * the grammar `matcher` follows. `filter` gives the tokens a state allows (the sampler's
 * cached whole-vocabulary filter, so its first step reuses this one).
 */
export function checkSatisfiable(
  index: TokenIndex,
  matcher: GrammarMatcher,
  filter: (m: GrammarMatcher) => Uint8Array,
): void {
  const g: FlatGrammar = matcher.engine.grammar;
  const spellable = alphabet(index);
  const { types, values, ruleStart, names } = g;
  const nRules = ruleStart.length - 1;
  let usable = 0; // tokens a token element can match
  for (let t = 0; t < index.nTokens; t++) {
    const k = index.kind[t]!;
    if (k === 1 || k === 3 || k === 4) usable++;
  }
  const isUsable = (id: number) => {
    const k = id >= 0 && id < index.nTokens ? index.kind[id]! : 0;
    return k === 1 || k === 3 || k === 4;
  };
  const engine = matcher.engine;
  const classLive = new Int8Array(engine.classCount).fill(-1); // -1 not yet known
  const dead: string[] = [];
  const live = (p: number): boolean => {
    const t = types[p]!;
    if (t === El.TOKEN) return isUsable(values[p]!);
    if (t === El.TOKEN_NOT) return usable > (isUsable(values[p]!) ? 1 : 0);
    const c = engine.terminalClass(p);
    if (c < 0) return false;
    if (classLive[c]! < 0) {
      const ranges = engine.classRangesOf(c);
      let ok = false;
      for (let k = 0; k < ranges.length && !ok; k += 2) {
        ok = spellable[Math.min(ranges[k + 1]! + 1, CP_END)]! - spellable[ranges[k]!]! > 0;
      }
      classLive[c] = ok ? 1 : 0;
      if (!ok && dead.length < 3) dead.push(formatClass(ranges));
    }
    return classLive[c] === 1;
  };

  // productive rules: an alternative is productive when its terminals are live and the
  // rules it refers to are productive; count the refs each live alternative still waits on
  const productive = new Uint8Array(nRules);
  const altRule: number[] = [];
  const altMissing: number[] = [];
  const waiting: number[][] = Array.from({ length: nRules }, () => []);
  const ready: number[] = [];
  for (let r = 0; r < nRules; r++) {
    let refs: number[] = [];
    let ok = true;
    for (let p = ruleStart[r]!; p < ruleStart[r + 1]!; p++) {
      const t = types[p]! as El;
      if (isEndOfSequence(t)) {
        if (ok) {
          const alt = altRule.length;
          altRule.push(r);
          altMissing.push(refs.length);
          for (const x of refs) waiting[x]!.push(alt);
          if (refs.length === 0) ready.push(r);
        }
        refs = [];
        ok = true;
        if (t === El.END) break;
      } else if (t === El.RULE_REF) refs.push(values[p]!);
      else if (t === El.CHAR_ALT || t === El.CHAR_RNG_UPPER) continue;
      else if (ok && !live(p)) ok = false;
    }
  }
  while (ready.length > 0) {
    const r = ready.pop()!;
    if (productive[r]) continue;
    productive[r] = 1;
    for (const alt of waiting[r]!) if (--altMissing[alt]! === 0) ready.push(altRule[alt]!);
  }
  if (!productive[g.root]) {
    const why = dead.length > 0 ? `: no token contains ${dead.join(', ')}` : '';
    throw new GrammarError(
      `no text this model's tokens can spell matches the grammar (rule '${names[g.root]}' cannot be completed${why})`,
    );
  }

  // some token (or the end, when the grammar accepts the empty text) must be allowed first
  const m = new GrammarMatcher(engine);
  if (m.isComplete()) return;
  const mask = filter(m);
  for (let t = 0; t < mask.length; t++) if (mask[t]) return;
  throw new GrammarError("no token of this model's vocabulary can begin text the grammar accepts");
}
