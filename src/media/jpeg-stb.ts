// JPEG to RGB8 as stb_image decodes it (what mtmd gets): Huffman baseline and progressive scans
// into 16-bit coefficients (dequantized with stb's 16-bit truncation), stb's integer IDCT (from
// libjpeg's jidctint), chroma upsampled with stb's filters (triangle for 2x1, 1x2 and 2x2, nearest
// otherwise) and its fixed-point YCbCr conversion; Adobe/RGB-tagged files copied as RGB. Reading
// past the entropy data gives zeros, as stb does; a missing end-of-image marker is checked by the
// caller (jpeg.ts). Arithmetic coding, 12-bit samples and CMYK are refused.
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const fail = (msg: string): never => {
  throw new MediaError('JPEG', msg);
};

/** Zigzag order to natural order, padded so a run past 63 lands on 63 (as stb's table). */
const DEZIGZAG = new Uint8Array([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47,
  55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
]);

interface Huffman {
  /** For each code length 1..16: the largest code (-1: none), and the index of its first value. */
  maxcode: Int32Array;
  valptr: Int32Array;
  mincode: Int32Array;
  values: Uint8Array;
}

function buildHuffman(counts: Uint8Array, values: Uint8Array): Huffman {
  const maxcode = new Int32Array(18).fill(-1);
  const valptr = new Int32Array(17);
  const mincode = new Int32Array(17);
  let code = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    valptr[len] = k;
    mincode[len] = code;
    code += counts[len - 1];
    k += counts[len - 1];
    if (counts[len - 1]) maxcode[len] = code - 1;
    if (code > 1 << len) fail('bad Huffman table (codes overflow)');
    code <<= 1;
  }
  return { maxcode, valptr, mincode, values };
}

interface Component {
  id: number;
  h: number;
  v: number;
  tq: number;
  /** Samples: ceil(width * h / hmax) x ceil(height * v / vmax). */
  x: number;
  y: number;
  /** Block grid (whole MCUs). */
  bw: number;
  bh: number;
  coeffs: Int16Array;
  dcPred: number;
  hd: number;
  ha: number;
}

const f2f = (x: number) => Math.trunc(Math.fround(x) * 4096 + 0.5);
const C = {
  a: f2f(0.5411961),
  b: f2f(-1.847759065),
  c: f2f(0.765366865),
  d: f2f(1.175875602),
  e: f2f(0.298631336),
  f: f2f(2.053119869),
  g: f2f(3.072711026),
  h: f2f(1.50132111),
  i: f2f(-0.899976223),
  j: f2f(-2.562915447),
  k: f2f(-1.96157056),
  l: f2f(-0.390180644),
};

/** stb's 1-D IDCT step; returns [x0, x1, x2, x3, t0, t1, t2, t3]. */
function idct1(
  s0: number,
  s1: number,
  s2: number,
  s3: number,
  s4: number,
  s5: number,
  s6: number,
  s7: number,
  o: Int32Array,
): void {
  let p2 = s2;
  let p3 = s6;
  let p1 = (p2 + p3) * C.a;
  let t2 = p1 + p3 * C.b;
  let t3 = p1 + p2 * C.c;
  p2 = s0;
  p3 = s4;
  let t0 = (p2 + p3) * 4096;
  let t1 = (p2 - p3) * 4096;
  const x0 = t0 + t3;
  const x3 = t0 - t3;
  const x1 = t1 + t2;
  const x2 = t1 - t2;
  t0 = s7;
  t1 = s5;
  t2 = s3;
  t3 = s1;
  p3 = t0 + t2;
  let p4 = t1 + t3;
  p1 = t0 + t3;
  p2 = t1 + t2;
  const p5 = (p3 + p4) * C.d;
  t0 = t0 * C.e;
  t1 = t1 * C.f;
  t2 = t2 * C.g;
  t3 = t3 * C.h;
  p1 = p5 + p1 * C.i;
  p2 = p5 + p2 * C.j;
  p3 = p3 * C.k;
  p4 = p4 * C.l;
  t3 += p1 + p4;
  t2 += p2 + p3;
  t1 += p2 + p4;
  t0 += p1 + p3;
  o[0] = x0;
  o[1] = x1;
  o[2] = x2;
  o[3] = x3;
  o[4] = t0;
  o[5] = t1;
  o[6] = t2;
  o[7] = t3;
}

