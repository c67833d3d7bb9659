// Replies read as they stream (src/chat/output.ts): for each tool-call format and for
// reasoning blocks, the deltas of a reply fed a character at a time (and in random
// chunks) add up to the finished reply's reading, every reading extends the one before,
// and the finished reading is what the format says (content, reasoning, calls with
// compact arguments). Tool-call grammars (src/chat/tool-grammar.ts) accept exactly valid
// calls; lazy grammars start at their trigger.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  applyChatDelta,
  type ChatOutput,
  type ChatOutputOptions,
  ChatOutputParser,
  chatDelta,
  compactJson,
  partialString,
  type Tool,
  toolCallGrammar,
} from '../src/chat/index.js';
import { GrammarMatcher, GrammarSampler, parseGrammar } from '../src/sampling/grammar/index.js';
import { seededRandom } from './helpers/random.js';

let n = 0;
const ids = () => `id${n++}`;

/** Feeds `text` in pieces; checks each reading extends the last; returns the accumulated deltas and the final reading. */
function stream(opts: ChatOutputOptions, text: string, cuts: number[]): { acc: ChatOutput; final: ChatOutput } {
  const p = new ChatOutputParser({ ...opts, makeId: ids });
  let prev: ChatOutput = { content: '', tool_calls: [] };
  let acc: ChatOutput = { content: '', tool_calls: [] };
  for (const at of [...cuts, text.length]) {
    const next = p.update(text.slice(0, at));
    assert.ok(
      next.content.startsWith(prev.content),
      `content shrank at ${at}: ${JSON.stringify([prev.content, next.content])}`,
    );
    assert.ok(
      (next.reasoning_content ?? '').startsWith(prev.reasoning_content ?? ''),
      `reasoning shrank at ${at}: ${JSON.stringify([prev.reasoning_content, next.reasoning_content])}`,
    );
    const d = chatDelta(prev, next);
    if (d) acc = applyChatDelta(acc, d);
    prev = next;
  }
  const final = p.update(text, true);
  const d = chatDelta(prev, final);
  if (d) acc = applyChatDelta(acc, d);
  return { acc, final };
}

function check(opts: ChatOutputOptions, text: string, want: Partial<ChatOutput> & { calls?: [string, string][] }) {
  const everyChar = Array.from({ length: text.length }, (_, i) => i);
  const rnd = seededRandom(text.length);
  const chunks: number[] = [];
  for (let i = 0; i < text.length; i += 1 + Math.floor(rnd() * 7)) chunks.push(i);
  for (const cuts of [everyChar, chunks]) {
    const { acc, final } = stream(opts, text, cuts);
    assert.equal(final.content, want.content ?? '', 'content');
    assert.equal(final.reasoning_content, want.reasoning_content, 'reasoning');
    assert.deepEqual(
      final.tool_calls.map((c) => [c.function.name, c.function.arguments]),
      want.calls ?? [],
      'calls',
    );
    // the deltas add up to the finished reading (ids included)
    assert.equal(acc.content, final.content);
    assert.equal(acc.reasoning_content, final.reasoning_content);
    assert.deepEqual(
      acc.tool_calls.map((c) => [c.id, c.function.name, c.function.arguments]),
      final.tool_calls.map((c) => [c.id, c.function.name, c.function.arguments]),
    );
  }
}

