// AVIF files made at test time with libavif's own encoder (@jsquash/avif, WebAssembly; lossless:
// 4:4:4 with the identity matrix, so a decoder gives back the exact RGB), and libavif's own
// decoding of them (dav1d): the references a browser's AVIF decoding is held to.
import { readFileSync } from 'node:fs';
import decodeRef, { init as initDecode } from '@jsquash/avif/decode.js';
import encode, { init as initEncode } from '@jsquash/avif/encode.js';
import { Wasm } from '../../src/backends/cpu/wasm-api.js';
import type { Rgba } from './webp-encode.js';

const wasm = (path: string) =>
  new Wasm.Module(readFileSync(new URL(import.meta.resolve(`@jsquash/avif/codec/${path}`))));
let ready: Promise<void> | undefined;
const setup = () =>
  (ready ??= (async () => {
    // on Node the encoder's init picks its single-threaded build: its .wasm must match
    await initEncode(wasm('enc/avif_enc.wasm') as never);
    await initDecode(wasm('dec/avif_dec.wasm') as never);
  })());

/** libavif's lossless encoding of `img` (alpha kept as a lossless alpha plane). */
export async function encodeAvifLossless(img: Rgba): Promise<Uint8Array> {
  await setup();
  return new Uint8Array(await encode(img as never, { lossless: true }));
}

/** libavif's own RGBA for an AVIF still. */
export async function libavifRgba(b: Uint8Array): Promise<Rgba> {
  await setup();
  const img = await decodeRef(b.slice().buffer);
  if (!img) throw new Error('libavif could not decode the file');
  return img as unknown as Rgba;
}
