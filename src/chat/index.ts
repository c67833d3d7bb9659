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
export { isHarmonyTemplate, type ParsedHarmony, parseHarmony } from './harmony.js';
export {
  assistantPrefill,
  ChatMessageError,
  extractMedia,
  MEDIA_MARKER,
  type MediaExtraction,
  messageText,
  plainMessages,
  templateMessages,
} from './messages.js';
export {
  applyChatDelta,
  type ChatDelta,
  type ChatOutput,
  type ChatOutputOptions,
  ChatOutputParser,
  type ChatToolCallDelta,
  chatDelta,
} from './output.js';
export { compactJson, partialString } from './partial-json.js';
export { splitReasoning, THINK_END, THINK_START, templateThinks, thinkingForcedOpen } from './reasoning.js';
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
export { type ToolGrammar, type ToolGrammarRequest, type ToolGrammarTrigger, toolCallGrammar } from './tool-grammar.js';
export type { ChatMessage, ChatMessagePart, PlainMessage, Tool, ToolCall, ToolCallInput } from './types.js';
