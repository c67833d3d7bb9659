// Model downloads (Hugging Face resolve URLs, a local cache, resumable, locked).
export {
  cacheDir,
  cachePath,
  DEFAULT_MODEL,
  DownloadError,
  type HfFile,
  HubUnreachableError,
  hfEndpoint,
  type ModelArg,
  type Progress,
  type PullOptions,
  parseHfPath,
  pull,
  resolveHfRepo,
  resolveModelArg,
  resolveUrl,
  ttyProgress,
} from './hf.js';
