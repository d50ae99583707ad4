// A radix-2 FFT, for autocorrelation in O(n log n): period detection runs on every request
// without a period and on every re-check of the streaming detector, over up to 8640 points.

/** In-place iterative Cooley–Tukey FFT; `re.length` must be a power of two. `inverse` omits 1/N. */
export function fft(re: Float64Array, im: Float64Array, inverse: boolean): void {
  const n = re.length;
  if (n !== im.length || (n & (n - 1)) !== 0) throw new RangeError(`FFT length ${n} is not a power of two`);
  // Bit-reversal permutation.
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const tr = re[i]!;
      re[i] = re[j]!;
      re[j] = tr;
      const ti = im[i]!;
      im[i] = im[j]!;
      im[j] = ti;
    }
  }
  const { cos, sin } = twiddles(n, inverse);
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const stride = n / size;
    for (let start = 0; start < n; start += size) {
      for (let k = 0; k < half; k++) {
        const wRe = cos[k * stride]!;
        const wIm = sin[k * stride]!;
        const a = start + k;
        const b = a + half;
        const xRe = re[b]! * wRe - im[b]! * wIm;
        const xIm = re[b]! * wIm + im[b]! * wRe;
        re[b] = re[a]! - xRe;
        im[b] = im[a]! - xIm;
        re[a] = re[a]! + xRe;
        im[a] = im[a]! + xIm;
      }
    }
  }
}

interface Twiddles {
  readonly cos: Float64Array;
  readonly sin: Float64Array;
}

/** Twiddle tables by FFT length: forward (sin negated) and inverse. */
const TWIDDLES = new Map<number, { readonly forward: Twiddles; readonly inverse: Twiddles }>();
/** Lengths up to this are kept (about 1.5 MiB of tables at most); longer ones are built per call. */
const MAX_KEPT_LENGTH = 1 << 16;

/**
 * cos(2πk/n) and ∓sin(2πk/n) for k < n/2, each from its own angle (more accurate than a running
 * product of rotations), computed once per length and kept: period detection transforms windows
 * of the same few lengths again and again, and the tables cost n trigonometric calls.
 */
function twiddles(n: number, inverse: boolean): Twiddles {
  let tables = TWIDDLES.get(n);
  if (tables === undefined) {
    const cos = new Float64Array(n >> 1);
    const sinForward = new Float64Array(n >> 1);
    const sinInverse = new Float64Array(n >> 1);
    for (let k = 0; k < n >> 1; k++) {
      cos[k] = Math.cos((2 * Math.PI * k) / n);
      sinInverse[k] = Math.sin((2 * Math.PI * k) / n);
      sinForward[k] = -sinInverse[k]!;
    }
    tables = { forward: { cos, sin: sinForward }, inverse: { cos, sin: sinInverse } };
    if (n <= MAX_KEPT_LENGTH) TWIDDLES.set(n, tables);
  }
  return inverse ? tables.inverse : tables.forward;
}

/**
 * Biased sample autocorrelation r[0..n-1] of a series (r[0] = 1), by Wiener–Khinchin: zero-pad
 * to at least 2n so the circular correlation equals the linear one. The biased estimator
 * (dividing every lag by n) shrinks long lags, which favours the fundamental period over its
 * multiples. A constant series gives all zeros.
 */
export function autocorrelation(x: ArrayLike<number>): Float64Array {
  const n = x.length;
  const out = new Float64Array(n);
  if (n === 0) return out;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += x[i]!;
  mean /= n;
  let size = 1;
  while (size < 2 * n) size <<= 1;
  const { re, im } = transformBuffers(size);
  for (let i = 0; i < n; i++) re[i] = x[i]! - mean;
  re.fill(0, n);
  im.fill(0);
  fft(re, im, false);
  for (let i = 0; i < size; i++) {
    re[i] = re[i]! * re[i]! + im[i]! * im[i]!;
    im[i] = 0;
  }
  fft(re, im, true);
  const zeroLag = re[0]!;
  if (!(zeroLag > 0)) return out;
  for (let lag = 0; lag < n; lag++) out[lag] = re[lag]! / zeroLag;
  return out;
}

/** The transform's buffers by length, kept (up to MAX_KEPT_LENGTH) and reused: `autocorrelation` neither recurses nor yields. */
const BUFFERS = new Map<number, { readonly re: Float64Array; readonly im: Float64Array }>();

function transformBuffers(size: number): { readonly re: Float64Array; readonly im: Float64Array } {
  let buffers = BUFFERS.get(size);
  if (buffers === undefined) {
    buffers = { re: new Float64Array(size), im: new Float64Array(size) };
    if (size <= MAX_KEPT_LENGTH) BUFFERS.set(size, buffers);
  }
  return buffers;
}
