// ChatTemplate on real templates (fixtures in chat-fixtures.ts), rendered exactly: with and
// without add_generation_prompt, with tools, tool calls and tool results; message
// normalization (`text` alias, typed content); strftime_now; template variables from GGUF
// files; and the fallback to the detected built-in format when a template fails.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type ChatMessage, ChatTemplate, ChatTemplateError, type Tool } from '../src/chat/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { type LogLevel, setLogCallback } from '../src/log.js';
import { loadVocab } from '../src/vocab/index.js';
import { LLAMA31, MISTRAL_NEMO, QWEN25 } from './chat-fixtures.js';
import { missingShared, sharedPath } from './helpers/shared.js';

/** Runs fn with the library's log captured. */
function captureLog<T>(fn: () => T): { value: T; logs: { level: LogLevel; message: string; source: string }[] } {
  const logs: { level: LogLevel; message: string; source: string }[] = [];
  setLogCallback((level, message, source) => logs.push({ level, message, source }));
  try {
    return { value: fn(), logs };
  } finally {
    setLogCallback(null);
  }
}

const CONV: ChatMessage[] = [
  { role: 'system', content: 'You are a bot.' },
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!' },
  { role: 'user', content: 'Weather in Paris?' },
];
const TOOLS: Tool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];
const CALL_TURNS: ChatMessage[] = [
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call00001', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call00001', content: '{"temp": 21}' },
];
const TOOLS_JSON =
  '{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}';

