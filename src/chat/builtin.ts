// Built-in chat formats: prompts written by code, not by a Jinja template. They serve
// models without a template, templates the Jinja engine cannot render, and explicit
// choices by name (like llama.cpp's `--chat-template chatml`). A template's format is
// recognized by marker strings in its text, in the same order of tests llama.cpp uses,
// so a given template maps to the same format in both.
import type { PlainMessage } from './types.js';

export const BUILTIN_FORMATS = [
  'chatml',
  'llama2',
  'llama2-sys',
  'llama2-sys-bos',
  'llama2-sys-strip',
  'mistral-v1',
  'mistral-v3',
  'mistral-v3-tekken',
  'mistral-v7',
  'mistral-v7-tekken',
  'phi3',
  'phi4',
  'falcon3',
  'zephyr',
  'monarch',
  'gemma',
  'gemma4',
  'orion',
  'openchat',
  'vicuna',
  'vicuna-orca',
  'deepseek',
  'deepseek2',
  'deepseek3',
  'command-r',
  'llama3',
  'llama4',
  'chatglm3',
  'chatglm4',
  'glmedge',
  'minicpm',
  'exaone3',
  'exaone4',
  'rwkv-world',
  'granite',
  'granite-4.0',
  'gigachat',
  'megrez',
  'yandex',
  'bailing',
  'smolvlm',
  'dots1',
  'hunyuan-moe',
  'seed-oss',
] as const;

export type BuiltinFormat = (typeof BUILTIN_FORMATS)[number];

export function isBuiltinFormat(name: string): name is BuiltinFormat {
  return (BUILTIN_FORMATS as readonly string[]).includes(name);
}

/** C's isspace set, which llama.cpp's formats trim (JS trim() also strips Unicode spaces). */
function trim(s: string): string {
  let a = 0;
  let b = s.length;
  const space = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);
  while (a < b && space(s.charCodeAt(a))) a++;
  while (b > a && space(s.charCodeAt(b - 1))) b--;
  return s.slice(a, b);
}

/**
 * The built-in format a template text (or a format name) stands for, or undefined when no
 * marker matches. Tests run in a fixed order: earlier markers win.
 */
