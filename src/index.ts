// llama-ts: the package's public entry point. Layers are exported as they land; the
// llama.node-compatible `loadModel()` API will live in src/api/.
export * from './backends/index.js';
export { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from './ggml/fp16.js';
export { canDequantize, canQuantize, dequantize, quantize } from './ggml/quants/index.js';
export { allTypes, GGMLType, QK_K, rowSize, type TypeTraits, typeByName, typeName, typeTraits } from './ggml/types.js';
export * from './gguf/index.js';
export { type LogCallback, type LogLevel, setLogCallback } from './log.js';
export { loadVocab, StreamDecoder, Vocab, VocabError } from './vocab/index.js';
