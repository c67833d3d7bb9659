// Tool-call parsing for each output format: Hermes / Qwen <tool_call> tags (several, unclosed,
// malformed), Llama 3.x JSON and <|python_tag|> forms, Mistral [TOOL_CALLS] (both forms),
// chat_format numbers, and format detection from template text (none for a template without
// call syntax: llama.cpp reads its replies as content).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  chatFormatOf,
  detectToolCallFormat,
  parseChatOutput,
  parseToolCalls,
  randomToolCallId,
  scanJson,
  type ToolCall,
} from '../src/chat/index.js';
import { LLAMA31, MISTRAL_NEMO, QWEN25 } from './chat-fixtures.js';

function ids(): () => string {
  let n = 0;
  return () => `id${++n}`;
}

function call(name: string, args: string, id: string): ToolCall {
  return { type: 'function', function: { name, arguments: args }, id };
}

describe('format detection', () => {
  test('from published templates', () => {
    assert.equal(detectToolCallFormat(QWEN25), 'hermes');
    assert.equal(detectToolCallFormat(LLAMA31), 'llama3');
    assert.equal(detectToolCallFormat(MISTRAL_NEMO), 'mistral');
    assert.equal(detectToolCallFormat('{{ messages }}'), undefined);
    assert.equal(detectToolCallFormat(undefined), undefined);
  });
});

describe('Hermes / Qwen', () => {
  test('one call, content around it', () => {
    const out = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    assert.deepEqual(parseToolCalls(out, 'hermes', { makeId: ids() }), {
      content: 'Let me check.',
      tool_calls: [call('get_weather', '{"city":"Paris"}', 'id1')],
    });
  });

  test('several calls, in separate tags or one tag; an unclosed last tag', () => {
    const out =
      '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n{"name": "c", "arguments": {"s": "}"}}\n</tool_call>\n<tool_call>{"name": "d", "arguments": {"y": [1, 2]}}';
    assert.deepEqual(parseToolCalls(out, 'hermes', { makeId: ids() }), {
      content: '',
      tool_calls: [
        call('a', '{"x":1}', 'id1'),
        call('b', '{}', 'id2'),
        call('c', '{"s":"}"}', 'id3'),
        call('d', '{"y":[1,2]}', 'id4'),
      ],
    });
  });

  test('malformed JSON stays in the content; good calls beside it still parse', () => {
    const bad = '<tool_call>\n{"name": "a", "arguments": {"x": 1}\n</tool_call>';
    assert.deepEqual(parseToolCalls(bad, 'hermes'), { content: bad, tool_calls: [] });
    const mixed = `${bad}\n<tool_call>{"name": "b", "arguments": {}}</tool_call>`;
    assert.deepEqual(parseToolCalls(mixed, 'hermes', { makeId: ids() }), {
      content: bad,
      tool_calls: [call('b', '{}', 'id1')],
    });
    const noName = '<tool_call>{"arguments": {}}</tool_call>';
    assert.deepEqual(parseToolCalls(noName, 'hermes'), { content: noName, tool_calls: [] });
  });

  test('plain text is left untouched', () => {
    const text = '  I think {"name": maybe} is fine.  ';
    assert.deepEqual(parseToolCalls(text, 'hermes'), { content: text, tool_calls: [] });
  });

  test('string arguments are kept as given; ids are 9 letters and digits by default', () => {
    const r = parseToolCalls('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', 'hermes');
    assert.equal(r.tool_calls[0]!.function.arguments, '{"a": 1}');
    assert.match(r.tool_calls[0]!.id!, /^[A-Za-z0-9]{9}$/);
    assert.match(randomToolCallId(), /^[A-Za-z0-9]{9}$/);
  });
});

