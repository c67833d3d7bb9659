// What the client end-to-end tests share: a chat template with Hermes tool calls and a
// reasoning block the generation prompt opens on request (chat_template_kwargs
// {think: true}), tools and schemas whose outputs are bounded (so a grammar-constrained
// reply from a tiny model always completes), and a server on loopback.
import { z } from 'zod';
import { ensureModel } from '../../src/generator/index.js';
import { LlamaServer, type ServerOptions } from '../../src/server/index.js';
import { QWEN25 } from '../chat-fixtures.js';

/** The generated tiny llama with a 4096-token training context (tool prompts are long in its 512-token vocabulary). */
export function clientModel(): string {
  return ensureModel('tiny-llama', 'Q8_0', undefined, { shape: { nCtxTrain: 4096 } });
}

/**
 * Qwen 2.5's template (Hermes `<tool_call>` tags), with assistant reasoning written as a
 * <think> block and, when `think` is set, a generation prompt that opens one (as Qwen3.5's
 * does: the model starts inside it, llama.cpp's thinking_forced_open).
 */
export const THINKING_HERMES = QWEN25.replace(
  `{%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}`,
  `{%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.reasoning_content %}
            {{- '\\n<think>\\n' + message.reasoning_content + '\\n</think>\\n' }}
        {%- endif %}`,
).replace(
  `{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}`,
  `{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if think %}
        {{- '<think>\\n' }}
    {%- endif %}`,
);
if (!THINKING_HERMES.includes('{%- if think %}') || !THINKING_HERMES.includes('</think>')) {
  throw new Error('THINKING_HERMES: the Qwen 2.5 template changed; update the replacements');
}

/** A weather tool: bounded arguments (a short city, 1 to 7 days). */
export const WeatherArgs = z.object({ city: z.string().max(10), days: z.number().int().min(1).max(7) });
/** A sum tool. */
export const AddArgs = z.object({ a: z.number().int().min(0).max(99), b: z.number().int().min(0).max(99) });

export const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city for some days',
    parameters: z.toJSONSchema(WeatherArgs) as Record<string, unknown>,
  },
};
export const ADD_TOOL = {
  type: 'function' as const,
  function: {
    name: 'add',
    description: 'Adds two numbers',
    parameters: z.toJSONSchema(AddArgs) as Record<string, unknown>,
  },
};

/** A structured output with Zod's .int() (its ±2^53 bounds), an enum, a bounded number and a nullable field. */
export const Person = z.object({
  name: z.string().max(12),
  age: z.number().int(),
  mood: z.enum(['happy', 'sad']),
  score: z.number().min(0).max(1),
  nick: z.string().max(5).nullable(),
});

const Point = z.object({ x: z.number().int().min(0).max(99), y: z.number().int().min(0).max(99) });

/**
 * A schema with the JSON Schema keywords llama.cpp's converter handles, as Zod writes them:
 * const, formats (date; time and uuid with their patterns), pattern, enum, minItems /
 * maxItems, prefixItems (a tuple), anyOf (a union), oneOf (a discriminated union), allOf
 * (two objects, written in by hand), 64-bit integer bounds (.int()), $defs/$ref (a schema
 * used twice, with `reused: 'ref'`), minLength/maxLength and an optional property.
 */
export const Rich = z.object({
  kind: z.literal('event'),
  when: z.iso.date(),
  at: z.iso.time(),
  id: z.uuid(),
  code: z.string().regex(/^[A-Z]{3}-[0-9]{2}$/),
  tags: z
    .array(z.enum(['a', 'b', 'c']))
    .min(1)
    .max(3),
  pair: z.tuple([z.number().int().min(0).max(9), z.boolean()]),
  value: z.union([z.number().int().min(-5).max(5), z.string().max(4)]),
  shape: z.discriminatedUnion('type', [
    z.object({ type: z.literal('circle'), r: z.number().int().min(1).max(9) }),
    z.object({ type: z.literal('square'), side: z.number().int().min(1).max(9) }),
  ]),
  flags: z.object({ a: z.boolean(), b: z.boolean() }),
  big: z.int(),
  from: Point,
  to: Point,
  note: z.string().min(2).max(8).optional(),
});
export const RICH_SCHEMA = z.toJSONSchema(Rich, { reused: 'ref' }) as { properties: Record<string, unknown> };
// Zod merges an intersection of objects itself; written as allOf, as other generators do
RICH_SCHEMA.properties.flags = {
  allOf: [
    { type: 'object', properties: { a: { type: 'boolean' } }, required: ['a'] },
    { type: 'object', properties: { b: { type: 'boolean' } }, required: ['b'] },
  ],
};

export const API_KEY = 'sk-local-test';

/** A server on loopback for the client tests: the model, 4 slots of 2048 tokens, CORS, a key, embeddings. */
export function startServer(opts: Partial<ServerOptions> = {}): Promise<LlamaServer> {
  return LlamaServer.start({
    model: clientModel(),
    port: 0,
    parallel: 4,
    nCtx: 4 * 2048,
    apiKey: API_KEY,
    cors: '*',
    embeddings: true,
    ...opts,
  });
}

/** Greedy, no end-of-generation token (a tiny model's replies then always reach max_tokens or a grammar's end). */
export const GREEDY = { temperature: 0, ignore_eos: true } as const;

/**
 * Greedy, and every request evaluates its whole prompt (llama-server's cache_prompt:
 * false): a reply then does not depend on what the slot held before. (ggml-cpu's attention
 * rounds differently for 64+ query rows at once than for a few rows after a reused prefix,
 * and llama-ts follows it bit for bit, so with a random tiny model's near-tied logits a
 * greedy reply can change with the cache.) For comparing a streamed reply with the same
 * request unstreamed.
 */
export const REPEATABLE = { ...GREEDY, cache_prompt: false } as const;

/** Options that make the model reason: the template opens the block, and a budget of `n` tokens closes it. */
export function thinking(n = 6): Record<string, unknown> {
  return { chat_template_kwargs: { think: true }, thinking_budget_tokens: n };
}