describe('replies read as they stream', () => {
  test('content only: the text as written', () => {
    check({}, 'Hello, world.\n', { content: 'Hello, world.\n' });
  });

  test('reasoning: a <think> block, the content after it', () => {
    check({ reasoning: true }, '<think>\nLet me see.\n</think>\n\nThe answer is 4.', {
      reasoning_content: 'Let me see.',
      content: 'The answer is 4.',
    });
    // opened by the prompt
    check({ reasoning: true, thinkingForcedOpen: true }, 'hmm, 2 and 2\n</think>\n4', {
      reasoning_content: 'hmm, 2 and 2',
      content: '4',
    });
    // never closed: all reasoning
    check({ reasoning: true, thinkingForcedOpen: true }, 'still thinking', { reasoning_content: 'still thinking' });
    // not a block: content (a '<' alone is held only until it cannot be the tag)
    check({ reasoning: true }, '<b>bold</b>', { content: '<b>bold</b>' });
    // reasoning_format none: left in the content
    check({ reasoning: false }, '<think>x</think>y', { content: '<think>x</think>y' });
  });

  test('hermes: content, then calls with compact arguments', () => {
    check(
      { tools: 'hermes' },
      'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}\n</tool_call>',
      { content: 'Let me look.', calls: [['get_weather', '{"city":"Paris","days":[1,2]}']] },
    );
    check(
      { tools: 'hermes' },
      '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": "<tool_call>"}}</tool_call>',
      {
        calls: [
          ['a', '{}'],
          ['b', '{"x":"<tool_call>"}'],
        ],
      },
    );
    // a reply with no call: content as written (trimmed)
    check({ tools: 'hermes' }, ' Just text. ', { content: 'Just text.' });
    // reasoning first, then a call
    check(
      { tools: 'hermes', reasoning: true },
      '<think>need weather</think>\n<tool_call>\n{"name": "w", "arguments": {"q": "a \\"b\\""}}\n</tool_call>',
      { reasoning_content: 'need weather', calls: [['w', '{"q":"a \\"b\\""}']] },
    );
  });

  test('mistral: [TOOL_CALLS] and a list, or name[ARGS]', () => {
    check({ tools: 'mistral' }, 'ok [TOOL_CALLS][{"name": "f", "arguments": {"a": 1}, "id": "abcdefghi"}]', {
      content: 'ok',
      calls: [['f', '{"a":1}']],
    });
    check({ tools: 'mistral' }, '[TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[ARGS]{}', {
      calls: [
        ['f', '{"a":1}'],
        ['g', '{}'],
      ],
    });
  });

  test('llama3: a JSON reply, or <|python_tag|>', () => {
    check({ tools: 'llama3' }, '{"name": "f", "parameters": {"a": "x"}}', { calls: [['f', '{"a":"x"}']] });
    check({ tools: 'llama3' }, 'Sure.<|python_tag|>{"name": "f", "parameters": {}}', {
      content: 'Sure.',
      calls: [['f', '{}']],
    });
    check({ tools: 'llama3' }, '<|python_tag|>brave_search.call(query="x")', {
      calls: [['brave_search', '{"query":"x"}']],
    });
    check({ tools: 'llama3' }, 'Plain answer.', { content: 'Plain answer.' });
  });

  test('no call syntax (a template without one): a JSON reply is content, as llama.cpp reads it', () => {
    for (const text of [
      '{"tool_call": {"name": "f", "arguments": {"n": 3}}}',
      '{"response": "Hi"}',
      '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ]) {
      check({}, text, { content: text });
    }
  });

  test('arguments stream as growing compact text', () => {
    const p = new ChatOutputParser({ tools: 'hermes', makeId: ids });
    const seen: string[] = [];
    const text = '<tool_call>{"name": "f", "arguments": {"a": "hello world", "b": 12}}</tool_call>';
    for (let i = 1; i <= text.length; i++) {
      const c = p.update(text.slice(0, i)).tool_calls[0];
      if (c) seen.push(c.function.arguments);
    }
    assert.ok(seen.length > 10, 'arguments appear before the call is complete');
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.startsWith(seen[i - 1]!));
    assert.equal(seen.at(-1), '{"a":"hello world","b":12}');
  });

  test('partial JSON helpers', () => {
    assert.equal(compactJson('{ "a" : [1, 2],\n "b": "x y" }'), '{"a":[1,2],"b":"x y"}');
    assert.equal(partialString('"ab\\'), 'ab');
    assert.equal(partialString('"ab\\u00'), 'ab');
    assert.equal(partialString('"ab\\\\'), 'ab\\');
    assert.equal(partialString('"a\\nb"'), 'a\nb');
  });
});

/** A reply cut at the end of `text` (max_tokens): its streamed deltas, then the cut reading's, add up to the cut reading. */
function cutStream(opts: ChatOutputOptions, text: string): ChatOutput {
  const p = new ChatOutputParser({ ...opts, makeId: ids });
  let prev: ChatOutput = { content: '', tool_calls: [] };
  let acc: ChatOutput = { content: '', tool_calls: [] };
  for (let i = 1; i <= text.length; i++) {
    const next = p.update(text.slice(0, i));
    const d = chatDelta(prev, next);
    if (d) acc = applyChatDelta(acc, d);
    prev = next;
  }
  const cut = p.cut(text);
  const d = chatDelta(prev, cut);
  if (d) acc = applyChatDelta(acc, d);
  assert.deepEqual(acc, cut, 'the streamed deltas add up to the cut reading');
  return cut;
}

