// JSON Schema to GBNF, with the rules and output shape of llama.cpp's
// json-schema-to-grammar: one rule per schema node (named after its path: `root`,
// `name-kv`, `items-item`, `ref-defs-Thing`, ...), shared primitive rules (`string`,
// `number`, `value`, ...), and llama.cpp's `space` rule between tokens. Objects with
// optional properties differ in shape, not in language (see buildObject), so that the
// grammar stays linear to build and to match.
//
// Supported: type (one or a list), const, enum, properties (in order) with required and
// optional ones, additionalProperties (absent or false: no others; true or a schema),
// allOf of objects, items with minItems/maxItems, prefixItems (tuples), anyOf/oneOf,
// $ref to local definitions (#/$defs/..., #/definitions/..., any #/ pointer; recursion
// allowed), strings with minLength/maxLength, pattern (see regex.ts) and the formats
// date, time, date-time and uuid, integers with minimum/maximum (exclusive too; 64-bit
// bounds) and numbers with them (exactly the decimals of the range, see numbers.ts).
// Validation keywords a grammar cannot express (uniqueItems, multipleOf, not, if, …) are
// a SchemaError naming the keyword (checkEnforceable): never a silently wider grammar.
// Errors are SchemaErrors naming the JSON pointer of the offending part of the schema.
import { type Bound, decimalRange, INT64_MAX, integerRange } from './numbers.js';
import { parseGrammar } from './parser.js';
import { RegexError, regexToGbnf } from './regex.js';
import { GrammarError } from './rules.js';

export class SchemaError extends Error {
  override name = 'SchemaError';
  constructor(
    /** JSON pointer (as a URI fragment, `#/properties/a`) of the part of the schema at fault. */
    readonly pointer: string,
    readonly reason: string,
  ) {
    super(`${pointer}: ${reason}`);
  }
}

export interface JsonSchemaOptions {
  /** `.` in patterns also matches line breaks. Default false. */
  dotall?: boolean;
}

/** llama.cpp's whitespace between JSON tokens: nothing, one space, or one or two newlines and some indentation. */
export const SPACE_RULE = '| " " | "\\n"{1,2} [ \\t]{0,20}';

interface Builtin {
  body: string;
  deps: string[];
}

const PRIMITIVES: Record<string, Builtin> = {
  boolean: { body: '("true" | "false") space', deps: [] },
  'decimal-part': { body: '[0-9]{1,16}', deps: [] },
  'integral-part': { body: '[0] | [1-9] [0-9]{0,15}', deps: [] },
  number: {
    body: '("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)? space',
    deps: ['integral-part', 'decimal-part'],
  },
  integer: { body: '("-"? integral-part) space', deps: ['integral-part'] },
  value: {
    body: 'object | array | string | number | boolean | null',
    deps: ['object', 'array', 'string', 'number', 'boolean', 'null'],
  },
  object: {
    body: '"{" space ( string ":" space value ("," space string ":" space value)* )? "}" space',
    deps: ['string', 'value'],
  },
  array: { body: '"[" space ( value ("," space value)* )? "]" space', deps: ['value'] },
  uuid: {
    body: String.raw`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space`,
    deps: [],
  },
  char: { body: String.raw`[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`, deps: [] },
  string: { body: String.raw`"\"" char* "\"" space`, deps: ['char'] },
  null: { body: '"null" space', deps: [] },
};

const FORMATS: Record<string, Builtin> = {
  date: { body: '[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )', deps: [] },
  time: {
    body: '( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )',
    deps: [],
  },
  'date-time': { body: 'date "T" time', deps: ['date', 'time'] },
  'date-string': { body: String.raw`"\"" date "\"" space`, deps: ['date'] },
  'time-string': { body: String.raw`"\"" time "\"" space`, deps: ['time'] },
  'date-time-string': { body: String.raw`"\"" date-time "\"" space`, deps: ['date-time'] },
};

const RESERVED = new Set(['root', ...Object.keys(PRIMITIVES), ...Object.keys(FORMATS)]);

/**
 * Validation keywords a grammar cannot enforce: a schema using one (with a value that
 * constrains anything) is a SchemaError naming it, never a grammar wider than the schema.
 * Annotations (title, description, default, examples, $schema, $comment, …) and formats
 * other than date, time, date-time and uuid (an annotation by default in JSON Schema
 * 2020-12) are ignored.
 */