export function detectBuiltin(tmpl: string): BuiltinFormat | undefined {
  if (isBuiltinFormat(tmpl)) return tmpl;
  const has = (s: string) => tmpl.includes(s);
  if (has('<|im_start|>')) {
    if (has('<|im_sep|>')) return 'phi4';
    if (has('<end_of_utterance>')) return 'smolvlm'; // <|im_start|> is its BOS, the turns are not ChatML
    return 'chatml';
  }
  if (tmpl.startsWith('mistral') || has('[INST]')) {
    if (has('[SYSTEM_PROMPT]')) return 'mistral-v7';
    // Mistral's own v1 / v3 / v3-tekken templates
    if (has("' [INST] ' + system_message") || has('[AVAILABLE_TOOLS]')) {
      if (has(' [INST]')) return 'mistral-v1';
      if (has('"[INST]"')) return 'mistral-v3-tekken';
      return 'mistral-v3';
    }
    // Llama 2 and its variants
    if (has('content.strip()')) return 'llama2-sys-strip';
    if (has("bos_token + '[INST]")) return 'llama2-sys-bos';
    if (has('<<SYS>>')) return 'llama2-sys';
    return 'llama2';
  }
  if (has('<|assistant|>') && has('<|end|>')) return 'phi3';
  if (has('[gMASK]<sop>')) return 'chatglm4';
  if (has('<|assistant|>') && has('<|user|>')) return has('</s>') ? 'falcon3' : 'glmedge';
  if (has("<|{{ item['role'] }}|>") && has('<|begin_of_image|>')) return 'glmedge';
  if (has('<|user|>') && has('<|endoftext|>')) return 'zephyr';
  if (has("bos_token + message['role']")) return 'monarch';
  if (has('<start_of_turn>')) return 'gemma';
  // (not one of llama.cpp's formats: its fallback for Gemma 4 templates)
  if (has("'<|turn>'") || has('<|turn>model')) return 'gemma4';
  if (has("'\\n\\nAssistant: ' + eos_token")) return 'orion';
  if (has('GPT4 Correct ')) return 'openchat';
  if (has('USER: ') && has('ASSISTANT: ')) return has('SYSTEM: ') ? 'vicuna-orca' : 'vicuna';
  if (has('### Instruction:') && has('<|EOT|>')) return 'deepseek';
  if (has('<|START_OF_TURN_TOKEN|>') && has('<|USER_TOKEN|>')) return 'command-r';
  if (has('<|start_header_id|>') && has('<|end_header_id|>')) return 'llama3';
  if (has('[gMASK]sop')) return 'chatglm3';
  if (has('<用户>')) return 'minicpm';
  if (has("'Assistant: ' + message['content'] + eos_token")) return 'deepseek2';
  if (has('<｜Assistant｜>') && has('<｜User｜>') && has('<｜end▁of▁sentence｜>')) return 'deepseek3';
  if (has('[|system|]') && has('[|assistant|]') && has('[|endofturn|]')) return has('[|tool|]') ? 'exaone4' : 'exaone3';
  if (has('rwkv-world') || has("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) return 'rwkv-world';
  if (has('<|start_of_role|>')) return has('<tool_call>') || has('<tools>') ? 'granite-4.0' : 'granite';
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]")) {
    return 'gigachat';
  }
  if (has('<|role_start|>')) return 'megrez';
  if (has(' Ассистент:')) return 'yandex';
  if (has('<role>ASSISTANT</role>') && has("'HUMAN'")) return 'bailing';
  if (has('<|header_start|>') && has('<|header_end|>')) return 'llama4';
  if (has('<|endofuserprompt|>')) return 'dots1';
  if (has('<|startoftext|>') && has('<|extra_4|>')) return 'hunyuan-moe';
  if (has('<seed:bos>')) return 'seed-oss';
  return undefined;
}

type Formatter = (chat: readonly PlainMessage[], addAssistant: boolean) => string;

/** Formats that write `head(role) + content + tail` per message, then an assistant header. */
function perMessage(
  head: (role: string) => string,
  tail: string,
  assistant: string,
  transform: (s: string) => string = (s) => s,
): Formatter {
  return (chat, add) => {
    let out = '';
    for (const m of chat) out += head(m.role) + transform(m.content) + tail;
    return add ? out + assistant : out;
  };
}

function llama2(variant: 'plain' | 'sys' | 'sys-bos' | 'sys-strip'): Formatter {
  return (chat) => {
    // The first [INST] opens the prompt; the tokenizer adds the BOS before it.
    let out = '[INST] ';
    let open = true;
    for (const m of chat) {
      const content = variant === 'sys-strip' ? trim(m.content) : m.content;
      if (!open) {
        open = true;
        out += variant === 'sys-bos' ? '<s>[INST] ' : '[INST] ';
      }
      if (m.role === 'system') {
        // without <<SYS>> support the system text still leads the first turn
        out += variant === 'plain' ? `${content}\n` : `<<SYS>>\n${content}\n<</SYS>>\n\n`;
      } else if (m.role === 'user') {
        out += `${content} [/INST]`;
      } else {
        out += `${content}</s>`;
        open = false;
      }
    }
    return out;
  };
}

function mistral(version: 'v1' | 'v3' | 'v3-tekken'): Formatter {
  const lead = version === 'v1' ? ' ' : '';
  const gap = version === 'v3-tekken' ? '' : ' ';
  return (chat) => {
    let out = '';
    let open = false;
    for (const m of chat) {
      if (!open) {
        out += `${lead}[INST]${gap}`;
        open = true;
      }
      if (m.role === 'system') out += `${m.content}\n\n`;
      else if (m.role === 'user') out += `${m.content}${lead}[/INST]`;
      else {
        out += `${gap}${version === 'v3' ? trim(m.content) : m.content}</s>`;
        open = false;
      }
    }
    return out;
  };
}