const clamp = (x: number) => Math.max(0, Math.min(x, 255));

function idctBlock(out: Uint8Array, at: number, stride: number, d: Int16Array, di: number): void {
  const val = new Int32Array(64);
  const r = new Int32Array(8);
  for (let i = 0; i < 8; i++) {
    const c = di + i;
    if (!d[c + 8] && !d[c + 16] && !d[c + 24] && !d[c + 32] && !d[c + 40] && !d[c + 48] && !d[c + 56]) {
      const dc = d[c] * 4;
      for (let k = 0; k < 8; k++) val[i + 8 * k] = dc;
      continue;
    }
    idct1(d[c], d[c + 8], d[c + 16], d[c + 24], d[c + 32], d[c + 40], d[c + 48], d[c + 56], r);
    const [x0, x1, x2, x3] = [r[0] + 512, r[1] + 512, r[2] + 512, r[3] + 512];
    const [t0, t1, t2, t3] = [r[4], r[5], r[6], r[7]];
    val[i] = (x0 + t3) >> 10;
    val[i + 56] = (x0 - t3) >> 10;
    val[i + 8] = (x1 + t2) >> 10;
    val[i + 48] = (x1 - t2) >> 10;
    val[i + 16] = (x2 + t1) >> 10;
    val[i + 40] = (x2 - t1) >> 10;
    val[i + 24] = (x3 + t0) >> 10;
    val[i + 32] = (x3 - t0) >> 10;
  }
  const bias = 65536 + (128 << 17);
  for (let i = 0; i < 8; i++) {
    const v = i * 8;
    idct1(val[v], val[v + 1], val[v + 2], val[v + 3], val[v + 4], val[v + 5], val[v + 6], val[v + 7], r);
    const [x0, x1, x2, x3] = [r[0] + bias, r[1] + bias, r[2] + bias, r[3] + bias];
    const [t0, t1, t2, t3] = [r[4], r[5], r[6], r[7]];
    const o = at + i * stride;
    out[o] = clamp((x0 + t3) >> 17);
    out[o + 7] = clamp((x0 - t3) >> 17);
    out[o + 1] = clamp((x1 + t2) >> 17);
    out[o + 6] = clamp((x1 - t2) >> 17);
    out[o + 2] = clamp((x2 + t1) >> 17);
    out[o + 5] = clamp((x2 - t1) >> 17);
    out[o + 3] = clamp((x3 + t0) >> 17);
    out[o + 4] = clamp((x3 - t0) >> 17);
  }
}

/** The entropy-coded bit stream: 0xFF00 unstuffed; at a marker, zeros from then on (as stb). */
class Bits {
  buf = 0;
  n = 0;
  marker = -1;
  constructor(
    private readonly b: Uint8Array,
    public pos: number,
  ) {}
  private fill(): void {
    while (this.n <= 24) {
      let c = 0;
      if (this.marker < 0 && this.pos < this.b.length) {
        c = this.b[this.pos];
        if (c === 0xff) {
          const nx = this.b[this.pos + 1];
          if (nx === 0) this.pos += 2;
          else {
            this.marker = nx;
            c = 0;
          }
        } else this.pos++;
      }
      this.buf = (this.buf | (c << (24 - this.n))) >>> 0;
      this.n += 8;
    }
  }
  bits(k: number): number {
    if (k === 0) return 0;
    if (this.n < k) this.fill();
    const v = this.buf >>> (32 - k);
    this.buf = (this.buf << k) >>> 0;
    this.n -= k;
    return v;
  }
  bit(): number {
    return this.bits(1);
  }
  /** k bits as a signed value (JPEG's EXTEND). */
  receive(k: number): number {
    if (k === 0) return 0;
    const v = this.bits(k);
    return v < 1 << (k - 1) ? v - (1 << k) + 1 : v;
  }
  decode(h: Huffman): number {
    let code = 0;
    for (let len = 1; len <= 16; len++) {
      code = (code << 1) | this.bit();
      if (h.maxcode[len] >= 0 && code <= h.maxcode[len] && code >= h.mincode[len])
        return h.values[h.valptr[len] + code - h.mincode[len]];
    }
    return fail('bad Huffman code');
  }
  /** At a restart interval's end: the bit buffer emptied; past an RSTn marker, reading resumes after it. */
  restart(): void {
    this.buf = 0;
    this.n = 0;
    if (this.marker < 0) {
      // the marker not reached yet: skip to it (the interval's data ended early)
      while (
        this.pos + 1 < this.b.length &&
        !(this.b[this.pos] === 0xff && this.b[this.pos + 1] !== 0 && this.b[this.pos + 1] !== 0xff)
      )
        this.pos++;
      this.marker = this.pos + 1 < this.b.length ? this.b[this.pos + 1] : 0xd9;
    }
    if (this.marker >= 0xd0 && this.marker <= 0xd7) {
      this.pos += 2;
      this.marker = -1;
    }
  }
}