const callsOf = (o: ChatOutput) => o.tool_calls.map((c) => [c.function.name, c.function.arguments]);

describe('replies cut before their end (max_tokens): read as llama.cpp reads them', () => {
  test('a call cut in its arguments stays unterminated; one cut after its name has "{"', () => {
    for (const [opts, text, args] of [
      [{ tools: 'hermes' }, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Y', '{"city":"Y'],
      [{ tools: 'hermes' }, '<tool_call>\n{"name": "get_weather", "argu', '{'],
      [
        { tools: 'hermes' },
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Yo", "days": 3}',
        '{"city":"Yo","days":3}',
      ],
      [{ tools: 'llama3' }, '{"name": "get_weather", "parameters": {"city": "Y', '{"city":"Y'],
      [{ tools: 'mistral' }, '[TOOL_CALLS][{"name": "get_weather", "arguments": {"ci', '{"ci'],
      [{ tools: 'mistral' }, '[TOOL_CALLS]get_weather[ARGS]', '{'],
    ] as const) {
      const cut = cutStream(opts, text);
      assert.deepEqual(callsOf(cut), [['get_weather', args]], text);
      assert.equal(cut.content, '', text);
    }
    // read as finished instead, the first two would be whole-looking or differ (what a cut must not do)
    const done = new ChatOutputParser({ tools: 'hermes' }).update('<tool_call>\n{"name": "get_weather", "argu', true);
    assert.deepEqual(callsOf(done), [['get_weather', '{}']]);
  });

  test('text that may begin a call stays held back; a reasoning block is kept', () => {
    assert.deepEqual(cutStream({ tools: 'hermes' }, 'Sure. <tool_ca'), { content: 'Sure.', tool_calls: [] });
    assert.deepEqual(cutStream({ tools: 'hermes' }, '<tool_call>\n{"name": "get_w'), { content: '', tool_calls: [] });
    const r = cutStream(
      { tools: 'hermes', reasoning: true, thinkingForcedOpen: true },
      'a plan\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Y',
    );
    assert.equal(r.reasoning_content, 'a plan');
    assert.deepEqual(callsOf(r), [['get_weather', '{"city":"Y']]);
    const thinking = cutStream({ tools: 'hermes', reasoning: true, thinkingForcedOpen: true }, 'a plan </thi');
    assert.deepEqual(thinking, { content: '', reasoning_content: 'a plan', tool_calls: [] });
    // no tools: the text as written
    assert.deepEqual(cutStream({}, 'Once upon a ti'), { content: 'Once upon a ti', tool_calls: [] });
  });

  test('harmony (read whole): a call cut in its body has its arguments as written', () => {
    const p = new ChatOutputParser({ tools: 'harmony', makeId: ids });
    const cut = p.cut(
      '<|channel|>analysis<|message|>think<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Y',
    );
    assert.equal(cut.reasoning_content, 'think');
    assert.deepEqual(callsOf(cut), [['get_weather', '{"city": "Y']]);
  });
});

const TOOLS: Tool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        $defs: { n: { type: 'number' } },
        properties: { a: { $ref: '#/$defs/n' }, b: { $ref: '#/$defs/n' } },
        required: ['a', 'b'],
      },
    },
  },
];

function full(grammar: string, text: string): boolean {
  const m = new GrammarMatcher(parseGrammar(grammar));
  return m.acceptString(text) && m.isComplete();
}

