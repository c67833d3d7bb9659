// SHA-256 (FIPS 180-4) in plain JavaScript, for runtimes without node:crypto's synchronous
// hash (Web Crypto's digest is asynchronous and takes the whole input at once). Model
// identities, session checksums and prefix keys need it synchronously and incrementally.
import type { Sha256 } from './types.js';

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

export function jsSha256(): Sha256 {
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const block = new Uint8Array(64);
  let filled = 0;
  let length = 0; // bytes hashed so far (exact up to 2^53)
  let done = false;

  const compress = (b: Uint8Array, at: number) => {
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (b[j] << 24) | (b[j + 1] << 16) | (b[j + 2] << 8) | b[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let a = h[0];
    let b2 = h[1];
    let c = h[2];
    let d = h[3];
    let e = h[4];
    let f = h[5];
    let g = h[6];
    let hh = h[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b2) ^ (a & c) ^ (b2 & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b2;
      b2 = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a;
    h[1] += b2;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  };

  const self: Sha256 = {
    update(data: Uint8Array): Sha256 {
      if (done) throw new Error('sha256: update after digest');
      length += data.length;
      let i = 0;
      if (filled > 0) {
        const n = Math.min(64 - filled, data.length);
        block.set(data.subarray(0, n), filled);
        filled += n;
        i = n;
        if (filled < 64) return self;
        compress(block, 0);
        filled = 0;
      }
      for (; i + 64 <= data.length; i += 64) compress(data, i);
      block.set(data.subarray(i), 0);
      filled = data.length - i;
      return self;
    },
    digest(): Uint8Array {
      if (done) throw new Error('sha256: digest twice');
      done = true;
      const bits = length * 8;
      block[filled++] = 0x80;
      if (filled > 56) {
        block.fill(0, filled);
        compress(block, 0);
        filled = 0;
      }
      block.fill(0, filled, 56);
      const dv = new DataView(block.buffer);
      dv.setUint32(56, Math.floor(bits / 2 ** 32));
      dv.setUint32(60, bits >>> 0);
      compress(block, 0);
      const out = new Uint8Array(32);
      const ov = new DataView(out.buffer);
      for (let i = 0; i < 8; i++) ov.setUint32(i * 4, h[i]);
      return out;
    },
  };
  return self;
}
