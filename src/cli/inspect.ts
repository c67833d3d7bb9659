// `llama-ts inspect FILE.gguf [--json]`: what a GGUF file holds, without loading weights.
import { parseArgs } from 'node:util';
import { typeName } from '../ggml/types.js';
import { GGUFError, type GGUFFile, isArrayValue, openGGUF, valueToJSON } from '../gguf/index.js';

const HELP = `usage: llama-ts inspect FILE.gguf [--json] [--all-metadata]

Shows a GGUF file's architecture, hyper-parameters, tokenizer summary and tensor table.
  --json           one JSON object instead of text
  --all-metadata   list every metadata key (long arrays summarised)
`;

// llama.cpp's llama_ftype values, as written to general.file_type.
const FILE_TYPES: Record<number, string> = {
  0: 'ALL_F32',
  1: 'MOSTLY_F16',
  2: 'MOSTLY_Q4_0',
  3: 'MOSTLY_Q4_1',
  7: 'MOSTLY_Q8_0',
  8: 'MOSTLY_Q5_0',
  9: 'MOSTLY_Q5_1',
  10: 'MOSTLY_Q2_K',
  11: 'MOSTLY_Q3_K_S',
  12: 'MOSTLY_Q3_K_M',
  13: 'MOSTLY_Q3_K_L',
  14: 'MOSTLY_Q4_K_S',
  15: 'MOSTLY_Q4_K_M',
  16: 'MOSTLY_Q5_K_S',
  17: 'MOSTLY_Q5_K_M',
  18: 'MOSTLY_Q6_K',
  19: 'MOSTLY_IQ2_XXS',
  20: 'MOSTLY_IQ2_XS',
  21: 'MOSTLY_Q2_K_S',
  22: 'MOSTLY_IQ3_XS',
  23: 'MOSTLY_IQ3_XXS',
  24: 'MOSTLY_IQ1_S',
  25: 'MOSTLY_IQ4_NL',
  26: 'MOSTLY_IQ3_S',
  27: 'MOSTLY_IQ3_M',
  28: 'MOSTLY_IQ2_S',
  29: 'MOSTLY_IQ2_M',
  30: 'MOSTLY_IQ4_XS',
  31: 'MOSTLY_IQ1_M',
  32: 'MOSTLY_BF16',
  36: 'MOSTLY_TQ1_0',
  37: 'MOSTLY_TQ2_0',
  38: 'MOSTLY_MXFP4_MOE',
};

export interface InspectReport {
  file: string;
  version: number;
  fileSize: number;
  alignment: number;
  dataOffset: number;
  architecture: string | null;
  name: string | null;
  fileType: string | null;
  hparams: Record<string, unknown>;
  tokenizer: {
    model: string | null;
    pre: string | null;
    vocabSize: number;
    merges: number;
    specialIds: Record<string, number>;
  } | null;
  tensors: { name: string; type: string; shape: number[]; bytes: number; offset: number }[];
  totals: { tensors: number; parameters: number; bytes: number; bitsPerWeight: number; byType: Record<string, number> };
  metadata?: Record<string, unknown>;
}

function summarise(v: unknown): unknown {
  if (Array.isArray(v) && v.length > 16) return `[${v.length} items]`;
  return v;
}

export function inspectReport(f: GGUFFile, allMetadata = false): InspectReport {
  const arch = f.getString('general.architecture', null);
  const hparams: Record<string, unknown> = {};
  if (arch) {
    for (const [key, kv] of f.metadata) {
      if (key.startsWith(`${arch}.`)) hparams[key.slice(arch.length + 1)] = summarise(valueToJSON(kv.value, kv.type));
    }
  }
  let tokenizer: InspectReport['tokenizer'] = null;
  if (f.has('tokenizer.ggml.model')) {
    const tokens = f.get('tokenizer.ggml.tokens');
    const merges = f.get('tokenizer.ggml.merges');
    const specialIds: Record<string, number> = {};
    for (const [key, kv] of f.metadata) {
      const m = /^tokenizer\.ggml\.(\w+)_token_id$/.exec(key);
      if (m && typeof kv.value === 'number') specialIds[m[1]!] = kv.value;
    }
    tokenizer = {
      model: f.getString('tokenizer.ggml.model', null),
      pre: f.getString('tokenizer.ggml.pre', null),
      vocabSize: tokens && isArrayValue(tokens.value) ? tokens.value.items.length : 0,
      merges: merges && isArrayValue(merges.value) ? merges.value.items.length : 0,
      specialIds,
    };
  }
  const byType: Record<string, number> = {};
  let parameters = 0;
  let bytes = 0;
  const tensors = f.tensors.map((t) => {
    const type = typeName(t.type);
    byType[type] = (byType[type] ?? 0) + 1;
    parameters += t.nElements;
    bytes += t.nBytes;
    return { name: t.name, type, shape: [...t.dims], bytes: t.nBytes, offset: t.offset };
  });
  const ft = f.get('general.file_type');
  const report: InspectReport = {
    file: f.path,
    version: f.version,
    fileSize: f.fileSize,
    alignment: f.alignment,
    dataOffset: f.dataOffset,
    architecture: arch,
    name: f.getString('general.name', null),
    fileType: ft && typeof ft.value === 'number' ? (FILE_TYPES[ft.value] ?? `unknown (${ft.value})`) : null,
    hparams,
    tokenizer,
    tensors,
    totals: {
      tensors: tensors.length,
      parameters,
      bytes,
      bitsPerWeight: parameters ? (bytes * 8) / parameters : 0,
      byType,
    },
  };
  if (allMetadata) {
    report.metadata = {};
    for (const [key, kv] of f.metadata) report.metadata[key] = summarise(valueToJSON(kv.value, kv.type));
  }
  return report;
}

