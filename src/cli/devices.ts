// `llama-ts devices [--json]`: every registered device with its name, description,
// type, memory, caps and the buffer types it offers.

import type { BufferType, Device, DeviceCaps, DeviceMemory, DeviceType } from '../backends/index.js';
import { backendsReady, deviceBufferTypes, enableWebGpu, listDevices } from '../backends/index.js';

const HELP = `usage: llama-ts devices [--json]

List the compute devices llama-ts can use: name, description, type (cpu, gpu, accel),
memory (free / total), capabilities and the buffer types each offers.

options:
  --json   print a JSON array instead of a table
  -h, --help
`;

export interface BufferTypeInfo {
  name: string;
  isHost: boolean;
  alignment: number;
  maxSize: number;
}

export interface DeviceInfo {
  name: string;
  description: string;
  type: DeviceType;
  backend: string;
  memory: DeviceMemory;
  caps: DeviceCaps;
  bufferTypes: BufferTypeInfo[];
}

function bufferTypeInfo(b: BufferType): BufferTypeInfo {
  return { name: b.name, isHost: b.isHost, alignment: b.alignment, maxSize: b.maxSize };
}

export function deviceInfo(d: Device): DeviceInfo {
  const p = d.props();
  return {
    name: p.name,
    description: p.description,
    type: p.type,
    backend: d.reg.name,
    memory: p.memory,
    caps: p.caps,
    bufferTypes: deviceBufferTypes(d).map(bufferTypeInfo),
  };
}

function mib(n: number): string {
  return `${Math.round(n / 1048576)} MiB`;
}

function table(infos: DeviceInfo[]): string {
  if (infos.length === 0) return 'no devices\n';
  const rows = infos.map((i) => {
    const caps = Object.entries(i.caps)
      .filter(([, on]) => on)
      .map(([k]) => k);
    const bufts = i.bufferTypes.map((b) => `${b.name}${b.isHost ? ' (host)' : ''}`);
    return [
      i.name,
      i.type,
      `${mib(i.memory.free)} / ${mib(i.memory.total)}`,
      caps.join(',') || '-',
      bufts.join(', '),
      i.description,
    ];
  });
  const head = ['NAME', 'TYPE', 'MEMORY (free / total)', 'CAPS', 'BUFFER TYPES', 'DESCRIPTION'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (r: string[]) =>
    r
      .map((x, c) => (c === r.length - 1 ? x : x.padEnd(widths[c])))
      .join('  ')
      .trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}

export async function devicesCommand(argv: string[]): Promise<number> {
  let json = false;
  for (const a of argv) {
    if (a === '--json') json = true;
    else if (a === '-h' || a === '--help') {
      process.stdout.write(HELP);
      return 0;
    } else {
      process.stderr.write(`llama-ts devices: unknown option '${a}'\n\n${HELP}`);
      return 2;
    }
  }
  // listing devices is asking for them: the GPU probe runs (see src/backends/webgpu)
  await enableWebGpu();
  await backendsReady();
  const infos = listDevices().map(deviceInfo);
  process.stdout.write(json ? `${JSON.stringify(infos, null, 2)}\n` : table(infos));
  return 0;
}