function checkEnforceable(s: Schema, ptr: string): void {
  const fail = (k: string, why = 'is not supported: a grammar cannot enforce it') => {
    throw new SchemaError(childPointer(ptr, k), `'${k}' ${why}`);
  };
  if ('uniqueItems' in s && s.uniqueItems !== false) fail('uniqueItems');
  if ('multipleOf' in s && !(s.multipleOf === 1 && s.type === 'integer')) fail('multipleOf');
  if ('minProperties' in s && s.minProperties !== 0) fail('minProperties');
  if ('maxProperties' in s) fail('maxProperties');
  if ('patternProperties' in s && !(isObject(s.patternProperties) && Object.keys(s.patternProperties).length === 0)) {
    fail('patternProperties');
  }
  if ('propertyNames' in s) {
    const p = s.propertyNames;
    const trivial =
      p === true || (isObject(p) && Object.keys(p).every((k) => k === 'type') && (p.type ?? 'string') === 'string');
    if (!trivial) fail('propertyNames');
  }
  for (const k of ['unevaluatedProperties', 'unevaluatedItems']) {
    if (k in s && typeof s[k] !== 'boolean') fail(k);
  }
  for (const k of [
    'not',
    'if',
    'then',
    'else',
    'contains',
    'minContains',
    'maxContains',
    'dependentRequired',
    'dependentSchemas',
    'dependencies',
  ]) {
    if (k in s) fail(k);
  }
  if ('oneOf' in s && 'anyOf' in s) fail('anyOf', 'cannot be combined with oneOf in one schema (put one inside allOf)');
}

/** GBNF repetition bounds above this are not enforced by the parser (llama.cpp's limit). */
const MAX_REPETITION = 2000;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = { [k: string]: Json };

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

function childPointer(ptr: string, ...keys: (string | number)[]): string {
  return keys.reduce<string>((p, k) => `${p}/${String(k).replaceAll('~', '~0').replaceAll('/', '~1')}`, ptr);
}

/** A GBNF literal for text (llama.cpp's format_literal). */
export function gbnfLiteral(text: string): string {
  return `"${text.replace(/[\r\n"\\]/g, (c) => ({ '\r': '\\r', '\n': '\\n', '"': '\\"', '\\': '\\\\' })[c]!)}"`;
}

/**
 * Convert a JSON Schema (an object, or its JSON text) to GBNF whose root matches exactly
 * the JSON texts the converter can guarantee valid. Throws SchemaError.
 */
export function jsonSchemaToGrammar(schema: unknown, opts: JsonSchemaOptions = {}): string {
  const text = convertJsonSchema(schema, opts);
  try {
    parseGrammar(text);
  } catch (e) {
    throw unusableGrammar(e);
  }
  return text;
}

/** jsonSchemaToGrammar without parsing the result (for callers that parse it themselves: see unusableGrammar). */
export function convertJsonSchema(schema: unknown, opts: JsonSchemaOptions = {}): string {
  if (typeof schema === 'string') {
    try {
      schema = JSON.parse(schema);
    } catch (e) {
      throw new SchemaError('#', `not valid JSON: ${(e as Error).message}`);
    }
  }
  const c = new Converter(schema as Json, opts);
  c.visit(schema as Json, '', '#');
  return c.format();
}

/**
 * A schema's rules to go inside a larger grammar: its top rule named after `root` (the
 * first of `root`, `root0`, … no other rule of it uses), the rest as convertJsonSchema
 * names them (`space`, `string`, …). The caller's own rules must not use those names.
 */
export function convertJsonSchemaRules(
  schema: unknown,
  root: string,
  opts: JsonSchemaOptions = {},
): { rules: string; root: string } {
  if (typeof schema === 'string') {
    try {
      schema = JSON.parse(schema);
    } catch (e) {
      throw new SchemaError('#', `not valid JSON: ${(e as Error).message}`);
    }
  }
  const c = new Converter(schema as Json, opts);
  c.visit(schema as Json, '', '#');
  return c.formatAs(root);
}

/** A parse error of a converted schema, as the schema's error. */
export function unusableGrammar(e: unknown): unknown {
  return e instanceof GrammarError ? new SchemaError('#', `the schema gives an unusable grammar: ${e.message}`) : e;
}

/** Schemas nested deeper than this are refused (the converter recurses once per level). */
const MAX_NESTING = 256;

class Converter {
  private readonly rules = new Map<string, string>([['space', SPACE_RULE]]);
  private readonly resolving = new Set<string>();
  /** Per base name: the first i with `${base}${i}` possibly free (names are never removed). */
  private readonly probe = new Map<string, number>();
  /** `${base}\0${body}` → the smallest i whose rule `${base}${i}` has that body. */
  private readonly sameBody = new Map<string, number>();
  private depth = 0;