function human(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(2)} ${units[i]}`;
}

function count(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(2)}K`;
  return String(n);
}

export function formatReport(r: InspectReport): string {
  const out: string[] = [];
  out.push(`file:          ${r.file}`);
  out.push(
    `format:        GGUF v${r.version}, ${human(r.fileSize)}, alignment ${r.alignment}, data at ${r.dataOffset}`,
  );
  out.push(`architecture:  ${r.architecture ?? '(none)'}`);
  if (r.name) out.push(`name:          ${r.name}`);
  if (r.fileType) out.push(`file type:     ${r.fileType}`);
  const hp = Object.entries(r.hparams);
  if (hp.length) {
    out.push('', 'hyper-parameters:');
    const w = Math.max(...hp.map(([k]) => k.length));
    for (const [k, v] of hp) out.push(`  ${k.padEnd(w)}  ${JSON.stringify(v)}`);
  }
  if (r.tokenizer) {
    const t = r.tokenizer;
    out.push('', 'tokenizer:');
    out.push(`  model ${t.model ?? '?'}, pre ${t.pre ?? '(default)'}, vocab ${t.vocabSize}, merges ${t.merges}`);
    const ids = Object.entries(t.specialIds).map(([k, v]) => `${k} ${v}`);
    if (ids.length) out.push(`  special ids: ${ids.join(', ')}`);
  }
  if (r.metadata) {
    out.push('', 'metadata:');
    for (const [k, v] of Object.entries(r.metadata)) out.push(`  ${k} = ${JSON.stringify(v)}`);
  }
  if (r.tensors.length) {
    out.push('', 'tensors:');
    const nw = Math.max(4, ...r.tensors.map((t) => t.name.length));
    const shapes = r.tensors.map((t) => t.shape.join(' x '));
    const sw = Math.max(5, ...shapes.map((s) => s.length));
    out.push(
      `  ${'name'.padEnd(nw)}  ${'type'.padEnd(7)}  ${'shape'.padEnd(sw)}  ${'bytes'.padStart(12)}  ${'offset'.padStart(12)}`,
    );
    r.tensors.forEach((t, i) => {
      out.push(
        `  ${t.name.padEnd(nw)}  ${t.type.padEnd(7)}  ${shapes[i]!.padEnd(sw)}  ${String(t.bytes).padStart(12)}  ${String(t.offset).padStart(12)}`,
      );
    });
  }
  const tt = r.totals;
  const types = Object.entries(tt.byType)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  out.push(
    '',
    `totals: ${tt.tensors} tensors, ${count(tt.parameters)} parameters, ${human(tt.bytes)}, ${tt.bitsPerWeight.toFixed(2)} bits/weight${types ? ` (${types})` : ''}`,
  );
  return `${out.join('\n')}\n`;
}

export async function inspectCommand(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (e) {
    process.stderr.write(`llama-ts inspect: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [path, ...extra] = args.positionals;
  if (!path || extra.length) {
    process.stderr.write(`llama-ts inspect: expected exactly one FILE.gguf\n\n${HELP}`);
    return 2;
  }
  let f: GGUFFile;
  try {
    f = openGGUF(path);
  } catch (e) {
    if (e instanceof GGUFError) {
      process.stderr.write(`llama-ts inspect: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  try {
    const report = inspectReport(f, args.values['all-metadata']);
    process.stdout.write(args.values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  } finally {
    f.close();
  }
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      'all-metadata': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}
