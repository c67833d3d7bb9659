// Model quantization (llama-quantize) and importance matrices (llama-imatrix).
export { FILE_TYPES, type FileTypeName, fileTypeName, isFileTypeName, parseFileType } from './ftypes.js';
export { computeImatrix, ImatrixCollector, ImatrixComputeError, type ImatrixOptions } from './imatrix.js';
export {
  type ImatrixEntry,
  ImatrixError,
  type ImatrixFile,
  imatrixWeights,
  readImatrixFile,
  writeImatrixGGUF,
} from './imatrix-file.js';
export {
  QuantizeError,
  type QuantizeOptions,
  type QuantizeProgress,
  type QuantizeResult,
  quantizeModel,
} from './model.js';
export { allowsQuantization, chooseTensorTypes, quantizeOrder, type TensorTypeChoice } from './tensor-types.js';
