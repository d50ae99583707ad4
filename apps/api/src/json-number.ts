// JSON numbers read straight from a request body's bytes, for the body scanners
// (./vendor/body-scan.ts, ./jobs/json-scan.ts): each number is read as JSON.parse reads it, bit for
// bit, or its text is kept for one JSON.parse of all such texts at the end of a series.
//
// Up to 15 significant digits and 22 decimals, a number is one correctly rounded division of exact
// operands. Up to 19 significant digits (what String() writes for a computed double: 16 or 17), the
// mantissa is held exactly as a sum of two doubles and divided with the error of each step kept, so
// the quotient is known to within a tiny bound; it is taken only where every real number within that
// bound rounds to the same double, which is then the correctly rounded one (otherwise the text goes
// to JSON.parse: a number within about 2^-48 of an ulp's midpoint, one in a few hundred billion).
// Exponents, and more digits or decimals, go to JSON.parse too.

const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const COMMA = 0x2c;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;

/** Exact powers of ten as doubles (10^22 is the largest). */
const EXACT_POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** Significant digits a double holds exactly as an integer (10^15 < 2^53). */
const EXACT_DIGITS = 15;
/** Significant digits held as the exact sum of two doubles (10^19 < 2^64). */
const SPLIT_DIGITS = 19;
const MAX_SCALE = 22;
/** Dekker's splitter for doubles: 2^27 + 1. */
const SPLITTER = 134_217_729;
/** The bound on the error of the long quotient, relative to its remainder's parts (8 times the worst case). */
const QUOTIENT_ERROR = 2 ** -48;
/** Room for the rounding of the bound's own sum. */
const SUM_ERROR = 2 ** -50;

/** The exact error of the product `p = a * b` (Dekker's two-product: no fused multiply-add in JS). */
function productError(a: number, b: number, p: number): number {
  let c = SPLITTER * a;
  const aHigh = c - (c - a);
  const aLow = a - aHigh;
  c = SPLITTER * b;
  const bHigh = c - (c - b);
  const bLow = b - bHigh;
  return aHigh * bHigh - p + aHigh * bLow + aLow * bHigh + aLow * bLow;
}

/**
 * `(high * 10^lowDigits + low) / 10^scale`, correctly rounded, for a mantissa of 16 to 19 digits
 * (`high` its first 15, `low` the rest); NaN where the quotient is too close to a midpoint to say.
 */
function longQuotient(high: number, low: number, lowDigits: number, scale: number): number {
  // The mantissa exactly: p + pe is high * 10^lowDigits, and the small integers pe + low add exactly.
  const p = high * EXACT_POWERS_OF_TEN[lowDigits]!;
  const c = productError(high, EXACT_POWERS_OF_TEN[lowDigits]!, p) + low;
  const mantissa = p + c;
  // The sum of two doubles rounds once, correctly: an integer needs nothing more.
  if (scale === 0) return mantissa;
  const mantissaLow = c - (mantissa - p);
  const divisor = EXACT_POWERS_OF_TEN[scale]!;
  const q1 = mantissa / divisor;
  const t = q1 * divisor;
  const te = productError(q1, divisor, t);
  // mantissa - t is exact (Sterbenz: t is within an ulp of mantissa); the rest rounds, within the bound.
  const r1 = mantissa - t;
  const q2 = (r1 - te + mantissaLow) / divisor;
  const sum = q1 + q2;
  const sumError = q2 - (sum - q1);
  const bound = ((Math.abs(r1) + Math.abs(te) + Math.abs(mantissaLow)) / divisor) * QUOTIENT_ERROR + Math.abs(sumError) * SUM_ERROR;
  // The quotient lies within `bound` of sum + sumError: both ends round to `sum`, so does it.
  return sum + (sumError + bound) === sum && sum + (sumError - bound) === sum ? sum : Number.NaN;
}

/** Reads a body's numbers one by one; keeps the texts it leaves to JSON.parse until settle(). */
export class JsonNumberReader {
  /** After read(): the offset just past the number, or -1 where the bytes were not a JSON number. */
  end = 0;
  /** Texts of the numbers left to JSON.parse since begin(), comma-separated, and where they go. */
  private texts = Buffer.alloc(0);
  private textsLength = 0;
  private readonly indices: number[] = [];