describe('Qwen2.5-Instruct template', () => {
  const t = new ChatTemplate(QWEN25, { eosToken: '<|im_end|>' });
  const toolSystem =
    '<|im_start|>system\nYou are a bot.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${TOOLS_JSON}\n</tools>\n\n` +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n';
  const turns =
    '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n';

  test('detection: chatml fallback, Hermes tool calls', () => {
    assert.equal(t.builtin, 'chatml');
    assert.equal(t.toolCallFormat, 'hermes');
  });

  test('system + user + assistant, with and without the generation prompt', () => {
    assert.equal(t.render(CONV), `<|im_start|>system\nYou are a bot.<|im_end|>\n${turns}<|im_start|>assistant\n`);
    assert.equal(
      t.render(CONV.slice(0, 3), { addGenerationPrompt: false }),
      '<|im_start|>system\nYou are a bot.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n',
    );
  });

  test('no system message: the default Qwen system prompt', () => {
    assert.equal(
      t.render([{ role: 'user', content: 'Hi' }]),
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  test('tools, a tool call (string arguments given to the template as an object) and its result', () => {
    assert.equal(t.render(CONV, { tools: TOOLS }), `${toolSystem}${turns}<|im_start|>assistant\n`);
    assert.equal(
      t.render([...CONV, ...CALL_TURNS], { tools: TOOLS }),
      `${toolSystem}${turns}<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n` +
        '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    // an empty tool list is no tools
    assert.equal(t.render(CONV, { tools: [] }), t.render(CONV));
  });
});

describe('Llama-3.1-Instruct template', () => {
  const t = new ChatTemplate(LLAMA31, { bosToken: '<|begin_of_text|>', eosToken: '<|eot_id|>' });
  const head = '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n';
  const dates = 'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n';

  test('detection: llama3 fallback and tool calls', () => {
    assert.equal(t.builtin, 'llama3');
    assert.equal(t.toolCallFormat, 'llama3');
  });

  test('system + user + assistant, with and without the generation prompt', () => {
    assert.equal(
      t.render(CONV),
      `${head}${dates}You are a bot.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>` +
        '<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>' +
        '<|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    assert.equal(
      t.render(CONV.slice(0, 3), { addGenerationPrompt: false }),
      `${head}${dates}You are a bot.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>` +
        '<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>',
    );
  });

  test('extra context: date_string', () => {
    const out = t.render(CONV.slice(0, 2), { context: { date_string: '01 Jan 2025' } });
    assert.ok(out.includes('Today Date: 01 Jan 2025\n\n'));
  });

  test('tools go into the first user turn; a call renders as {"name", "parameters"}; tool results as ipython', () => {
    const toolsIndented = JSON.stringify(TOOLS[0], null, 4);
    const user =
      '<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call ' +
      'with its proper arguments that best answers the given prompt.\n\n' +
      'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n' +
      `${toolsIndented}\n\nHi<|eot_id|>`;
    const rest =
      '<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>';
    const sys = `${head}Environment: ipython\n${dates}You are a bot.<|eot_id|>`;
    assert.equal(
      t.render(CONV, { tools: TOOLS }),
      `${sys}${user}${rest}<|start_header_id|>assistant<|end_header_id|>\n\n`,
    );
    assert.equal(
      t.render([...CONV, ...CALL_TURNS], { tools: TOOLS }),
      `${sys}${user}${rest}<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>` +
        // a string is iterable to Jinja, so the template JSON-quotes string tool results (as transformers does)
        '<|start_header_id|>ipython<|end_header_id|>\n\n"{\\"temp\\": 21}"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  test('two tool calls in one turn: the template raises, and that is an error (no fallback)', () => {
    const two: ChatMessage[] = [
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ function: { name: 'a', arguments: {} } }, { function: { name: 'b', arguments: {} } }],
      },
    ];
    assert.throws(
      () => t.render(two, { strict: true }),
      /raised an exception: This model only supports single tool-calls/,
    );
    // as llama-server: the template refuses the conversation, so the request fails
    const { value, logs } = captureLog(() => {
      try {
        return t.apply(two);
      } catch (e) {
        return e;
      }
    });
    assert.ok(value instanceof ChatTemplateError, 'apply throws');
    assert.equal(value.kind, 'raise');
    assert.match(value.message, /single tool-calls/);
    assert.equal(logs.length, 0, 'nothing is logged: the caller gets the error');
  });
});

describe('Mistral-Nemo-Instruct-2407 template', () => {
  const t = new ChatTemplate(MISTRAL_NEMO, { bosToken: '<s>', eosToken: '</s>' });

  test('detection: mistral-v3-tekken fallback, [TOOL_CALLS] tool calls', () => {
    assert.equal(t.builtin, 'mistral-v3-tekken');
    assert.equal(t.toolCallFormat, 'mistral');
  });

  test('the system message joins the last user turn; no generation prompt in this format', () => {
    const out = '<s>[INST]Hi[/INST]Hello!</s>[INST]You are a bot.\n\nWeather in Paris?[/INST]';
    assert.equal(t.render(CONV), out);
    assert.equal(t.render(CONV, { addGenerationPrompt: false }), out);
    assert.equal(t.render(CONV.slice(0, 3)), '<s>[INST]Hi[/INST]Hello!</s>');
  });

  test('tools before the last user turn, calls with their ids, results', () => {
    const tools = `[AVAILABLE_TOOLS][${TOOLS_JSON}][/AVAILABLE_TOOLS]`;
    assert.equal(
      t.render(CONV, { tools: TOOLS }),
      `<s>[INST]Hi[/INST]Hello!</s>${tools}[INST]You are a bot.\n\nWeather in Paris?[/INST]`,
    );
    assert.equal(
      t.render([...CONV, ...CALL_TURNS], { tools: TOOLS }),
      `<s>[INST]Hi[/INST]Hello!</s>${tools}[INST]Weather in Paris?[/INST]` +
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call00001"}]</s>' +
        '[TOOL_RESULTS]{"content": {"temp": 21}, "call_id": "call00001"}[/TOOL_RESULTS]',
    );
  });

  test('roles out of order: the template raises; apply reports it instead of falling back', () => {
    const bad: ChatMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    assert.throws(
      () => t.renderJinja(bad),
      (e: unknown) => e instanceof ChatTemplateError && e.kind === 'raise' && /alternate/.test(e.message),
    );
    assert.throws(
      () => t.apply(bad),
      (e: unknown) => e instanceof ChatTemplateError && e.kind === 'raise' && /alternate/.test(e.message),
    );
    // the built-in format is still there for callers that want it
    assert.equal(t.renderBuiltin(bad), '[INST]a[/INST]b[/INST]');
  });
});

describe('messages', () => {
  const chatml = new ChatTemplate(
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  );

  test('`text` is an alias of `content`; `content` wins when both are given', () => {
    const viaText = chatml.render([{ role: 'user', text: 'Hello' }]);
    assert.equal(viaText, '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n');
    assert.equal(chatml.render([{ role: 'user', content: 'Hello' }]), viaText);
    assert.equal(chatml.render([{ role: 'user', content: 'Hello', text: 'ignored' }]), viaText);
    assert.equal(chatml.renderBuiltin([{ role: 'user', text: 'Hello' }]), viaText);
  });

  test('typed content is joined with newlines for templates that read strings', () => {
    const parts: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'one' },
        { type: 'image_url', image_url: { url: 'x.png' } },
        { type: 'text', text: 'two' },
      ],
    };
    assert.equal(chatml.render([parts]), '<|im_start|>user\none\ntwo<|im_end|>\n<|im_start|>assistant\n');
  });

  test('templates that iterate over parts get the parts', () => {
    const t = new ChatTemplate(
      "{% for m in messages %}[{{ m.role }}]{% for p in m['content'] %}({{ p['type'] }}:{{ p['text'] }}){% endfor %}{% endfor %}",
    );
    assert.equal(t.capabilities().typedContent, true);
    assert.equal(
      t.render([{ role: 'user', content: [{ type: 'text', text: 'a' }] }], { strict: true }),
      '[user](text:a)',
    );
  });

  test('bad messages are errors, not fallbacks', () => {
    assert.throws(() => chatml.render([{ content: 'x' } as unknown as ChatMessage]), /has no string role/);
    assert.throws(() => chatml.render([{ role: 'user', content: 5 } as unknown as ChatMessage]), /content must be/);
  });
});

