// Which tokens may come next under a grammar. Every token's piece is decoded once per
// vocabulary into code points (plus an incomplete trailing character, if its bytes stop
// inside one) and put in a trie laid out in depth-first order: node i's subtree is
// [i, end[i]), its first child is i + 1. One step's filter is then a single linear pass
// over the trie that steps the matcher state along each edge and skips the subtree of
// any edge the grammar rejects, so shared prefixes are matched once and rejected
// prefixes cost one look-up (llama.cpp instead re-checks each candidate per stack).
//
// As in llama.cpp: end-of-generation tokens are allowed exactly when the grammar can end;
// tokens with an empty piece never are; a piece ending inside a character is allowed when
// some code point it could complete to fits the grammar here.
import { DEAD, type GrammarEngine, type GrammarMatcher } from './matcher.js';
import { decodeUtf8, NO_PARTIAL, type PartialUtf8, partialRange } from './utf8.js';

/** What the grammar sampler needs from a vocabulary (Vocab provides it). */
export interface GrammarVocab {
  readonly nTokens: number;
  /** The token's piece as a byte string, special tokens rendered (Vocab.pieceBytes). */
  pieceBytes(id: number): string;
  isEog(id: number): boolean;
}

/** Token kinds. */
const NEVER = 0; // empty piece
const TEXT = 1; // valid UTF-8 (possibly cut at the end)
const EOG = 2;
const RAW = 3; // invalid UTF-8 alone: only token elements, or the bytes continuing a cut character, match it
const RAW_NUL = 4; // contains a NUL byte: only token elements match it

export class TokenIndex {
  private static readonly cache = new WeakMap<GrammarVocab, TokenIndex>();

  readonly nTokens: number;
  readonly kind: Uint8Array;
  readonly pieces: string[];
  /** Complete code points of each token: cps[cpStart[t] .. cpStart[t + 1]). */
  readonly cpStart: Int32Array;
  readonly cps: Int32Array;
  /** Range of code points a token's trailing incomplete character may become (lo = -1: none). */
  readonly partLo: Int32Array;
  readonly partHi: Int32Array;
  readonly eogIds: Int32Array;

  /** Trie in depth-first order; node 0 is the root. */
  readonly nodeCp: Int32Array;
  readonly nodeEnd: Int32Array;
  readonly nodeDepth: Int32Array;
  /** Tokens whose code points end at a node and that have no trailing partial character. */
  readonly nodeTokStart: Int32Array;
  readonly nodeToks: Int32Array;
  /** Tokens ending at a node with a trailing partial character. */
  readonly nodePartStart: Int32Array;
  readonly nodeParts: Int32Array;
  readonly maxDepth: number;

  static for(vocab: GrammarVocab): TokenIndex {
    let idx = TokenIndex.cache.get(vocab);
    if (!idx) {
      idx = new TokenIndex(vocab);
      TokenIndex.cache.set(vocab, idx);
    }
    return idx;
  }

