// Files attached to a message: text files go into its text (fenced, named); images and
// audio, when the model takes them, go as OpenAI's image_url (a data: URL) and
// input_audio (base64) parts. Sizes are bounded before a file is read.
import type { Modalities } from './api.js';
import type { Attachment } from './tree.js';

export const MAX_TEXT_BYTES = 1024 * 1024;
export const MAX_MEDIA_BYTES = 20 * 1024 * 1024;

const AUDIO_FORMATS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
};

/** The file input's `accept`: text always, images and audio as the model takes them. */
export function acceptFor(m: Modalities): string {
  const kinds = ['text/*', '.md', '.json', '.csv', '.ts', '.js', '.py', '.c', '.cpp', '.rs', '.go', '.java', '.yaml'];
  if (m.vision) kinds.push('image/*');
  if (m.audio) kinds.push(...Object.keys(AUDIO_FORMATS));
  return kinds.join(',');
}

function dataUrl(f: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result as string);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(f);
  });
}

/** One file as an attachment; throws naming the file and why it cannot go. */
export async function readAttachment(f: File, m: Modalities): Promise<Attachment> {
  if (f.type.startsWith('image/')) {
    if (!m.vision) throw new Error(`${f.name}: this model does not take images`);
    if (f.size > MAX_MEDIA_BYTES) throw new Error(`${f.name}: ${f.size} bytes, over ${MAX_MEDIA_BYTES}`);
    return { kind: 'image', name: f.name, data: await dataUrl(f) };
  }
  if (f.type.startsWith('audio/')) {
    const format = AUDIO_FORMATS[f.type];
    if (!m.audio) throw new Error(`${f.name}: this model does not take audio`);
    if (!format) throw new Error(`${f.name}: ${f.type} is not wav or mp3`);
    if (f.size > MAX_MEDIA_BYTES) throw new Error(`${f.name}: ${f.size} bytes, over ${MAX_MEDIA_BYTES}`);
    const url = await dataUrl(f);
    return { kind: 'audio', name: f.name, format, data: url.slice(url.indexOf(',') + 1) };
  }
  if (f.size > MAX_TEXT_BYTES) throw new Error(`${f.name}: ${f.size} bytes, over ${MAX_TEXT_BYTES} for a text file`);
  const bytes = new Uint8Array(await f.arrayBuffer());
  if (bytes.includes(0)) throw new Error(`${f.name} is not a text file`);
  return { kind: 'text', name: f.name, data: new TextDecoder().decode(bytes) };
}
