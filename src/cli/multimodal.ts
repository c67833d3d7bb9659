// The multimodal flags the commands share: the projector (--mmproj FILE; -hf brings its
// repository's own unless --no-mmproj, as llama.cpp's tools do) and the media files a prompt
// takes (--image / --audio, in the order given; `<__media__>` markers in the prompt place them).
import { readFileSync } from 'node:fs';
import { resolveMmprojArg } from '../download/index.js';
import { audioFormat, detectMediaKind } from '../media/index.js';
import { UsageError } from './options.js';

/** parseArgs entries of the projector flags. */
export const MMPROJ_OPTIONS = {
  mmproj: { type: 'string' },
  'no-mmproj': { type: 'boolean' },
  'mmproj-offload': { type: 'boolean' },
  'no-mmproj-offload': { type: 'boolean' },
} as const;

export const MMPROJ_HELP = `  -mm, --mmproj FILE      a multimodal projector (mmproj GGUF) for images and audio
      --no-mmproj         no projector, not even the -hf repository's own (default: -hf takes
                          the repository's mmproj file when it has one)
      --no-mmproj-offload  the projector on the CPU (default: on the model's GPU device, when it
                          has one: --device webgpu)`;

/** llama.cpp's spellings of the projector flags. */
export const MMPROJ_SPELLINGS: Record<string, string> = { '-mm': '--mmproj', '--no-mmproj-auto': '--no-mmproj' };

/** The projector to load: --mmproj, else the -hf repository's (downloaded once), unless --no-mmproj. */
export async function projectorArg(o: {
  mmproj?: string | undefined;
  'no-mmproj'?: boolean | undefined;
  'hf-repo'?: string | undefined;
  'cache-dir'?: string | undefined;
}): Promise<string | undefined> {
  if (o['no-mmproj']) {
    if (o.mmproj !== undefined) throw new UsageError('--mmproj and --no-mmproj contradict each other');
    return undefined;
  }
  if (o.mmproj !== undefined) return o.mmproj;
  if (o['hf-repo'] === undefined) return undefined;
  return resolveMmprojArg({ hfRepo: o['hf-repo'], cacheDir: o['cache-dir'] });
}

/** initMultimodal's use_gpu from --[no-]mmproj-offload (llama.cpp's flags; default on). */
export function mmprojOnGpu(o: { 'no-mmproj-offload'?: boolean | undefined }): boolean {
  return !o['no-mmproj-offload'];
}

export interface MediaFile {
  kind: 'image' | 'audio';
  path: string;
}

/** --image / --audio files in command-line order (both spellings: `--image F`, `--image=F`). */
export function mediaFlags(argv: readonly string[]): MediaFile[] {
  const out: MediaFile[] = [];
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(image|audio)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) continue;
    const path = m[2] ?? argv[++i];
    if (path === undefined) throw new UsageError(`--${m[1]} needs a file`);
    out.push({ kind: m[1] as 'image' | 'audio', path });
  }
  return out;
}

/**
 * Checks a media file is readable and is what its flag says (mtmd tells images from audio by
 * their first bytes); the library reads it again when the prompt is evaluated.
 */
export function checkMediaFile(f: MediaFile, label = `--${f.kind}`): { format: 'wav' | 'mp3' } {
  let head: Uint8Array;
  try {
    head = readFileSync(f.path).subarray(0, 64);
  } catch (e) {
    throw new UsageError(`${label} ${f.path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const kind = detectMediaKind(head);
  if (kind !== f.kind)
    throw new UsageError(`${label} ${f.path}: the file is ${kind === 'audio' ? 'audio' : 'not audio'}`);
  return { format: audioFormat(head) === 'MP3' ? 'mp3' : 'wav' };
}