describe('template variables', () => {
  test('strftime_now formats the given date (Python C-locale strftime)', () => {
    const t = new ChatTemplate('{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %B %-d, %H:%M") }}');
    const now = new Date(2024, 6, 26, 9, 5);
    assert.equal(t.render([], { now, strict: true }), '26 Jul 2024|Friday July 26, 09:05');
    assert.equal(t.render([], { now: now.getTime() / 1000, strict: true }), '26 Jul 2024|Friday July 26, 09:05');
  });

  test('bos_token, eos_token, add_generation_prompt, tools defined only when given, raise_exception', () => {
    const t = new ChatTemplate(
      '{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is defined }}|{{ enable_thinking }}',
      { bosToken: '<s>', eosToken: '</s>' },
    );
    assert.equal(t.render([], { strict: true, context: { enable_thinking: false } }), '<s>|</s>|true|false|false');
    assert.equal(t.render([], { strict: true, addGenerationPrompt: false, tools: TOOLS }), '<s>|</s>|false|true|');
  });

  test("a string joined with an undefined or none is the string (llama.cpp's engine; FireFunction v2's `functions`)", () => {
    const t = new ChatTemplate(
      "{%- set s = 'spec:' + '\\n' + functions -%}{{ s + '|' + ('a' ~ none) + '|' + (none ~ 'b') + '|' + (1 + 2) | string }}",
    );
    assert.equal(t.render([], { strict: true }), 'spec:\n|a|b|3');
    // other operations on undefined values are still errors
    assert.throws(() => new ChatTemplate('{{ 1 + nothing }}').render([], { strict: true }), /undefined/);
  });
});

