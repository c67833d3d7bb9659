// What the API reports about a model and the machine: GGUF metadata as text (llama.cpp's
// llama_model_meta_val_str), the model's identity for session files, system info, and the
// chat templates' texts (sent to the main thread, where getFormattedChat runs).

import type { Device } from '../backends/api.js';
import { ChatTemplate, type ChatTemplates, specialTokenTexts } from '../chat/index.js';
import { type GGUFFile, GGUFValueType, isArrayValue } from '../gguf/index.js';
import { nEmbdK, nEmbdV } from '../model/hparams.js';
import type { Model } from '../model/index.js';
import { hex, platform } from '../platform/index.js';
import type { Vocab } from '../vocab/index.js';
import type { TemplateCapsInfo } from './types.js';

/** The package version (package.json beside dist/). */
export function packageVersion(): string {
  try {
    const text = new TextDecoder().decode(platform.readAsset(new URL('../../../package.json', import.meta.url)));
    const pkg = JSON.parse(text) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Scalar metadata as llama.cpp prints it (floats with 6 decimals); arrays are left out. */
export function metadataStrings(file: GGUFFile): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, kv] of file.metadata) {
    const v = kv.value;
    if (isArrayValue(v)) continue;
    if (kv.type === GGUFValueType.FLOAT32 || kv.type === GGUFValueType.FLOAT64) out[key] = (v as number).toFixed(6);
    else if (kv.type === GGUFValueType.BOOL) out[key] = v ? 'true' : 'false';
    else out[key] = String(v);
  }
  return out;
}

/** loadLlamaModelInfo's object: GGUF version, alignment, data offset and scalar metadata. */
export function ggufInfo(file: GGUFFile, skip: readonly string[] = []): Record<string, string | number> {
  const out: Record<string, string | number> = {
    version: file.version,
    alignment: file.alignment,
    data_offset: file.dataOffset,
  };
  for (const [k, v] of Object.entries(metadataStrings(file))) if (!skip.includes(k)) out[k] = v;
  return out;
}

/** What a session file records about the model it was saved with. */
export interface ModelIdentity {
  arch: string;
  name: string;
  nLayer: number;
  nEmbd: number;
  nVocab: number;
  nEmbdK: number;
  nEmbdV: number;
  fileSize: number;
  /** SHA-256 of the file's header, metadata and tensor table (everything before the data). */
  headerSha256: string;
}

export function modelIdentity(file: GGUFFile, model: Model): ModelIdentity {
  const hash = platform.sha256();
  const f = platform.openFile(file.path);
  try {
    const buf = new Uint8Array(1 << 20);
    for (let off = 0; off < file.dataOffset; ) {
      const n = f.readSync(buf.subarray(0, Math.min(buf.length, file.dataOffset - off)), off);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      off += n;
    }
  } finally {
    f.close();
  }
  const hp = model.hp;
  return {
    arch: hp.arch,
    name: model.name,
    nLayer: hp.nLayer,
    nEmbd: hp.nEmbd,
    nVocab: hp.nVocab,
    nEmbdK: nEmbdK(hp),
    nEmbdV: nEmbdV(hp),
    fileSize: file.fileSize,
    headerSha256: hex(hash.digest()),
  };
}

/** Differences between two identities, as "field: saved ≠ current" lines (empty: same model). */
export function identityDiff(saved: ModelIdentity, current: ModelIdentity): string[] {
  const out: string[] = [];
  for (const k of Object.keys(current) as (keyof ModelIdentity)[]) {
    if (saved[k] !== current[k]) out.push(`${k}: ${String(saved[k])} ≠ ${String(current[k])}`);
  }
  return out;
}

/** llama.cpp's system-info line, for the devices a context runs on. */
export function systemInfo(devices: readonly Device[], nThreads: number): string {
  const parts = [`llama-ts ${packageVersion()}`, platform.runtime()];
  for (const d of devices) {
    const variant = (d as Device & { variant?: string }).variant;
    const simd = variant ? ` : WASM_SIMD = 1 | RELAXED_SIMD = ${variant === 'relaxed' ? 1 : 0}` : '';
    parts.push(`${d.name} (${d.description})${simd}`);
  }
  parts.push(`n_threads = ${nThreads} / ${platform.cores()}`);
  return parts.join(' | ');
}

/** The chat templates of a model as text, to rebuild ChatTemplates on another thread. */
export interface TemplateTexts {
  default?: string;
  toolUse?: string;
  /** The chat_template option (replaces the file's). */
  override?: string;
  bosToken: string;
  eosToken: string;
  /** The vocabulary adds BOS / EOS itself (a template's leading BOS / trailing EOS text is cut). */
  addBos: boolean;
  addEos: boolean;
}

export function templateTexts(file: GGUFFile, vocab: Vocab, override?: string): TemplateTexts {
  const out: TemplateTexts = { ...specialTokenTexts(file, vocab) };
  const def = file.getString('tokenizer.chat_template', null);
  if (def !== null) out.default = def;
  const tool = file.getString('tokenizer.chat_template.tool_use', null);
  if (tool !== null) out.toolUse = tool;
  if (override !== undefined && override !== '') out.override = override;
  return out;
}

/** ChatTemplates from texts (as loadChatTemplates builds them from the file). */
export function templatesFromTexts(t: TemplateTexts): ChatTemplates {
  const special = { bosToken: t.bosToken, eosToken: t.eosToken, addBos: t.addBos, addEos: t.addEos };
  if (t.override !== undefined)
    return { default: new ChatTemplate(t.override, { ...special, label: 'chat template' }) };
  const out: ChatTemplates = {
    default: new ChatTemplate(t.default, { ...special, label: "chat template 'tokenizer.chat_template'" }),
  };
  if (t.toolUse !== undefined) {
    out.toolUse = new ChatTemplate(t.toolUse, {
      ...special,
      label: "chat template 'tokenizer.chat_template.tool_use'",
    });
  }
  return out;
}

/** llama.node's minja caps for a template (from its text and probe renders). */
export function templateCaps(t: ChatTemplate): TemplateCapsInfo {
  const src = t.source ?? '';
  let caps: ReturnType<ChatTemplate['capabilities']> | undefined;
  try {
    // on the caller's thread (getModelInfo is synchronous): a short budget, and a template
    // that exceeds it just reports no capabilities
    caps = t.source !== undefined ? t.capabilities({ timeMs: 1000 }) : undefined;
  } catch {
    caps = undefined;
  }
  return {
    tools: /\btools\b/.test(src),
    toolCalls: /\btool_calls\b/.test(src),
    toolResponses: /['"]tool['"]|\bipython\b|tool_response/.test(src),
    systemRole: caps ? caps.systemRole : true,
    parallelToolCalls: /\btool_calls\b/.test(src) && /for\s+\w+\s+in\s+[\w.]*tool_calls/.test(src),
    toolCallId: /\btool_call_id\b/.test(src) || /\.id\b/.test(src),
  };
}
