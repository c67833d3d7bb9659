// sinf and cosf as glibc (2.28 and later, from Arm's optimized-routines) computes them, in double
// precision with its polynomials: mtmd's audio tables (the FFT's twiddles and the Hann window) are
// sinf/cosf values, and Math.sin rounded to float32 differs from them by 1 ULP for about 1.5% of
// float inputs. Checked bit for bit against glibc 2.36's sinf/cosf on x86-64 (200,000 inputs in
// [-7, 7]; its multiply-adds are not fused). Only the |x| < 120 paths exist here (the tables need
// |x| < 2*pi).

/** C's hexadecimal float `±0x1.<frac>p<exp>` (13 fraction digits), exactly. */
function hf(frac: string, exp: number, sign = 1): number {
  return sign * (1 + Number.parseInt(frac, 16) / 2 ** 52) * 2 ** exp;
}

const HPI_INV = hf('45f306dc9c883', 23);
const HPI = hf('921fb54442d18', 0);
const C = [
  1,
  hf('ffffffd0c621c', -2, -1),
  hf('55553e1068f19', -5),
  hf('6c087e89a359d', -10, -1),
  hf('99343027bf8c3', -16),
];
const S = [hf('555545995a603', -3, -1), hf('1107605230bc4', -7), hf('994eb3774cf24', -13, -1)];
const SIGN = [1, -1, -1, 1];

const view = new DataView(new ArrayBuffer(8));
/** a * b + c, unfused (glibc 2.36 x86-64 rounds the product). */
const madd = (a: number, b: number, c: number) => a * b + c;

function abstop12(y: number): number {
  view.setFloat32(0, y);
  return (view.getUint32(0) >>> 20) & 0x7ff;
}

/** glibc's sinf_poly, with the second table (negated cosine) as `neg`. */
function poly(x: number, x2: number, n: number, neg: boolean): number {
  if ((n & 1) === 0) {
    const x3 = x * x2;
    const s1 = madd(x2, S[2], S[1]);
    const x7 = x3 * x2;
    const s = madd(x3, S[0], x);
    return Math.fround(madd(x7, s1, s));
  }
  const k = neg ? -1 : 1;
  const x4 = x2 * x2;
  const c2 = madd(x2, k * C[4], k * C[3]);
  const c1 = madd(x2, k * C[1], k * C[0]);
  const x6 = x4 * x2;
  const c = madd(x4, k * C[2], c1);
  return Math.fround(madd(x6, c2, c));
}

const PIO4 = abstop12(Math.fround(0.7853982)); // 0x1.921fb6p-1f, pi/4 as a float
const TINY = abstop12(2 ** -12);
const LIMIT = abstop12(120);

function sincos(y: number, cos: boolean): number {
  y = Math.fround(y);
  const t = abstop12(y);
  if (t < PIO4) {
    if (t < TINY) return cos ? 1 : y;
    return poly(y, y * y, cos ? 1 : 0, false);
  }
  if (t >= LIMIT) throw new RangeError(`sinf/cosf here take |x| < 120, not ${y}`);
  const r = y * HPI_INV;
  const n = ((Math.trunc(r) | 0) + 0x800000) >> 24;
  const x = madd(-n, HPI, y);
  const s = SIGN[n & 3];
  return poly(x * s, x * x, cos ? n ^ 1 : n, (n & 2) !== 0);
}

export const sinf = (x: number): number => sincos(x, false);
export const cosf = (x: number): number => sincos(x, true);
