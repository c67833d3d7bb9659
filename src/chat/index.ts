// Chat: templates (Jinja and built-in formats), llama.node's getFormattedChat, tool calls.
export { applyBuiltin, BUILTIN_FORMATS, type BuiltinFormat, detectBuiltin, isBuiltinFormat } from './builtin.js';
export {
  CHAT_FORMATS,
  type ChatFormatName,
  type ChatTemplates,
  chatFormatOf,
  type FormattedChatResult,
  formatChat,
  type GetFormattedChatParams,
  getFormattedChat,
  isJinjaSupported,
  loadChatTemplates,
  parseChatOutput,
} from './format.js';
export {
  ChatMessageError,
  extractMedia,
  MEDIA_MARKER,
  type MediaExtraction,
  messageText,
  plainMessages,
  templateMessages,
} from './messages.js';
export { strftime } from './strftime.js';
export {
  ChatTemplate,
  ChatTemplateError,
  type ChatTemplateErrorKind,
  type ChatTemplateOptions,
  chatTemplateNames,
  DEFAULT_TEMPLATE_LIMITS,
  type JinjaRenderer,
  type RenderOptions,
  type RenderResult,
  specialTokenTexts,
  type TemplateCaps,
  type TemplateLimits,
} from './template.js';
export {
  detectToolCallFormat,
  type ParsedToolCalls,
  type ParseToolCallsOptions,
  parseToolCalls,
  randomToolCallId,
  scanJson,
  type ToolCallFormat,
} from './tool-calls.js';
export type { ChatMessage, ChatMessagePart, PlainMessage, Tool, ToolCall, ToolCallInput } from './types.js';
