export { GGUF_DEFAULT_ALIGNMENT, GGUFValueType, valueTypeName } from './constants.js';
export { GGUFError } from './errors.js';
export { GGUFFile, openGGUF, parseGGUF } from './file.js';
export type { GGUFHeader, GGUFTensorInfo } from './reader.js';
export { type ByteSource, type FileIdentity, sameIdentity } from './source.js';
export type { GGUFArray, GGUFKV, GGUFNumericArray, GGUFScalar, GGUFValue } from './values.js';
export { isArrayValue, shortestF32, valueToJSON } from './values.js';
export { GGUFWriter, type GGUFWriterOptions, type TensorEntry } from './writer.js';