const s16 = (x: number) => (x << 16) >> 16;

export function decodeJpegStb(b: Uint8Array, limits: ImageLimits): DecodedImage {
  const quant: Uint16Array[] = [];
  const hts: (Huffman | undefined)[] = [];
  let comps: Component[] = [];
  let width = 0;
  let height = 0;
  let progressive = false;
  let hmax = 1;
  let vmax = 1;
  let mcux = 0;
  let mcuy = 0;
  let restartInterval = 0;
  let jfif = false;
  let adobeTransform = -1;
  let pos = 2;
  let eobrun = 0;
  const u16 = (at: number) => (b[at] << 8) | b[at + 1];
  for (;;) {
    while (pos < b.length && b[pos] !== 0xff) pos++;
    while (pos < b.length && b[pos] === 0xff) pos++;
    if (pos >= b.length) fail('file is truncated (no end-of-image marker)');
    const m = b[pos++];
    if (m === 0xd9) break;
    if (m >= 0xd0 && m <= 0xd7) continue;
    const len = u16(pos);
    const seg = b.subarray(pos + 2, pos + len);
    if (pos + len > b.length) fail(`segment 0xff${m.toString(16)} is truncated`);
    if (m === 0xdb) {
      for (let i = 0; i < seg.length; ) {
        const pq = seg[i] >> 4;
        const t = seg[i] & 15;
        const q = new Uint16Array(64);
        for (let k = 0; k < 64; k++) q[DEZIGZAG[k]] = pq ? u16(pos + 2 + i + 1 + 2 * k) : seg[i + 1 + k];
        quant[t] = q;
        i += 1 + (pq ? 128 : 64);
      }
    } else if (m === 0xc4) {
      for (let i = 0; i < seg.length; ) {
        const tc = seg[i] >> 4;
        const th = seg[i] & 15;
        const counts = seg.subarray(i + 1, i + 17);
        const n = counts.reduce((a, c) => a + c, 0);
        hts[tc * 4 + th] = buildHuffman(counts, seg.slice(i + 17, i + 17 + n));
        i += 17 + n;
      }
    } else if (m === 0xdd) restartInterval = u16(pos + 2);
    else if (m === 0xe0 && seg.length >= 5 && String.fromCharCode(...seg.subarray(0, 5)) === 'JFIF\0') jfif = true;
    else if (m === 0xee && seg.length >= 12 && String.fromCharCode(...seg.subarray(0, 5)) === 'Adobe')
      adobeTransform = seg[11];
    else if (m === 0xc0 || m === 0xc1 || m === 0xc2) {
      progressive = m === 0xc2;
      if (seg[0] !== 8) fail(`${seg[0]}-bit samples are not supported (8 only)`);
      height = u16(pos + 3);
      width = u16(pos + 5);
      if (height === 0) fail('a height of 0 (set later by a DNL marker) is not supported');
      checkDimensions('JPEG', width, height, limits);
      const n = seg[5];
      if (n !== 1 && n !== 3) fail(`${n} components are not supported (gray or YCbCr/RGB)`);
      comps = [];
      for (let i = 0; i < n; i++) {
        const c = seg.subarray(6 + 3 * i, 9 + 3 * i);
        const h = c[1] >> 4;
        const v = c[1] & 15;
        if (!h || h > 4 || !v || v > 4) fail('bad sampling factors');
        comps.push({
          id: c[0],
          h,
          v,
          tq: c[2],
          x: 0,
          y: 0,
          bw: 0,
          bh: 0,
          coeffs: new Int16Array(0),
          dcPred: 0,
          hd: 0,
          ha: 0,
        });
      }
      hmax = Math.max(...comps.map((c) => c.h));
      vmax = Math.max(...comps.map((c) => c.v));
      mcux = Math.ceil(width / (8 * hmax));
      mcuy = Math.ceil(height / (8 * vmax));
      for (const c of comps) {
        c.x = Math.ceil((width * c.h) / hmax);
        c.y = Math.ceil((height * c.v) / vmax);
        c.bw = mcux * c.h;
        c.bh = mcuy * c.v;
        c.coeffs = new Int16Array(c.bw * c.bh * 64);
      }
    } else if ((m >= 0xc3 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) || m === 0xc8) {
      fail(`frame type 0xff${m.toString(16)} (lossless, hierarchical or arithmetic) is not supported`);
    } else if (m === 0xda) {
      if (comps.length === 0) fail('scan before the frame header (no SOF)');
      const ns = seg[0];
      const sc: Component[] = [];
      for (let i = 0; i < ns; i++) {
        const c = comps.find((x) => x.id === seg[1 + 2 * i]) ?? fail(`scan names unknown component ${seg[1 + 2 * i]}`);
        c.hd = seg[2 + 2 * i] >> 4;
        c.ha = seg[2 + 2 * i] & 15;
        sc.push(c);
      }
      const ss = seg[1 + 2 * ns];
      const se = seg[2 + 2 * ns];
      const ah = seg[3 + 2 * ns] >> 4;
      const al = seg[3 + 2 * ns] & 15;
      const bits = new Bits(b, pos + len);
      scan(bits, sc, { ss, se, ah, al });
      pos = bits.pos;
      continue;
    }
    pos += len;
  }
  if (comps.length === 0) fail('no frame header (SOF)');

  function scan(bits: Bits, sc: Component[], p: { ss: number; se: number; ah: number; al: number }): void {
    for (const c of sc) c.dcPred = 0;
    eobrun = 0;
    const hdc = (c: Component) => hts[c.hd] ?? fail(`no DC Huffman table ${c.hd}`);
    const hac = (c: Component) => hts[4 + c.ha] ?? fail(`no AC Huffman table ${c.ha}`);
    const q = (c: Component) => quant[c.tq] ?? fail(`no quantization table ${c.tq}`);
    const block = (c: Component, bx: number, by: number) => {
      const d = c.coeffs;
      const o = (by * c.bw + bx) * 64;
      if (!progressive) {
        const dq = q(c);
        const t = bits.decode(hdc(c));
        c.dcPred += t ? bits.receive(t) : 0;
        d[o] = s16(c.dcPred * dq[0]);
        const ha = hac(c);
        for (let k = 1; k < 64; ) {
          const rs = bits.decode(ha);
          const s = rs & 15;
          const r = rs >> 4;
          if (s === 0) {
            if (rs !== 0xf0) break;
            k += 16;
          } else {
            k += r;
            const z = DEZIGZAG[k++];
            d[o + z] = s16(bits.receive(s) * dq[z]);
          }
        }
        return;
      }
      if (p.ss === 0) {
        if (p.ah === 0) {
          const t = bits.decode(hdc(c));
          c.dcPred += t ? bits.receive(t) : 0;
          d[o] = s16(c.dcPred * (1 << p.al));
        } else if (bits.bit()) d[o] = s16(d[o] + (1 << p.al));
        return;
      }
      const ha = hac(c);
      if (p.ah === 0) {
        if (eobrun) {
          eobrun--;
          return;
        }
        for (let k = p.ss; k <= p.se; ) {
          const rs = bits.decode(ha);
          const s = rs & 15;
          const r = rs >> 4;
          if (s === 0) {
            if (r < 15) {
              eobrun = (1 << r) + (r ? bits.bits(r) : 0) - 1;
              break;
            }
            k += 16;
          } else {
            k += r;
            const z = DEZIGZAG[k++];
            d[o + z] = s16(bits.receive(s) * (1 << p.al));
          }
        }
        return;
      }
      const bit = 1 << p.al;
      const refine = (z: number) => {
        if (bits.bit() && (d[o + z] & bit) === 0) d[o + z] = s16(d[o + z] > 0 ? d[o + z] + bit : d[o + z] - bit);
      };
      if (eobrun) {
        eobrun--;
        for (let k = p.ss; k <= p.se; k++) if (d[o + DEZIGZAG[k]] !== 0) refine(DEZIGZAG[k]);
        return;
      }
      let k = p.ss;
      do {
        const rs = bits.decode(ha);
        let s = rs & 15;
        let r = rs >> 4;
        if (s === 0) {
          if (r < 15) {
            eobrun = (1 << r) - 1 + (r ? bits.bits(r) : 0);
            r = 64;
          }
        } else {
          if (s !== 1) fail('bad Huffman code in a refinement scan');
          s = bits.bit() ? bit : -bit;
        }
        while (k <= p.se) {
          const z = DEZIGZAG[k++];
          if (d[o + z] !== 0) refine(z);
          else {
            if (r === 0) {
              d[o + z] = s;
              break;
            }
            r--;
          }
        }
      } while (k <= p.se);
    };
    let todo = restartInterval || 0x7fffffff;
    const step = () => {
      if (--todo <= 0) {
        bits.restart();
        for (const c of sc) c.dcPred = 0;
        eobrun = 0;
        todo = restartInterval;
      }
    };
    if (sc.length === 1) {
      const c = sc[0];
      const w = (c.x + 7) >> 3;
      const h = (c.y + 7) >> 3;
      for (let j = 0; j < h; j++)
        for (let i = 0; i < w; i++) {
          block(c, i, j);
          step();
        }
    } else {
      for (let j = 0; j < mcuy; j++)
        for (let i = 0; i < mcux; i++) {
          for (const c of sc)
            for (let y = 0; y < c.v; y++) for (let x = 0; x < c.h; x++) block(c, i * c.h + x, j * c.v + y);
          step();
        }
    }
  }

  // coefficients to samples: dequantized now for progressive scans (16-bit, as stb), then the IDCT
  const planes = comps.map((c) => {
    const w2 = c.bw * 8;
    const plane = new Uint8Array(w2 * c.bh * 8);
    const dq = quant[c.tq] ?? fail(`no quantization table ${c.tq}`);
    const bw = progressive ? (c.x + 7) >> 3 : c.bw;
    const bh = progressive ? (c.y + 7) >> 3 : c.bh;
    for (let j = 0; j < bh; j++)
      for (let i = 0; i < bw; i++) {
        const o = (j * c.bw + i) * 64;
        if (progressive) for (let k = 0; k < 64; k++) c.coeffs[o + k] = s16(c.coeffs[o + k] * dq[k]);
        idctBlock(plane, j * 8 * w2 + i * 8, w2, c.coeffs, o);
      }
    return { plane, w2 };
  });
  return {
    width,
    height,
    data: compose(
      comps,
      planes,
      width,
      height,
      hmax,
      vmax,
      comps.length === 3 &&
        (comps.map((c) => String.fromCharCode(c.id)).join('') === 'RGB' || (adobeTransform === 0 && !jfif)),
    ),
  };
}