describe('tool-call grammars', () => {
  test('hermes: one call of a known tool with valid arguments ($refs inside a tool resolve)', () => {
    const g = toolCallGrammar({ format: 'hermes', tools: TOOLS, mode: 'required', parallel: false });
    assert.equal(g.lazy, false);
    assert.ok(
      full(g.grammar, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'),
    );
    assert.ok(full(g.grammar, '<tool_call>{"name": "add", "arguments": {"a": 1.5, "b": 2}}</tool_call>'));
    assert.ok(
      !full(g.grammar, '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 9}}</tool_call>'),
    );
    assert.ok(!full(g.grammar, '<tool_call>{"name": "other", "arguments": {}}</tool_call>'));
    assert.ok(!full(g.grammar, 'text <tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'));
    const two =
      '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>';
    assert.ok(!full(g.grammar, two));
    const par = toolCallGrammar({ format: 'hermes', tools: TOOLS, mode: 'required', parallel: true });
    assert.ok(full(par.grammar, two));
  });

  test("auto is lazy, started by the format's trigger", () => {
    const g = toolCallGrammar({ format: 'hermes', tools: TOOLS, mode: 'auto', parallel: false });
    assert.equal(g.lazy, true);
    assert.deepEqual(g.triggers, [{ type: 1, value: '<tool_call>' }]);
    assert.equal(
      toolCallGrammar({ format: 'mistral', tools: TOOLS, mode: 'auto', parallel: false }).triggers[0]!.value,
      '[TOOL_CALLS]',
    );
  });

  test('mistral, llama3', () => {
    const m = toolCallGrammar({ format: 'mistral', tools: TOOLS, mode: 'required', parallel: false });
    assert.ok(full(m.grammar, '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "abcDEF123"}]'));
    assert.ok(!full(m.grammar, '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "short"}]'));
    const l = toolCallGrammar({ format: 'llama3', tools: TOOLS, mode: 'required', parallel: false });
    assert.ok(full(l.grammar, '{"name": "get_weather", "parameters": {"city": "Oslo"}}'));
  });

  test("a tool's bad schema names the tool", () => {
    const bad: Tool[] = [
      { type: 'function', function: { name: 't', parameters: { type: 'object', properties: { x: { not: {} } } } } },
    ];
    assert.throws(
      () => toolCallGrammar({ format: 'hermes', tools: bad, mode: 'required', parallel: false }),
      /^SchemaError: tools\[0\]\.function\.parameters#\/properties\/x\/not: t: 'not' is not supported/,
    );
  });
});

describe('lazy grammars', () => {
  const vocabPieces = [
    '<eos>',
    ...'abcdefghijklmnopqrstuvwxyz <>_/{}":,'.split(''),
    '<tool_call>',
    'hello',
    '\xff', // a byte that is no UTF-8
    '\xc3', // the first byte of a two-byte character
  ];
  const vocab = {
    nTokens: vocabPieces.length,
    pieceBytes: (id: number) => (id === 0 ? '' : vocabPieces[id]!),
    isEog: (id: number) => id === 0,
  };
  const id = (p: string) => vocabPieces.indexOf(p);

  test('nothing is constrained until the trigger; then the grammar holds from it', () => {
    const g = new GrammarSampler('root ::= "<tool_call>" "{" [a-z]+ "}"', vocab).setLazy({
      patterns: [/<tool_call>/],
      tokens: [],
    });
    assert.ok(g.allows(id('hello')));
    g.accept(id('hello'));
    g.accept(id(' '));
    assert.ok(g.awaitingTrigger);
    assert.ok(g.isComplete(), 'an end is allowed while waiting');
    // the trigger spelled over several tokens
    for (const c of '<tool_call>') g.accept(id(c));
    assert.ok(!g.awaitingTrigger);
    assert.ok(!g.allows(id('hello')));
    assert.ok(g.allows(id('{')));
    g.accept(id('{'));
    g.accept(id('a'));
    g.accept(id('}'));
    assert.ok(g.isComplete());
  });

  test('bytes that are no UTF-8 before a trigger: the grammar gets the text from the trigger exactly', () => {
    const g = new GrammarSampler('root ::= "<tool_call>" "x"', vocab).setLazy({
      patterns: [/<tool_call>/],
      tokens: [],
    });
    for (const p of ['\xff', '\xff', '\xc3', 'a', '\xff']) g.accept(id(p));
    for (const c of '<tool_call>') g.accept(id(c));
    assert.ok(!g.awaitingTrigger);
    // fed "<tool_call>" (not nothing, not a part of it): "x" ends it
    assert.ok(g.allows(id('x')) && !g.allows(id('<')));
    g.accept(id('x'));
    assert.ok(g.isComplete());
  });

  test('a trigger token starts it with its own text; reset waits again', () => {
    const g = new GrammarSampler('root ::= "<tool_call>" "x"', vocab).setLazy({
      patterns: [],
      tokens: [id('<tool_call>')],
    });
    g.accept(id('a'));
    g.accept(id('<tool_call>'));
    assert.ok(!g.awaitingTrigger);
    assert.ok(g.allows(id('x')) && !g.allows(id('y')));
    g.reset();
    assert.ok(g.awaitingTrigger);
  });
});