  constructor(
    private readonly top: Json,
    private readonly opts: JsonSchemaOptions,
  ) {}

  format(): string {
    const names = [...this.rules.keys()].filter((n) => n !== 'root').sort();
    return ['root', ...names].map((n) => `${n} ::= ${this.rules.get(n)}\n`).join('');
  }

  /** The rules with the top one renamed (the first free name from `root`). */
  formatAs(root: string): { rules: string; root: string } {
    // the top rule is 'root' here: any other name must not be taken
    let name = root;
    for (let i = 0; name !== 'root' && this.rules.has(name); i++) name = `${root}${i}`;
    const names = [...this.rules.keys()].filter((n) => n !== 'root').sort();
    const rules = [`${name} ::= ${this.rules.get('root')}\n`, ...names.map((n) => `${n} ::= ${this.rules.get(n)}\n`)];
    return { rules: rules.join(''), root: name };
  }

  /**
   * A rule named after `name` with this body: `name` itself when free or holding the same
   * body, else llama.cpp's choice, the first `name0`, `name1`, … that is free or holds the
   * same body. Found without trying each suffix in turn (hostile schemas give thousands of
   * properties whose names clean to the same rule name).
   */
  private addRule(name: string, body: string): string {
    const base = name.replace(/[^a-zA-Z0-9-]+/g, '-') || 'rule';
    const existing = this.rules.get(base);
    if (existing === undefined || existing === body) {
      if (existing === undefined) this.setRule(base, body);
      return base;
    }
    let free = this.probe.get(base) ?? 0;
    while (this.rules.has(`${base}${free}`)) free++;
    this.probe.set(base, free);
    const same = this.sameBody.get(`${base}\0${body}`);
    if (same !== undefined && same < free) return `${base}${same}`;
    const key = `${base}${free}`;
    this.setRule(key, body);
    return key;
  }

  private setRule(key: string, body: string): void {
    this.rules.set(key, body);
    // index the key under every (base, number) it can be read as: 'a10' is a + 10 and a1 + 0
    for (let d = key.length - 1; d >= 0 && key.charCodeAt(d) >= 0x30 && key.charCodeAt(d) <= 0x39; d--) {
      if (key.charCodeAt(d) === 0x30 && d < key.length - 1) continue; // no leading zeros
      const k = `${key.slice(0, d)}\0${body}`;
      const i = Number(key.slice(d));
      const prev = this.sameBody.get(k);
      if (prev === undefined || i < prev) this.sameBody.set(k, i);
    }
  }

  private addPrimitive(name: string, rule: Builtin): string {
    const n = this.addRule(name, rule.body);
    for (const dep of rule.deps) {
      const r = PRIMITIVES[dep] ?? FORMATS[dep]!;
      if (!this.rules.has(dep)) this.addPrimitive(dep, r);
    }
    return n;
  }

  // ---- keyword readers (type-checked, with pointers) ----

  private int(s: Schema, key: string, ptr: string): number | undefined {
    const v = s[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw new SchemaError(childPointer(ptr, key), `${key} must be a non-negative integer`);
    }
    return v;
  }

  private list(s: Schema, key: string, ptr: string): Json[] {
    const v = s[key];
    if (!Array.isArray(v) || v.length === 0)
      throw new SchemaError(childPointer(ptr, key), `${key} must be a non-empty array`);
    return v;
  }

  visit(schema: Json, name: string, ptr: string): string {
    if (this.depth >= MAX_NESTING)
      throw new SchemaError(ptr, `the schema is nested more than ${MAX_NESTING} levels deep`);
    this.depth++;
    try {
      return this.visitNode(schema, name, ptr);
    } finally {
      this.depth--;
    }
  }