/** stb's row resampling and colour conversion, one output row at a time. */
function compose(
  comps: Component[],
  planes: { plane: Uint8Array; w2: number }[],
  width: number,
  height: number,
  hmax: number,
  vmax: number,
  rgb: boolean,
): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  const st = comps.map((c, k) => ({
    hs: hmax / c.h,
    vs: vmax / c.v,
    ystep: (vmax / c.v) >> 1,
    ypos: 0,
    line0: 0,
    line1: 0,
    wl: Math.ceil(width / (hmax / c.h)),
    buf: new Uint8Array(width + 16 * 4),
    plane: planes[k].plane,
    w2: planes[k].w2,
    y: c.y,
  }));
  const rows: Uint8Array[] = [];
  for (let j = 0; j < height; j++) {
    for (const [k, r] of st.entries()) {
      const bot = r.ystep >= r.vs >> 1;
      const near = r.plane.subarray(bot ? r.line1 : r.line0);
      const far = r.plane.subarray(bot ? r.line0 : r.line1);
      rows[k] = resample(r.buf, near, far, r.wl, r.hs, r.vs);
      if (++r.ystep >= r.vs) {
        r.ystep = 0;
        r.line0 = r.line1;
        if (++r.ypos < r.y) r.line1 += r.w2;
      }
    }
    const o = j * width * 3;
    if (comps.length === 1) {
      for (let i = 0; i < width; i++) out[o + 3 * i] = out[o + 3 * i + 1] = out[o + 3 * i + 2] = rows[0][i];
    } else if (rgb) {
      for (let i = 0; i < width; i++) {
        out[o + 3 * i] = rows[0][i];
        out[o + 3 * i + 1] = rows[1][i];
        out[o + 3 * i + 2] = rows[2][i];
      }
    } else ycbcr(out, o, rows[0], rows[1], rows[2], width);
  }
  return out;
}

