// Grammars that make a model's tool calls valid, per tool-call format (llama.cpp's
// common_chat_params_init_* grammars): each call is an object whose name is one of the
// tools and whose arguments follow that tool's JSON Schema.
//   tool_choice 'auto'      a lazy grammar, started by the format's trigger (hermes
//                           `<tool_call>`, mistral `[TOOL_CALLS]`, llama3 a reply opening
//                           with `{"` or `<|python_tag|>`): text stays free until a call
//                           begins, then the call must be valid;
//   'required' / a name     the grammar holds from the first token: the reply is call(s).
// A template with no call syntax gets no grammar (llama.cpp's neither: its reply is content).
// The tools' schemas are untrusted: this runs on the untrusted-work worker (src/untrusted),
// like any JSON Schema conversion.
import { convertJsonSchemaRules, gbnfLiteral, SchemaError } from '../sampling/grammar/json-schema.js';
import type { ToolCallFormat } from './tool-calls.js';
import type { Tool } from './types.js';

/** A trigger of a lazy grammar (llama.cpp's common_grammar_trigger types: 1 word, 2 pattern, 3 full pattern). */
export interface ToolGrammarTrigger {
  type: 1 | 2 | 3;
  value: string;
}

export interface ToolGrammarRequest {
  format: ToolCallFormat;
  /** The tools the reply may call (one, for a named tool_choice). */
  tools: readonly Tool[];
  /** 'auto': calls are optional (a lazy grammar); 'required': the reply is calls. */
  mode: 'auto' | 'required';
  /** Several calls in one reply. */
  parallel: boolean;
}

export interface ToolGrammar {
  grammar: string;
  /** Holds only once a trigger appears (else from the first token). */
  lazy: boolean;
  triggers: ToolGrammarTrigger[];
}

/** The key a format writes a call's arguments under. */
function argsKey(format: ToolCallFormat): string {
  return format === 'llama3' ? 'parameters' : 'arguments';
}

/** `$ref`s inside a tool's parameters point into that schema: re-root them where it now sits. */
function reroot(schema: unknown, base: string, depth = 0): unknown {
  if (depth > 256) throw new SchemaError('#', 'the schema is nested more than 256 levels deep');
  if (Array.isArray(schema)) return schema.map((s) => reroot(s, base, depth + 1));
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#')) out[k] = `${base}${v.slice(1)}`;
    else out[k] = reroot(v, base, depth + 1);
  }
  return out;
}

/** The call objects' schema: one alternative per tool, its name a constant, its arguments its schema. */
function callSchema(req: ToolGrammarRequest, prefix: string): { schema: Record<string, unknown>; alts: string } {
  const key = argsKey(req.format);
  const alternatives = req.tools.map((t, i) => {
    const params = t.function.parameters ?? { type: 'object' };
    const properties: Record<string, unknown> = {
      name: { const: t.function.name },
      [key]: reroot(params, `${prefix}/anyOf/${i}/properties/${key}`),
    };
    const required = ['name', key];
    if (req.format === 'mistral') {
      properties.id = { type: 'string', pattern: '^[a-zA-Z0-9]{9}$' };
      required.push('id');
    }
    return { type: 'object', properties, required, additionalProperties: false };
  });
  return { schema: { anyOf: alternatives }, alts: `${prefix}/anyOf` };
}

/** A SchemaError in the combined schema, named after the tool whose parameters hold it. */
function toolError(e: unknown, req: ToolGrammarRequest, alts: string): unknown {
  if (!(e instanceof SchemaError)) return e;
  const key = argsKey(req.format);
  const m = new RegExp(`^${alts.replace(/[/$]/g, '\\$&')}/(\\d+)/properties/${key}(.*)$`).exec(e.pointer);
  if (!m) return e;
  const i = Number(m[1]);
  return new SchemaError(`tools[${i}].function.parameters#${m[2]}`, `${req.tools[i]?.function.name}: ${e.reason}`);
}

/** The grammar (GBNF), laziness and triggers for tool calls in a format. Throws SchemaError naming the tool. */
export function toolCallGrammar(req: ToolGrammarRequest): ToolGrammar {
  if (req.tools.length === 0) throw new SchemaError('#', 'no tools to call');
  for (const [i, t] of req.tools.entries()) {
    if (typeof t?.function?.name !== 'string' || t.function.name === '') {
      throw new SchemaError(`tools[${i}]`, 'a tool needs function.name');
    }
  }
  const { schema, alts } = callSchema(req, '#');
  let rules: { rules: string; root: string };
  try {
    rules = convertJsonSchemaRules(schema, 'tool-call');
  } catch (e) {
    throw toolError(e, req, alts);
  }
  const call = rules.root;
  let root: string;
  const triggers: ToolGrammarTrigger[] = [];
  switch (req.format) {
    case 'hermes': {
      const one = `${gbnfLiteral('<tool_call>')} space ${call} space ${gbnfLiteral('</tool_call>')}`;
      root = req.parallel ? `${one} ( space ${one} )*` : one;
      triggers.push({ type: 1, value: '<tool_call>' });
      break;
    }
    case 'mistral': {
      const list = req.parallel ? `${call} ( "," space ${call} )*` : call;
      root = `${gbnfLiteral('[TOOL_CALLS]')} space "[" space ${list} "]" space`;
      triggers.push({ type: 1, value: '[TOOL_CALLS]' });
      break;
    }
    case 'llama3': {
      const list = req.parallel ? `${call} ( ";" space ${call} )*` : call;
      root = `( ${gbnfLiteral('<|python_tag|>')} )? ${list}`;
      // a reply that opens with a JSON object, or the python tag anywhere
      triggers.push({ type: 3, value: '\\s*(\\{\\s*")[\\s\\S]*' }, { type: 1, value: '<|python_tag|>' });
      break;
    }
    default:
      throw new SchemaError('#', `no tool-call grammar for the '${req.format}' format`);
  }
  return { grammar: `root ::= ${root}\n${rules.rules}`, lazy: req.mode === 'auto', triggers };
}