function mistralV7(tekken: boolean): Formatter {
  const sp = tekken ? '' : ' ';
  return (chat) => {
    let out = '';
    for (const m of chat) {
      if (m.role === 'system') out += `[SYSTEM_PROMPT]${sp}${m.content}[/SYSTEM_PROMPT]`;
      else if (m.role === 'user') out += `[INST]${sp}${m.content}[/INST]`;
      else out += `${sp}${m.content}</s>`;
    }
    return out;
  };
}

/** Formats with one fixed prefix and suffix per role; other roles are left out. */
function byRole(
  parts: Record<string, [string, string]>,
  assistant: string,
  transform: (s: string) => string = (s) => s,
): Formatter {
  return (chat, add) => {
    let out = '';
    for (const m of chat) {
      const p = parts[m.role];
      if (p) out += p[0] + transform(m.content) + p[1];
    }
    return add ? out + assistant : out;
  };
}

/** Gemma 4: <|turn>role … <turn|> turns (a system turn of its own), the assistant as `model`. */
const gemma4: Formatter = (chat, add) => {
  let out = '';
  for (const m of chat) out += `<|turn>${m.role === 'assistant' ? 'model' : m.role}\n${trim(m.content)}<turn|>\n`;
  return add ? `${out}<|turn>model\n` : out;
};

const gemma: Formatter = (chat, add) => {
  // Gemma has no system turn: system text opens the next user turn.
  let system = '';
  let out = '';
  for (const m of chat) {
    if (m.role === 'system') {
      system += trim(m.content);
      continue;
    }
    const role = m.role === 'assistant' ? 'model' : m.role;
    out += `<start_of_turn>${role}\n`;
    if (system !== '' && role !== 'model') {
      out += `${system}\n\n`;
      system = '';
    }
    out += `${trim(m.content)}<end_of_turn>\n`;
  }
  return add ? `${out}<start_of_turn>model\n` : out;
};

const orion: Formatter = (chat) => {
  let system = '';
  let out = '';
  for (const m of chat) {
    if (m.role === 'system') system += m.content;
    else if (m.role === 'user') {
      out += 'Human: ';
      if (system !== '') {
        out += `${system}\n\n`;
        system = '';
      }
      out += `${m.content}\n\nAssistant: </s>`;
    } else out += `${m.content}</s>`;
  }
  return out;
};

const openchat: Formatter = (chat, add) => {
  let out = '';
  for (const m of chat) {
    if (m.role === 'system') out += `${m.content}<|end_of_turn|>`;
    else out += `GPT4 Correct ${m.role.charAt(0).toUpperCase()}${m.role.slice(1)}: ${m.content}<|end_of_turn|>`;
  }
  return add ? `${out}GPT4 Correct Assistant:` : out;
};

const monarch: Formatter = (chat, add) => {
  let out = '';
  chat.forEach((m, i) => {
    out += `${i === 0 ? '' : '<s>'}${m.role}\n${m.content}</s>\n`;
  });
  return add ? `${out}<s>assistant\n` : out;
};

const rwkvWorld: Formatter = (chat) => {
  let out = '';
  chat.forEach((m, i) => {
    if (m.role === 'system') out += `System: ${trim(m.content)}\n\n`;
    else if (m.role === 'user') {
      out += `User: ${trim(m.content)}\n\n`;
      if (i === chat.length - 1) out += 'Assistant:';
    } else if (m.role === 'assistant') out += `Assistant: ${trim(m.content)}\n\n`;
  });
  return out;
};

const granite4: Formatter = (chat, add) => {
  let out = '';
  for (const m of chat) {
    out +=
      m.role === 'assistant_tool_call'
        ? '<|start_of_role|>assistant<|end_of_role|><|tool_call|>'
        : `<|start_of_role|>${m.role}<|end_of_role|>`;
    out += `${m.content}<|end_of_text|>\n`;
  }
  return add ? `${out}<|start_of_role|>assistant<|end_of_role|>` : out;
};