function resample(out: Uint8Array, near: Uint8Array, far: Uint8Array, w: number, hs: number, vs: number): Uint8Array {
  if (hs === 1 && vs === 1) return near;
  if (hs === 1 && vs === 2) {
    for (let i = 0; i < w; i++) out[i] = (3 * near[i] + far[i] + 2) >> 2;
    return out;
  }
  if (hs === 2 && vs === 1) {
    if (w === 1) {
      out[0] = out[1] = near[0];
      return out;
    }
    out[0] = near[0];
    out[1] = (near[0] * 3 + near[1] + 2) >> 2;
    let i = 1;
    for (; i < w - 1; i++) {
      const n = 3 * near[i] + 2;
      out[i * 2] = (n + near[i - 1]) >> 2;
      out[i * 2 + 1] = (n + near[i + 1]) >> 2;
    }
    out[i * 2] = (near[w - 2] * 3 + near[w - 1] + 2) >> 2;
    out[i * 2 + 1] = near[w - 1];
    return out;
  }
  if (hs === 2 && vs === 2) {
    if (w === 1) {
      out[0] = out[1] = (3 * near[0] + far[0] + 2) >> 2;
      return out;
    }
    let t1 = 3 * near[0] + far[0];
    out[0] = (t1 + 2) >> 2;
    for (let i = 1; i < w; i++) {
      const t0 = t1;
      t1 = 3 * near[i] + far[i];
      out[i * 2 - 1] = (3 * t0 + t1 + 8) >> 4;
      out[i * 2] = (3 * t1 + t0 + 8) >> 4;
    }
    out[w * 2 - 1] = (t1 + 2) >> 2;
    return out;
  }
  for (let i = 0; i < w; i++) for (let j = 0; j < hs; j++) out[i * hs + j] = near[i];
  return out;
}

const fx = (x: number) => Math.trunc(Math.fround(Math.fround(x) * 4096 + 0.5)) << 8;
const CR_R = fx(1.402);
const CR_G = -fx(0.71414);
const CB_G = -fx(0.34414);
const CB_B = fx(1.772);

function ycbcr(out: Uint8Array, o: number, y: Uint8Array, cb: Uint8Array, cr: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const yf = (y[i] << 20) + (1 << 19);
    const r0 = cr[i] - 128;
    const b0 = cb[i] - 128;
    const r = (yf + r0 * CR_R) >> 20;
    const g = (yf + r0 * CR_G + ((b0 * CB_G) & 0xffff0000)) >> 20;
    const b = (yf + b0 * CB_B) >> 20;
    out[o + 3 * i] = clamp(r);
    out[o + 3 * i + 1] = clamp(g);
    out[o + 3 * i + 2] = clamp(b);
  }
}
