// llama-ts: the package's public entry point: the llama.node-compatible API
// (`loadModel()` → `LlamaContext`, src/api/) and the layers under it.

export * from './api/index.js';
export * from './backends/index.js';
export {
  ChatTemplate,
  type ChatTemplates,
  getFormattedChat,
  loadChatTemplates,
  parseChatOutput,
  parseToolCalls,
} from './chat/index.js';
export {
  createSamplingChain,
  OPTIONS,
  OptionError,
  type OptionSpec,
  type SamplingParams,
} from './generation/index.js';
export { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from './ggml/fp16.js';
export {
  canDequantize,
  canQuantize,
  canQuantizeRows,
  dequantize,
  quantize,
  quantizeRows,
  requiresImatrix,
} from './ggml/quants/index.js';
export { allTypes, GGMLType, QK_K, rowSize, type TypeTraits, typeByName, typeName, typeTraits } from './ggml/types.js';
export * from './gguf/index.js';
export { type LogCallback, type LogLevel, setLogCallback } from './log.js';
export * from './quantize/index.js';
export { GrammarError, GrammarSampler, jsonSchemaToGrammar, SchemaError } from './sampling/grammar/index.js';
export { SamplingError, StopStringMatcher } from './sampling/index.js';
export { loadVocab, StreamDecoder, Vocab, VocabError } from './vocab/index.js';