  private visitNode(schema: Json, name: string, ptr: string): string {
    if (schema === true) schema = {};
    if (schema === false) throw new SchemaError(ptr, 'the schema `false` matches nothing');
    if (!isObject(schema)) throw new SchemaError(ptr, 'a schema must be an object or a boolean');
    const s = schema;
    const type = s.type;
    const ruleName = RESERVED.has(name) ? `${name}-` : name === '' ? 'root' : name;
    const sub = (suffix: string) => (name === '' ? suffix : `${name}-${suffix}`);
    checkEnforceable(s, ptr);

    if ('$ref' in s) {
      if (typeof s.$ref !== 'string') throw new SchemaError(childPointer(ptr, '$ref'), '$ref must be a string');
      return this.addRule(ruleName, this.resolveRef(s.$ref, childPointer(ptr, '$ref')));
    }
    if ('oneOf' in s || 'anyOf' in s) {
      const key = 'oneOf' in s ? 'oneOf' : 'anyOf';
      const alts = this.list(s, key, ptr);
      const prefix = name === '' ? 'alternative-' : `${name}-`;
      return this.addRule(
        ruleName,
        alts.map((a, i) => this.visit(a, `${prefix}${i}`, childPointer(ptr, key, i))).join(' | '),
      );
    }
    if (Array.isArray(type)) {
      if (type.length === 0) throw new SchemaError(childPointer(ptr, 'type'), 'type must not be an empty list');
      const prefix = name === '' ? 'alternative-' : `${name}-`;
      return this.addRule(
        ruleName,
        type.map((t, i) => this.visit({ ...s, type: t }, `${prefix}${i}`, ptr)).join(' | '),
      );
    }
    if (type !== undefined && typeof type !== 'string') {
      throw new SchemaError(childPointer(ptr, 'type'), 'type must be a string or a list of strings');
    }
    if ('const' in s) return this.addRule(ruleName, `${gbnfLiteral(JSON.stringify(s.const))} space`);
    if ('enum' in s) {
      const values = this.list(s, 'enum', ptr);
      return this.addRule(ruleName, `(${values.map((v) => gbnfLiteral(JSON.stringify(v))).join(' | ')}) space`);
    }
    if (
      (type === undefined || type === 'object') &&
      ('properties' in s || ('additionalProperties' in s && s.additionalProperties !== true))
    ) {
      return this.addRule(ruleName, this.objectRule(s, name, ptr));
    }
    if ((type === undefined || type === 'object' || type === 'string') && 'allOf' in s) {
      const merged = this.mergedAllOf(s, ptr);
      if (merged) return this.visit(merged, name, ptr);
      return this.addRule(ruleName, this.allOfRule(s, name, ptr));
    }
    if ((type === undefined || type === 'array') && ('items' in s || 'prefixItems' in s)) {
      return this.addRule(ruleName, this.arrayRule(s, ptr, sub));
    }
    const format = s.format;
    if (format !== undefined && typeof format !== 'string') {
      throw new SchemaError(childPointer(ptr, 'format'), 'format must be a string');
    }
    if ((type === undefined || type === 'string') && 'pattern' in s) {
      if (typeof s.pattern !== 'string')
        throw new SchemaError(childPointer(ptr, 'pattern'), 'pattern must be a string');
      let body: string;
      try {
        body = regexToGbnf(s.pattern, this.opts.dotall ?? false);
      } catch (e) {
        if (e instanceof RegexError) throw new SchemaError(childPointer(ptr, 'pattern'), e.message);
        throw e;
      }
      return this.addRule(ruleName, `"\\"" (${body}) "\\"" space`);
    }
    if ((type === undefined || type === 'string') && format !== undefined && /^uuid[1-5]?$/.test(format)) {
      return this.addPrimitive(ruleName === 'root' ? 'root' : format, PRIMITIVES.uuid!);
    }
    if ((type === undefined || type === 'string') && format !== undefined && FORMATS[`${format}-string`]) {
      const prim = `${format}-string`;
      return this.addRule(ruleName, this.addPrimitive(prim, FORMATS[prim]!));
    }
    if (type === 'string' && ('minLength' in s || 'maxLength' in s)) {
      const char = this.addPrimitive('char', PRIMITIVES.char!);
      const min = this.int(s, 'minLength', ptr) ?? 0;
      const max = this.int(s, 'maxLength', ptr) ?? Number.POSITIVE_INFINITY;
      if (min > max) throw new SchemaError(childPointer(ptr, 'minLength'), 'minLength exceeds maxLength');
      return this.addRule(ruleName, `"\\"" ${this.repetition(char, min, max, '', ptr)} "\\"" space`);
    }
    const bounded = 'minimum' in s || 'maximum' in s || 'exclusiveMinimum' in s || 'exclusiveMaximum' in s;
    if (type === 'integer' && bounded) {
      return this.addRule(ruleName, `(${integerRange(this.intBounds(s, ptr))}) space`);
    }
    if (type === 'number' && bounded) return this.addRule(ruleName, this.numberRule(s, ptr));
    if (Object.keys(s).length === 0 || type === 'object') {
      return this.addRule(ruleName, this.addPrimitive('object', PRIMITIVES.object!));
    }
    if (type === undefined) return this.addRule(ruleName, this.addPrimitive('value', PRIMITIVES.value!));
    const prim = PRIMITIVES[type];
    if (!prim || !['string', 'number', 'integer', 'boolean', 'null', 'array'].includes(type)) {
      throw new SchemaError(childPointer(ptr, 'type'), `unknown type '${type}'`);
    }
    return this.addPrimitive(ruleName === 'root' ? 'root' : type, prim);
  }