  /** Forgets the texts kept (a new series). */
  begin(): void {
    this.textsLength = 0;
    this.indices.length = 0;
  }

  /**
   * The JSON number (its exact grammar) at `at`, as JSON.parse reads it, or NaN; `end` says where it
   * stopped, or is -1 where the bytes are not a JSON number. NaN with an end: a number left to
   * JSON.parse, whose text the caller hands to keep().
   */
  read(bytes: Uint8Array, at: number): number {
    let negative = false;
    if (bytes[at] === MINUS) {
      negative = true;
      at++;
    }
    // The first 15 significant digits, then up to 4 more, and how many there were in all.
    let high = 0;
    let low = 0;
    let significant = 0;
    let scale = 0;
    let byte = bytes[at];
    if (byte === ZERO) {
      byte = bytes[++at];
    } else if (byte !== undefined && byte > ZERO && byte <= NINE) {
      while (byte !== undefined && byte >= ZERO && byte <= NINE) {
        if (significant < EXACT_DIGITS) high = high * 10 + (byte - ZERO);
        else low = low * 10 + (byte - ZERO);
        significant++;
        byte = bytes[++at];
      }
    } else {
      this.end = -1;
      return Number.NaN;
    }
    if (byte === DOT) {
      byte = bytes[++at];
      if (byte === undefined || byte < ZERO || byte > NINE) {
        this.end = -1;
        return Number.NaN;
      }
      while (byte !== undefined && byte >= ZERO && byte <= NINE) {
        if (significant > 0 || byte !== ZERO) {
          if (significant < EXACT_DIGITS) high = high * 10 + (byte - ZERO);
          else low = low * 10 + (byte - ZERO);
          significant++;
        }
        scale++;
        byte = bytes[++at];
      }
    }
    let readHere = scale <= MAX_SCALE && significant <= SPLIT_DIGITS;
    if (byte === LOWER_E || byte === UPPER_E) {
      readHere = false;
      byte = bytes[++at];
      if (byte === PLUS || byte === MINUS) byte = bytes[++at];
      if (byte === undefined || byte < ZERO || byte > NINE) {
        this.end = -1;
        return Number.NaN;
      }
      while (byte !== undefined && byte >= ZERO && byte <= NINE) byte = bytes[++at];
    }
    this.end = at;
    if (readHere) {
      const value =
        significant <= EXACT_DIGITS
          ? scale === 0
            ? high
            : high / EXACT_POWERS_OF_TEN[scale]!
          : longQuotient(high, low, significant - EXACT_DIGITS, scale);
      if (!Number.isNaN(value)) return negative ? -value : value;
    }
    return Number.NaN;
  }

  /** Keeps the text of a number read() left (bytes `from` to `to`), for settle() to read into `values[index]`. */
  keep(bytes: Uint8Array, from: number, to: number, index: number): void {
    const length = to - from;
    if (this.textsLength + length + 1 > this.texts.length) {
      const grown = Buffer.allocUnsafe(Math.max(1 << 16, 2 * (this.textsLength + length + 1)));
      this.texts.copy(grown, 0, 0, this.textsLength);
      this.texts = grown;
    }
    const texts = this.texts;
    let out = this.textsLength;
    for (let i = from; i < to; i++) texts[out++] = bytes[i]!;
    texts[out++] = COMMA;
    this.textsLength = out;
    this.indices.push(index);
  }

  /**
   * Reads the kept texts with one JSON.parse (so each is exactly what the ordinary road reads) into
   * their places in `values`; false where one is beyond `maxMagnitude` (or Infinity, from a literal
   * such as 1e400), which the ordinary road refuses.
   */
  settle(values: number[], maxMagnitude: number): boolean {
    const indices = this.indices;
    if (indices.length === 0) return true;
    const read = JSON.parse(`[${this.texts.toString('latin1', 0, this.textsLength - 1)}]`) as number[];
    for (let k = 0; k < indices.length; k++) {
      const value = read[k]!;
      if (!(Math.abs(value) <= maxMagnitude)) return false;
      values[indices[k]!] = value;
    }
    this.begin();
    return true;
  }
}