const gigachat: Formatter = (chat, add) => {
  const hasSystem = chat.length > 0 && chat[0]!.role === 'system';
  let out = hasSystem ? `<s>${chat[0]!.content}<|message_sep|>` : '<s>';
  for (const m of chat.slice(hasSystem ? 1 : 0)) {
    if (m.role === 'user') {
      out += `user<|role_sep|>${m.content}<|message_sep|>available functions<|role_sep|>[]<|message_sep|>`;
    } else if (m.role === 'assistant') out += `assistant<|role_sep|>${m.content}<|message_sep|>`;
  }
  return add ? `${out}assistant<|role_sep|>` : out;
};

const smolvlm: Formatter = (chat, add) => {
  let out = '<|im_start|>';
  for (const m of chat) {
    if (m.role === 'system') out += `${m.content}\n\n`;
    else if (m.role === 'user') out += `User: ${m.content}<end_of_utterance>\n`;
    else out += `Assistant: ${m.content}<end_of_utterance>\n`;
  }
  return add ? `${out}Assistant:` : out;
};

const seedOss: Formatter = (chat, add) => {
  let out = '';
  for (const m of chat) {
    const content = m.role === 'assistant' ? trim(m.content) : m.content;
    out += `<seed:bos>${m.role}\n${content}<seed:eos>`;
  }
  return add ? `${out}<seed:bos>assistant\n` : out;
};