  // ---- references ----

  private resolveRef(ref: string, ptr: string): string {
    const hash = ref.indexOf('#');
    if (hash !== 0 || (ref.length > 1 && ref[1] !== '/')) {
      throw new SchemaError(ptr, `only local references (#/...) are supported, not '${ref}'`);
    }
    const fragment = ref.slice(1);
    const refName = `ref${fragment.replace(/[^a-zA-Z0-9-]+/g, '-')}`;
    if (this.rules.has(refName) || this.resolving.has(ref)) return refName;
    let target: Json = this.top;
    for (const raw of fragment.split('/').slice(1)) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      if (Array.isArray(target) && /^\d+$/.test(key) && Number(key) < target.length) target = target[Number(key)]!;
      else if (isObject(target) && key in target) target = target[key]!;
      else throw new SchemaError(ptr, `cannot resolve '${ref}': no '${key}'`);
    }
    this.resolving.add(ref);
    try {
      return this.visit(target, refName, ref);
    } finally {
      this.resolving.delete(ref);
    }
  }

  // ---- objects ----

  private objectRule(s: Schema, name: string, ptr: string): string {
    const props = s.properties ?? {};
    if (!isObject(props)) throw new SchemaError(childPointer(ptr, 'properties'), 'properties must be an object');
    const required = new Set<string>();
    if ('required' in s) {
      if (!Array.isArray(s.required) || s.required.some((r) => typeof r !== 'string')) {
        throw new SchemaError(childPointer(ptr, 'required'), 'required must be a list of property names');
      }
      for (const r of s.required as string[]) required.add(r);
    }
    const entries = Object.entries(props).map(([k, v]) => [k, v, childPointer(ptr, 'properties', k)] as const);
    return this.buildObject(entries, required, name, s.additionalProperties, childPointer(ptr, 'additionalProperties'));
  }

  /**
   * allOf's types must agree: a value cannot be a string and an integer (llama.cpp turns
   * such a schema into `{}`). When no part has properties, enums or references, the parts'
   * keywords are merged into one schema (undefined otherwise: objects are merged by
   * allOfRule). Throws SchemaError for parts that cannot all hold.
   */
  private mergedAllOf(s: Schema, ptr: string): Schema | undefined {
    const parts = this.list(s, 'allOf', ptr);
    let types = typeSet(s.type);
    parts.forEach((p, i) => {
      let part = p;
      if (isObject(p) && typeof p.$ref === 'string') {
        this.resolveRef(p.$ref, childPointer(ptr, 'allOf', i, '$ref'));
        part = this.lookup(p.$ref);
      }
      if (!isObject(part)) return;
      const t = typeSet(part.type);
      if (t) types = types ? intersectTypes(types, t) : t;
    });
    if (types && types.size === 0) {
      const named = parts.map((p) => (isObject(p) && p.type !== undefined ? JSON.stringify(p.type) : 'any'));
      throw new SchemaError(
        childPointer(ptr, 'allOf'),
        `no value can have every type the schemas require (${named.join(', ')}): the schema matches nothing`,
      );
    }
    const plain = parts.every(
      (p) => isObject(p) && !['properties', 'enum', 'const', '$ref', 'anyOf', 'oneOf', 'allOf'].some((k) => k in p),
    );
    if (!plain || types?.has('object')) return undefined;
    const merged: Schema = {};
    const take = (k: string, v: Json, at: string) => {
      if (k in merged && JSON.stringify(merged[k]) !== JSON.stringify(v)) {
        throw new SchemaError(
          at,
          `allOf: '${k}' differs between the schemas (merging different values is not supported)`,
        );
      }
      merged[k] = v;
    };
    for (const [k, v] of Object.entries(s)) if (k !== 'allOf' && k !== 'type') take(k, v, childPointer(ptr, k));
    parts.forEach((p, i) => {
      for (const [k, v] of Object.entries(p as Schema)) if (k !== 'type') take(k, v, childPointer(ptr, 'allOf', i, k));
    });
    if (types) merged.type = types.size === 1 ? [...types][0]! : [...types];
    return merged;
  }

  private allOfRule(s: Schema, name: string, ptr: string): string {
    const required = new Set<string>();
    const props: [string, Json, string][] = [];
    const enumCounts = new Map<string, number>();
    const parts = this.list(s, 'allOf', ptr);
    const add = (comp: Json, isRequired: boolean, cptr: string) => {
      if (!isObject(comp)) throw new SchemaError(cptr, 'a schema must be an object');
      if (typeof comp.$ref === 'string') {
        this.resolveRef(comp.$ref, childPointer(cptr, '$ref'));
        add(this.lookup(comp.$ref), isRequired, comp.$ref);
      } else if (isObject(comp.properties)) {
        for (const [k, v] of Object.entries(comp.properties)) {
          props.push([k, v, childPointer(cptr, 'properties', k)]);
          if (isRequired) required.add(k);
        }
      } else if (Array.isArray(comp.enum)) {
        for (const v of comp.enum) {
          const lit = gbnfLiteral(JSON.stringify(v));
          enumCounts.set(lit, (enumCounts.get(lit) ?? 0) + 1);
        }
      } else {
        throw new SchemaError(
          cptr,
          'allOf: this part cannot be merged (objects merge their properties, enums their common values)',
        );
      }
    };
    parts.forEach((p, i) => {
      const pp = childPointer(ptr, 'allOf', i);
      if (isObject(p) && Array.isArray(p.anyOf)) {
        for (const [j, q] of p.anyOf.entries()) add(q, false, childPointer(pp, 'anyOf', j));
      } else add(p, true, pp);
    });
    if (enumCounts.size > 0) {
      const common = [...enumCounts].filter(([, n]) => n === parts.length).map(([lit]) => lit);
      if (common.length > 0) return `(${common.join(' | ')}) space`;
      if (props.length === 0) {
        throw new SchemaError(
          childPointer(ptr, 'allOf'),
          'the enums have no value in common: the schema matches nothing',
        );
      }
    }
    return this.buildObject(props, required, name, undefined, ptr);
  }

  private lookup(ref: string): Json {
    let target: Json = this.top;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      target = Array.isArray(target) ? target[Number(key)]! : isObject(target) ? target[key]! : null;
    }
    return target;
  }

  /**
   * `{` required properties in order, then the optional ones in order, each either present
   * or skipped, then (with additionalProperties) any number of other keys `}`. Rule count
   * and text are linear in the number of properties.
   */
  private buildObject(
    props: readonly (readonly [string, Json, string])[],
    required: Set<string>,
    name: string,
    additional: Json | undefined,
    addPtr: string,
  ): string {
    const sub = (suffix: string) => (name === '' ? suffix : `${name}-${suffix}`);
    const kv = new Map<string, string>();
    const req: string[] = [];
    const opt: string[] = [];
    for (const [prop, schema, pptr] of props) {
      const valueRule = this.visit(schema, sub(prop || 'empty'), pptr);
      kv.set(
        prop,
        this.addRule(sub(`${prop || 'empty'}-kv`), `${gbnfLiteral(JSON.stringify(prop))} space ":" space ${valueRule}`),
      );
      (required.has(prop) ? req : opt).push(prop);
    }
    if (additional !== undefined && additional !== false && additional !== true && !isObject(additional)) {
      throw new SchemaError(addPtr, 'additionalProperties must be a boolean or a schema');
    }
    const ANY = '\u0000*'; // the key of "any other property" (not a possible property name here)
    if (additional === true || isObject(additional)) {
      const base = sub('additional');
      const valueRule = isObject(additional)
        ? this.visit(additional, `${base}-value`, addPtr)
        : this.addPrimitive('value', PRIMITIVES.value!);
      const names = props.map(([p]) => p);
      const keyRule =
        names.length === 0
          ? this.addPrimitive('string', PRIMITIVES.string!)
          : this.addRule(`${base}-k`, this.notStrings(names));
      kv.set(ANY, this.addRule(`${base}-kv`, `${keyRule} ":" space ${valueRule}`));
      opt.push(ANY);
    }
    let rule = '"{" space ';
    rule += req.map((p) => kv.get(p)!).join(' "," space ');
    if (opt.length > 0) {
      // The optional properties, in order, each present or not: `<k>-from` chooses the next
      // one present from k on, `<k>-rest` is what may follow k:
      //   <k>-from ::= kv(k) <k>-rest | <k+1>-from      <k>-rest ::= ( "," space <k+1>-from )?
      // (the last: kv(k), or for other keys kv(*) ( "," space kv(*) )*). llama.cpp writes the
      // same language as one alternative per first property present, each chaining
      // `( "," space kv )?` per later property: linear too once each chain is built once
      // (llama.cpp rebuilds them per alternative: cubic), but then whitespace after a comma
      // runs inside every later property's alternative, and a matcher state holds one stack
      // per property for each whitespace character; here the choice is made at the key.
      const name = (k: string, what: string) => sub(`${k === ANY ? 'additional' : k || 'empty'}-${what}`);
      let from = '';
      for (let i = opt.length - 1; i >= 0; i--) {
        const k = opt[i]!;
        const kvRule = kv.get(k)!;
        let body: string;
        if (k === ANY) body = `${kvRule} ( "," space ${kvRule} )*`;
        else if (i === opt.length - 1) body = kvRule;
        else body = `${kvRule} ${this.addRule(name(k, 'rest'), `( "," space ${from} )?`)} | ${from}`;
        from = this.addRule(name(k, 'from'), body);
      }
      rule += req.length > 0 ? ` ( "," space ${from} )?` : `${from}?`;
    }
    return `${rule} "}" space`;
  }

  /** A JSON string that is none of `names` (for keys of additional properties). */
  private notStrings(names: string[]): string {
    interface Node {
      children: Map<string, Node>;
      end: boolean;
    }
    const root: Node = { children: new Map(), end: false };
    for (const n of names) {
      let node = root;
      for (const ch of JSON.stringify(n).slice(1, -1)) {
        let next = node.children.get(ch);
        if (!next) {
          next = { children: new Map(), end: false };
          node.children.set(ch, next);
        }
        node = next;
      }
      node.end = true;
    }
    const char = this.addPrimitive('char', PRIMITIVES.char!);
    const classChar = (c: string) => (/[\\\]\-^"]/.test(c) ? `\\${c}` : c);
    // strings that continue from a node without spelling a name, children first (with an
    // explicit stack: names may be long)
    const done = new Map<Node, string>();
    const todo: [Node, boolean][] = [[root, false]];
    while (todo.length > 0) {
      const [node, expanded] = todo.pop()!;
      if (!expanded) {
        todo.push([node, true]);
        for (const child of node.children.values()) todo.push([child, false]);
        continue;
      }
      const alts: string[] = [];
      for (const [c, child] of node.children) {
        alts.push(`[${classChar(c)}] (${done.get(child)!})${child.end ? '' : '?'}`);
        done.delete(child);
      }
      const others = [...node.children.keys()].map(classChar).join('');
      alts.push(`[^"\\\\\\x7F\\x00-\\x1F${others}] ${char}*`);
      done.set(node, alts.join(' | '));
    }
    // at the root: the empty string is a valid key unless it is a name
    const body = done.get(root)!;
    return `"\\"" ( ${body} )${root.end ? '' : '?'} "\\"" space`;
  }

  // ---- arrays ----

  private arrayRule(s: Schema, ptr: string, sub: (suffix: string) => string): string {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
    if (tuple) {
      const key = Array.isArray(s.prefixItems) ? 'prefixItems' : 'items';
      const parts = tuple.map((item, i) => this.visit(item, sub(`tuple-${i}`), childPointer(ptr, key, i)));
      let rule = `"[" space ${parts.join(' "," space ')}`;
      if (key === 'prefixItems' && s.items !== undefined && s.items !== false) {
        const rest = this.visit(s.items, sub('item'), childPointer(ptr, 'items'));
        rule += ` ( "," space ${rest} )*`;
      }
      return `${rule} "]" space`;
    }
    const itemRule = this.visit(s.items ?? true, sub('item'), childPointer(ptr, 'items'));
    const min = this.int(s, 'minItems', ptr) ?? 0;
    const max = this.int(s, 'maxItems', ptr) ?? Number.POSITIVE_INFINITY;
    if (min > max) throw new SchemaError(childPointer(ptr, 'minItems'), 'minItems exceeds maxItems');
    return `"[" space ${this.repetition(itemRule, min, max, '"," space', ptr)} "]" space`;
  }

  /** `item` between min and max times, separated by `sep` (llama.cpp's build_repetition). */
  private repetition(item: string, min: number, max: number, sep: string, ptr: string): string {
    if (max > MAX_REPETITION && Number.isFinite(max)) {
      throw new SchemaError(
        ptr,
        `an upper bound of ${max} is above the grammar's repetition limit (${MAX_REPETITION})`,
      );
    }
    if (min > MAX_REPETITION)
      throw new SchemaError(ptr, `a lower bound of ${min} is above the grammar's repetition limit`);
    const bounded = Number.isFinite(max);
    if (max === 0) return '';
    if (min === 0 && max === 1) return `${item}?`;
    if (sep === '') {
      if (min === 1 && !bounded) return `${item}+`;
      if (min === 0 && !bounded) return `${item}*`;
      return `${item}{${min},${bounded ? max : ''}}`;
    }
    const rest = this.repetition(`(${sep} ${item})`, min === 0 ? 0 : min - 1, bounded ? max - 1 : max, '', ptr);
    const result = `${item} ${rest}`;
    return min === 0 ? `(${result})?` : result;
  }

  // ---- integers ----

  /** minimum / maximum and their exclusive forms (draft 4's booleans too), as read. */
  private bounds(s: Schema, ptr: string): [Bound | undefined, Bound | undefined] {
    const num = (key: string): number | undefined => {
      const v = s[key];
      if (v === undefined || typeof v === 'boolean') return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new SchemaError(childPointer(ptr, key), `${key} must be a number`);
      return v;
    };
    const pick = (plain: string, excl: string, lower: boolean): Bound | undefined => {
      const v = num(plain);
      const x = num(excl);
      const a: Bound | undefined = v === undefined ? undefined : { value: v, exclusive: s[excl] === true };
      const b: Bound | undefined = x === undefined ? undefined : { value: x, exclusive: true };
      if (!a || !b) return a ?? b;
      // both: the tighter one
      if (a.value === b.value) return b;
      return lower === a.value > b.value ? a : b;
    };
    return [pick('minimum', 'exclusiveMinimum', true), pick('maximum', 'exclusiveMaximum', false)];
  }

  /** Integer bounds as inclusive BigInts (up to 64 bits, as llama.cpp reads them). */
  private intBounds(s: Schema, ptr: string): [bigint | undefined, bigint | undefined] {
    const [lo, hi] = this.bounds(s, ptr);
    const inclusive = (b: Bound | undefined, lower: boolean, key: string): bigint | undefined => {
      if (!b) return undefined;
      // the nearest integers inside the bound
      let v = lower ? Math.ceil(b.value) : Math.floor(b.value);
      if (b.exclusive && v === b.value) v += lower ? 1 : -1;
      const n = BigInt(v);
      if (n > INT64_MAX || n < -INT64_MAX - 1n) {
        throw new SchemaError(childPointer(ptr, key), `integer bound ${b.value} does not fit in 64 bits`);
      }
      return n;
    };
    const min = inclusive(lo, true, 'minimum');
    const max = inclusive(hi, false, 'maximum');
    if (min !== undefined && max !== undefined && min > max) {
      throw new SchemaError(ptr, `no integer lies between the bounds (${min} > ${max})`);
    }
    return [min, max];
  }

  /** A number range: exactly the decimals between the bounds (no exponent). */
  private numberRule(s: Schema, ptr: string): string {
    const [lo, hi] = this.bounds(s, ptr);
    for (const [b, key] of [
      [lo, 'minimum'],
      [hi, 'maximum'],
    ] as const) {
      if (b && Math.abs(b.value) >= 1e16) {
        throw new SchemaError(childPointer(ptr, key), `bound ${b.value} on a number is beyond 16 integer digits`);
      }
    }
    const body = decimalRange(lo, hi);
    if (
      body === '' ||
      (lo && hi && (lo.value > hi.value || (lo.value === hi.value && (lo.exclusive || hi.exclusive))))
    ) {
      throw new SchemaError(ptr, 'no number lies between the bounds');
    }
    return `(${body}) space`;
  }
}

/** A `type` keyword as a set of type names (undefined when absent or not a type). */
function typeSet(t: Json | undefined): Set<string> | undefined {
  if (typeof t === 'string') return new Set([t]);
  if (Array.isArray(t) && t.every((x) => typeof x === 'string')) return new Set(t as string[]);
  return undefined;
}

/** Types both sets allow (an integer is also a number). */
function intersectTypes(a: Set<string>, b: Set<string>): Set<string> {
  const out = new Set([...a].filter((t) => b.has(t)));
  if ((a.has('integer') && b.has('number')) || (a.has('number') && b.has('integer'))) out.add('integer');
  return out;
}