describe('fallback', () => {
  test('a template that does not parse: one warning naming the problem, then the detected built-in format', () => {
    const broken = "{% for message in messages %}{{ '<|im_start|>' + message['role'] }}"; // no endfor
    const t = new ChatTemplate(broken, { label: 'chat template of test.gguf' });
    assert.equal(t.builtin, 'chatml');
    assert.throws(() => t.renderJinja(CONV), /chat template of test\.gguf does not parse/);
    const { value, logs } = captureLog(() => [t.apply(CONV.slice(1, 2)), t.apply(CONV.slice(1, 2))]);
    assert.deepEqual(value[0], {
      prompt: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
      format: 'chatml',
      fallbackReason: value[0]!.fallbackReason,
    });
    assert.match(value[0]!.fallbackReason ?? '', /does not parse/);
    const warnings = logs.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 1, 'warns once per template');
    assert.match(warnings[0]!.message, /does not parse: .*; using the built-in 'chatml' format instead/);
  });

  test('an unrecognizable broken template falls back to chatml; no template at all is chatml', () => {
    const t = new ChatTemplate('{{ messages | nosuchfilter }}');
    assert.equal(t.builtinDetected, false);
    const { value } = captureLog(() => t.apply(CONV.slice(1, 2)));
    assert.equal(value.format, 'chatml');
    const none = new ChatTemplate(undefined);
    assert.equal(none.hasJinja, false);
    assert.deepEqual(none.apply(CONV.slice(1, 2)), {
      prompt: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
      format: 'chatml',
    });
  });
});

describe('templates in GGUF files', () => {
  const llamaBpe = 'vocab/ggml-vocab-llama-bpe.gguf';
  test('Llama 3 vocabulary: template and BOS text from the file', {
    skip: sharedPath(llamaBpe) ? false : missingShared(llamaBpe),
  }, () => {
    const file = openGGUF(sharedPath(llamaBpe)!);
    const vocab = captureLog(() => loadVocab(sharedPath(llamaBpe)!)).value;
    for (const t of [ChatTemplate.fromGGUF(file, { vocab }), ChatTemplate.fromGGUF(file)]) {
      assert.equal(t.bosToken, '<|begin_of_text|>');
      assert.equal(t.eosToken, '<|end_of_text|>');
      assert.equal(t.builtin, 'llama3');
      // the template writes the BOS text; the tokenizer adds BOS, so it is cut (as llama.cpp does)
      assert.deepEqual(t.apply([{ role: 'user', content: 'Hi' }]), {
        prompt:
          '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
        format: 'jinja',
      });
    }
  });

  const phi3 = 'vocab/ggml-vocab-phi-3.gguf';
  test('Phi-3 vocabulary: a template without a system turn gets the system text in the user turn', {
    skip: sharedPath(phi3) ? false : missingShared(phi3),
  }, () => {
    const t = ChatTemplate.fromGGUF(openGGUF(sharedPath(phi3)!));
    assert.equal(t.builtin, 'phi3');
    assert.equal(t.capabilities().systemRole, false);
    assert.equal(
      t.render([
        { role: 'system', content: 'S' },
        { role: 'user', content: 'Hi' },
      ]),
      // (the template's leading BOS text is cut: the tokenizer adds BOS)
      '<|user|>\nS\nHi<|end|>\n<|assistant|>\n',
    );
  });

  const qwen = 'vocab/ggml-vocab-qwen2.gguf';
  test('Qwen vocabulary (Qwen3 template): enable_thinking false closes the think block', {
    skip: sharedPath(qwen) ? false : missingShared(qwen),
  }, () => {
    const t = ChatTemplate.fromGGUF(openGGUF(sharedPath(qwen)!));
    assert.equal(t.toolCallFormat, 'hermes');
    const msgs: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    assert.equal(t.render(msgs, { strict: true }), '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    assert.equal(
      t.render(msgs, { strict: true, context: { enable_thinking: false } }),
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });
});