  constructor(vocab: GrammarVocab) {
    const n = vocab.nTokens;
    this.nTokens = n;
    this.kind = new Uint8Array(n);
    this.pieces = new Array(n);
    this.partLo = new Int32Array(n).fill(-1);
    this.partHi = new Int32Array(n).fill(-1);
    this.cpStart = new Int32Array(n + 1);
    const cps: number[] = [];
    const eog: number[] = [];
    const text: number[] = [];
    for (let t = 0; t < n; t++) {
      this.cpStart[t] = cps.length;
      const piece = vocab.pieceBytes(t);
      this.pieces[t] = piece;
      if (vocab.isEog(t)) {
        this.kind[t] = EOG;
        eog.push(t);
        continue;
      }
      if (piece.length === 0) continue;
      if (piece.includes('\0')) {
        this.kind[t] = RAW_NUL;
        continue;
      }
      const d = decodeUtf8(piece);
      if (!d) {
        this.kind[t] = RAW;
        continue;
      }
      this.kind[t] = TEXT;
      text.push(t);
      for (const c of d.cps) cps.push(c);
      if (d.partial.remain > 0) {
        const r = partialRange(d.partial)!;
        this.partLo[t] = r[0];
        this.partHi[t] = r[1];
      }
    }
    this.cpStart[n] = cps.length;
    this.cps = Int32Array.from(cps);
    this.eogIds = Int32Array.from(eog);

    // Byte order of UTF-8 is code point order, and a token's bytes start with the bytes of
    // any code-point prefix it has, so sorting pieces as byte strings keeps every prefix
    // group contiguous: the trie can be emitted in one pass, depth first.
    const pieces = this.pieces;
    text.sort((a, b) => (pieces[a]! < pieces[b]! ? -1 : pieces[a]! > pieces[b]! ? 1 : a - b));
    const nodeCp: number[] = [-1];
    const nodeEnd: number[] = [0];
    const nodeDepth: number[] = [0];
    const attachNode: number[] = [];
    const path = [0];
    let prev = -1;
    let maxDepth = 0;
    for (const t of text) {
      const s = this.cpStart[t]!;
      const len = this.cpStart[t + 1]! - s;
      let k = 0;
      if (prev >= 0) {
        const ps = this.cpStart[prev]!;
        const plen = path.length - 1;
        const lim = Math.min(plen, len);
        while (k < lim && this.cps[ps + k] === this.cps[s + k]) k++;
      }
      for (let d = path.length - 1; d > k; d--) nodeEnd[path[d]!] = nodeCp.length;
      path.length = k + 1;
      for (let d = k; d < len; d++) {
        const id = nodeCp.length;
        nodeCp.push(this.cps[s + d]!);
        nodeEnd.push(0);
        nodeDepth.push(d + 1);
        path.push(id);
      }
      if (len > maxDepth) maxDepth = len;
      attachNode[t] = path[len]!;
      prev = t;
    }
    for (let d = path.length - 1; d >= 0; d--) nodeEnd[path[d]!] = nodeCp.length;
    const nNodes = nodeCp.length;
    this.nodeCp = Int32Array.from(nodeCp);
    this.nodeEnd = Int32Array.from(nodeEnd);
    this.nodeDepth = Int32Array.from(nodeDepth);
    this.maxDepth = maxDepth;

    const toks = text.filter((t) => this.partLo[t] === -1);
    const parts = text.filter((t) => this.partLo[t] !== -1);
    [this.nodeTokStart, this.nodeToks] = csr(nNodes, toks, attachNode);
    [this.nodePartStart, this.nodeParts] = csr(nNodes, parts, attachNode);
  }

  get nodeCount(): number {
    return this.nodeCp.length;
  }

  isEog(id: number): boolean {
    return this.kind[id] === EOG;
  }
}

function csr(nNodes: number, toks: number[], node: number[]): [Int32Array, Int32Array] {
  const start = new Int32Array(nNodes + 1);
  for (const t of toks) start[node[t]! + 1]!++;
  for (let i = 0; i < nNodes; i++) start[i + 1]! += start[i]!;
  const fill = start.slice(0, nNodes);
  const list = new Int32Array(toks.length);
  for (const t of toks) list[fill[node[t]!]!++] = t;
  return [start, list];
}

/**
 * Set out[t] = 1 for every token t allowed next in the matcher's state, 0 otherwise
 * (out has at least index.nTokens entries).
 */
export function allowedTokens(m: GrammarMatcher, index: TokenIndex, out: Uint8Array): void {
  out.fill(0, 0, index.nTokens);
  const e = m.engine;
  if (m.partial.remain > 0) {
    // inside a character: only pieces starting with its continuation bytes can follow (rare)
    for (let t = 0; t < index.nTokens; t++) if (isTokenAllowed(m, index, t)) out[t] = 1;
    return;
  }
  const state = m.state;
  const setAt = new Int32Array(index.maxDepth + 1);
  setAt[0] = state;
  const { nodeCp, nodeEnd, nodeDepth, nodeTokStart, nodeToks, nodePartStart, nodeParts, partLo, partHi } = index;
  for (let k = nodePartStart[0]!; k < nodePartStart[1]!; k++) {
    const t = nodeParts[k]!;
    if (e.partialFits(state, partLo[t]!, partHi[t]!)) out[t] = 1;
  }
  const nNodes = nodeCp.length;
  for (let i = 1; i < nNodes; ) {
    const d = nodeDepth[i]!;
    const s = e.step(setAt[d - 1]!, nodeCp[i]!);
    if (s === DEAD) {
      i = nodeEnd[i]!;
      continue;
    }
    setAt[d] = s;
    for (let k = nodeTokStart[i]!, end = nodeTokStart[i + 1]!; k < end; k++) out[nodeToks[k]!] = 1;
    for (let k = nodePartStart[i]!, end = nodePartStart[i + 1]!; k < end; k++) {
      const t = nodeParts[k]!;
      if (e.partialFits(s, partLo[t]!, partHi[t]!)) out[t] = 1;
    }
    i++;
  }
  allowTokenElements(e, state, index, out);
  if (m.isComplete()) for (const t of index.eogIds) out[t] = 1;
}