const FORMATTERS: Record<BuiltinFormat, Formatter> = {
  chatml: perMessage((r) => `<|im_start|>${r}\n`, '<|im_end|>\n', '<|im_start|>assistant\n'),
  llama2: llama2('plain'),
  'llama2-sys': llama2('sys'),
  'llama2-sys-bos': llama2('sys-bos'),
  'llama2-sys-strip': llama2('sys-strip'),
  'mistral-v1': mistral('v1'),
  'mistral-v3': mistral('v3'),
  'mistral-v3-tekken': mistral('v3-tekken'),
  'mistral-v7': mistralV7(false),
  'mistral-v7-tekken': mistralV7(true),
  phi3: perMessage((r) => `<|${r}|>\n`, '<|end|>\n', '<|assistant|>\n'),
  phi4: perMessage((r) => `<|im_start|>${r}<|im_sep|>`, '<|im_end|>', '<|im_start|>assistant<|im_sep|>'),
  falcon3: perMessage((r) => `<|${r}|>\n`, '\n', '<|assistant|>\n'),
  zephyr: perMessage((r) => `<|${r}|>\n`, '<|endoftext|>\n', '<|assistant|>\n'),
  monarch,
  gemma,
  gemma4,
  orion,
  openchat,
  vicuna: byRole({ system: ['', '\n\n'], user: ['USER: ', '\n'], assistant: ['ASSISTANT: ', '</s>\n'] }, 'ASSISTANT:'),
  'vicuna-orca': byRole(
    { system: ['SYSTEM: ', '\n'], user: ['USER: ', '\n'], assistant: ['ASSISTANT: ', '</s>\n'] },
    'ASSISTANT:',
  ),
  deepseek: byRole(
    { system: ['', ''], user: ['### Instruction:\n', '\n'], assistant: ['### Response:\n', '\n<|EOT|>\n'] },
    '### Response:\n',
  ),
  deepseek2: byRole(
    { system: ['', '\n\n'], user: ['User: ', '\n\n'], assistant: ['Assistant: ', '<｜end▁of▁sentence｜>'] },
    'Assistant:',
  ),
  deepseek3: byRole(
    { system: ['', '\n\n'], user: ['<｜User｜>', ''], assistant: ['<｜Assistant｜>', '<｜end▁of▁sentence｜>'] },
    '<｜Assistant｜>',
  ),
  'command-r': byRole(
    {
      system: ['<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>', '<|END_OF_TURN_TOKEN|>'],
      user: ['<|START_OF_TURN_TOKEN|><|USER_TOKEN|>', '<|END_OF_TURN_TOKEN|>'],
      assistant: ['<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>', '<|END_OF_TURN_TOKEN|>'],
    },
    '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>',
    trim,
  ),
  llama3: perMessage(
    (r) => `<|start_header_id|>${r}<|end_header_id|>\n\n`,
    '<|eot_id|>',
    '<|start_header_id|>assistant<|end_header_id|>\n\n',
    trim,
  ),
  llama4: perMessage(
    (r) => `<|header_start|>${r}<|header_end|>\n\n`,
    '<|eot|>',
    '<|header_start|>assistant<|header_end|>\n\n',
    trim,
  ),
  chatglm3: (chat, add) => `[gMASK]sop${perMessage((r) => `<|${r}|>\n `, '', '<|assistant|>')(chat, add)}`,
  chatglm4: (chat, add) => `[gMASK]<sop>${perMessage((r) => `<|${r}|>\n`, '', '<|assistant|>\n')(chat, add)}`,
  glmedge: perMessage((r) => `<|${r}|>\n`, '', '<|assistant|>'),
  minicpm: (chat) => chat.map((m) => (m.role === 'user' ? `<用户>${trim(m.content)}<AI>` : trim(m.content))).join(''),
  exaone3: byRole(
    {
      system: ['[|system|]', '[|endofturn|]\n'],
      user: ['[|user|]', '\n'],
      assistant: ['[|assistant|]', '[|endofturn|]\n'],
    },
    '[|assistant|]',
    trim,
  ),
  exaone4: byRole(
    {
      system: ['[|system|]', '[|endofturn|]\n'],
      user: ['[|user|]', '\n'],
      assistant: ['[|assistant|]', '[|endofturn|]\n'],
      tool: ['[|tool|]', '[|endofturn|]\n'],
    },
    '[|assistant|]',
    trim,
  ),
  'rwkv-world': rwkvWorld,
  granite: (chat, add) => {
    let out = '';
    for (const m of chat) {
      out += `<|start_of_role|>${m.role}<|end_of_role|>`;
      if (m.role === 'assistant_tool_call') out += '<|tool_call|>';
      out += `${m.content}<|end_of_text|>\n`;
    }
    return add ? `${out}<|start_of_role|>assistant<|end_of_role|>` : out;
  },
  'granite-4.0': granite4,
  gigachat,
  megrez: perMessage((r) => `<|role_start|>${r}<|role_end|>`, '<|turn_end|>', '<|role_start|>assistant<|role_end|>'),
  yandex: byRole({ user: [' Пользователь: ', '\n\n'], assistant: [' Ассистент: ', '\n\n'] }, ' Ассистент:[SEP]'),
  bailing: perMessage((r) => `<role>${r === 'user' ? 'HUMAN' : r.toUpperCase()}</role>`, '', '<role>ASSISTANT</role>'),
  smolvlm,
  dots1: (chat, add) => {
    let out = '';
    for (const m of chat) {
      if (m.role === 'system') out += `<|system|>${m.content}<|endofsystem|>`;
      else if (m.role === 'user') out += `<|userprompt|>${m.content}<|endofuserprompt|>`;
      else out += `<|response|>${m.content}<|endofresponse|>`;
    }
    return add ? `${out}<|response|>` : out;
  },
  'hunyuan-moe': (chat) => {
    let out = '';
    for (const m of chat) {
      if (m.role === 'system') out += `<|startoftext|>${m.content}<|extra_4|>`;
      else if (m.role === 'assistant') out += `${m.content}<|eos|>`;
      else out += `<|startoftext|>${m.content}<|extra_0|>`;
    }
    return out;
  },
  'seed-oss': seedOss,
};

/**
 * Writes a conversation in a built-in format. `addAssistant` opens the assistant's turn;
 * formats whose user turn already ends with the assistant's cue (llama2, mistral, orion,
 * minicpm, rwkv-world) ignore it, as llama.cpp's do.
 */
export function applyBuiltin(format: BuiltinFormat, chat: readonly PlainMessage[], addAssistant = true): string {
  return FORMATTERS[format](chat, addAssistant);
}