describe('Llama 3.1 / 3.2', () => {
  test('a JSON reply with "parameters"', () => {
    assert.deepEqual(
      parseToolCalls('{"name": "get_weather", "parameters": {"city": "Paris"}}', 'llama3', { makeId: ids() }),
      { content: '', tool_calls: [call('get_weather', '{"city":"Paris"}', 'id1')] },
    );
  });

  test('several JSON calls separated by semicolons; <|python_tag|> JSON after text', () => {
    assert.deepEqual(
      parseToolCalls('{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"k": "v"}}', 'llama3', {
        makeId: ids(),
      }),
      { content: '', tool_calls: [call('a', '{}', 'id1'), call('b', '{"k":"v"}', 'id2')] },
    );
    assert.deepEqual(
      parseToolCalls('Sure.<|python_tag|>{"name": "a", "parameters": {"q": 1}}<|eom_id|>', 'llama3', { makeId: ids() }),
      { content: 'Sure.', tool_calls: [call('a', '{"q":1}', 'id1')] },
    );
  });

  test('builtin tools: tool.call(key="value") and bare code as python', () => {
    assert.deepEqual(
      parseToolCalls('<|python_tag|>brave_search.call(query="weather in Paris", n=3)', 'llama3', { makeId: ids() }),
      { content: '', tool_calls: [call('brave_search', '{"query":"weather in Paris","n":3}', 'id1')] },
    );
    assert.deepEqual(parseToolCalls('<|python_tag|>print(1 + 1)', 'llama3', { makeId: ids() }), {
      content: '',
      tool_calls: [call('python', '{"code":"print(1 + 1)"}', 'id1')],
    });
  });

  test('text that merely contains JSON, and malformed JSON, stay content', () => {
    for (const text of [
      'The answer is {"name": "x", "parameters": {}}',
      '{"name": "a", "parameters": {"x": 1}',
      '{"parameters": {}}',
      '{"name": "a", "parameters": {}} and more',
    ]) {
      assert.deepEqual(parseToolCalls(text, 'llama3'), { content: text, tool_calls: [] });
    }
  });
});

describe('Mistral', () => {
  test('[TOOL_CALLS] with a JSON list (ids kept), text before it', () => {
    const out =
      'Checking.[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}, "id": "abcDEF123"}, {"name": "b", "arguments": {}}]';
    assert.deepEqual(parseToolCalls(out, 'mistral', { makeId: ids() }), {
      content: 'Checking.',
      tool_calls: [call('a', '{"x":1}', 'abcDEF123'), call('b', '{}', 'id1')],
    });
  });

  test('the v11 form: name[ARGS]{...}, repeated', () => {
    assert.deepEqual(
      parseToolCalls('[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[CALL_ID]abc123XYZ[ARGS]{}', 'mistral', {
        makeId: ids(),
      }),
      { content: '', tool_calls: [call('a', '{"x":1}', 'id1'), call('b', '{}', 'abc123XYZ')] },
    );
  });

  test('malformed lists are left as content', () => {
    for (const text of [
      '[TOOL_CALLS][{"name": "a", "arguments": {}',
      '[TOOL_CALLS][{"arguments": {}}]',
      '[TOOL_CALLS]',
    ]) {
      assert.deepEqual(parseToolCalls(text, 'mistral'), { content: text, tool_calls: [] });
    }
  });
});

describe('chat_format', () => {
  test('chat_format 0 never parses; a tool format does', () => {
    const text = '<tool_call>{"name": "a", "arguments": {}}</tool_call>';
    assert.deepEqual(parseChatOutput(text, 0), { content: text, tool_calls: [] });
    assert.equal(parseChatOutput(text, chatFormatOf('hermes')).tool_calls.length, 1);
  });

  test('scanJson skips brackets inside strings', () => {
    const s = '{"a": "}]", "b": [1, {"c": "\\"}"}]} tail';
    assert.equal(s.slice(0, scanJson(s, 0)), '{"a": "}]", "b": [1, {"c": "\\"}"}]}');
    assert.equal(scanJson('{"a": 1', 0), -1);
  });
});