function allowTokenElements(e: GrammarEngine, state: number, index: TokenIndex, out: Uint8Array): void {
  const tops = e.tokenTops(state);
  for (let k = 0; k < tops.length; k += 2) {
    const id = tops[k + 1]!;
    if (tops[k] === 8 /* El.TOKEN */) {
      if (id < index.nTokens && index.kind[id]! >= TEXT && index.kind[id] !== EOG) out[id] = 1;
    } else {
      for (let t = 0; t < index.nTokens; t++)
        if (t !== id && index.kind[t]! >= TEXT && index.kind[t] !== EOG) out[t] = 1;
    }
  }
}

/** The matcher state after token `id`, without changing the matcher: [state, partial] or null when not allowed. */
function advanceToken(
  m: GrammarMatcher,
  index: TokenIndex,
  id: number,
): { state: number; partial: PartialUtf8 } | null {
  const kind = index.kind[id];
  if (kind === EOG) return m.isComplete() ? { state: m.state, partial: NO_PARTIAL } : null;
  if (kind === NEVER || kind === undefined) return null;
  const e = m.engine;
  let state = DEAD;
  let partial = NO_PARTIAL;
  if (kind === TEXT || (kind === RAW && m.partial.remain > 0)) {
    // (a RAW piece may be the continuation bytes of a carried partial character)
    let s = m.state;
    if (m.partial.remain === 0) {
      for (let k = index.cpStart[id]!, end = index.cpStart[id + 1]!; k < end && s !== DEAD; k++) {
        s = e.step(s, index.cps[k]!);
      }
      if (s !== DEAD && index.partLo[id] !== -1) {
        if (!e.partialFits(s, index.partLo[id]!, index.partHi[id]!)) s = DEAD;
        else partial = decodeUtf8(index.pieces[id]!)!.partial;
      }
    } else {
      const d = decodeUtf8(index.pieces[id]!, m.partial);
      if (!d) s = DEAD;
      else {
        for (let k = 0; k < d.cps.length && s !== DEAD; k++) s = e.step(s, d.cps[k]!);
        if (s !== DEAD && d.partial.remain > 0) {
          const r = partialRange(d.partial);
          if (!r || !e.partialFits(s, r[0], r[1])) s = DEAD;
        }
        partial = d.partial;
      }
    }
    state = s;
  }
  if (e.hasTokenStacks(m.state)) {
    const extra: number[] = [];
    e.tokenStacks(m.state, id, extra);
    if (extra.length > 0) {
      if (state !== DEAD) for (const x of e.stacksOf(state)) extra.push(x);
      else partial = NO_PARTIAL;
      state = e.intern(extra);
    }
  }
  return state === DEAD ? null : { state, partial };
}

/** Whether token `id` may come next. */
export function isTokenAllowed(m: GrammarMatcher, index: TokenIndex, id: number): boolean {
  return advanceToken(m, index, id) !== null;
}

/** Advance the matcher by token `id`; false (unchanged) when the grammar does not allow it. An allowed end-of-generation token leaves the state as it is. */
export function acceptToken(m: GrammarMatcher, index: TokenIndex, id: number): boolean {
  const r = advanceToken(m, index, id);
  if (!r) return false;
  m.state = r.state;
  m.partial = r.partial;
  return true;
}
