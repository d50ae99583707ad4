// A fast road for the vendor bodies. JSON.parse of an 8,640-point body builds 8,640 point objects
// and as many timestamp strings, which ./request.ts then reads one by one and the collector frees:
// on the shared 2-core host that was about a fifth of an entire-series request. Here the body stays
// a Buffer; its `series` array is read byte by byte straight into values and epoch milliseconds,
// and every other top-level field (the options, a few bytes each) is JSON.parse'd alone.
//
// The scanner never answers a refusal itself. It takes only a body that is valid JSON, whose series
// is an array of points with nothing but a `timestamp` (a string without escapes, or null) and a
// numeric `value` within the vendor's magnitude, keys matched as ./request.ts matches them; for
// anything else it steps aside (null), and the ordinary road (JSON.parse, then ./request.ts) reads
// the body, with every error in its order and words. The fields it did read go through the same
// validator (./request.ts), which takes the scanned series where it would take the array.
import { parseIsoTimestamp } from '@adp/detection';
import { JsonNumberReader } from '../json-number.js';
import type { JsonObject } from '../request-checks.js';
import type { VendorEngine } from './engine.js';

/** The vendor's limit on a value's magnitude; a larger one goes the ordinary road, which refuses it. */
const MAX_VALUE_MAGNITUDE = 1e100;

/** A body's series as the scanner read it: what ./request.ts would have read from the points. */
export class ScannedSeries {
  constructor(
    readonly values: number[],
    /** Epoch ms per point; NaN where the point had no timestamp, null, or one that does not parse. */
    readonly timestampsMs: number[],
    /** The first point without a usable timestamp, or -1 when every point has one. */
    readonly firstUnusableTimestamp: number,
  ) {}

  get length(): number {
    return this.values.length;
  }
}

/** A body the scanner read: its top-level fields in order, the series one a ScannedSeries. */
export class ScannedBody {
  constructor(
    /** The body's bytes, for the ordinary road when the validator needs a point it did not keep. */
    readonly raw: Buffer,
    readonly fields: JsonObject,
  ) {}
}

/**
 * Thrown by the validator when a scanned series cannot answer a rule the way the points would (a
 * timestamp missing where a granularity needs one): the caller then takes the ordinary road.
 */
export class NotScanned extends Error {
  constructor() {
    super('the body needs the ordinary parser');
    this.name = 'NotScanned';
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const LOWER_E = 0x65;
const UPPER_T = 0x54;
const UPPER_Z = 0x5a;
const LOWER_Z = 0x7a;
/** OR-ing this into an ASCII letter gives its lower case (and maps no other byte onto a letter). */
const CASE_BIT = 0x20;


/** Keys of a point: what readField in ./request.ts matches, case-insensitively. */
const VALUE_FIELD = 1;
const TIMESTAMP_FIELD = 2;
/** `"value"` and `"timestamp"` with their quotes. */
const VALUE_KEY_BYTES = 7;
const TIMESTAMP_KEY_BYTES = 11;

/** The deepest nesting of an option's value the scanner skips over (deeper ones: the ordinary road). */
const MAX_SKIP_DEPTH = 64;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Thrown inside the scanner when the body is not of the shape it reads; caught at its top. */
class NotScannable extends Error {}
const NOT_SCANNABLE = new NotScannable('not of the scanned shape');

/**
 * Reads a vendor body, or null where the ordinary road must. Timestamps are the engine's to parse;
 * when its parser is @adp/detection's own, the usual `YYYY-MM-DDTHH:MM:SS[.f+]Z` is read from the
 * bytes, with that function's answers.
 */
export function scanVendorBody(raw: Buffer, engine: Pick<VendorEngine, 'parseIsoTimestamp'>): ScannedBody | null {
  try {
    return new Scanner(raw, engine).body();
  } catch (error) {
    if (error instanceof NotScannable) return null;
    throw error;
  }
}

class Scanner {
  private at = 0;
  /** Whether the usual timestamp form may be read here rather than by the engine. */
  private readonly bytesForUsualTimestamps: boolean;
  /** The day of the last usual timestamp (year * 10,000 + month * 100 + day) and its epoch ms. */
  private lastDay = -1;
  private lastDayMs = 0;
  /** The series' values, read from the bytes (or left to one JSON.parse). */
  private readonly numbers = new JsonNumberReader();

  constructor(
    private readonly raw: Buffer,
    private readonly engine: Pick<VendorEngine, 'parseIsoTimestamp'>,
  ) {
    this.bytesForUsualTimestamps = engine.parseIsoTimestamp === parseIsoTimestamp;
  }

  body(): ScannedBody {
    // Fields are set in the body's order, so a repeated key keeps its first place and its last
    // value, as JSON.parse has it, and readField then picks among spellings as it does there.
    const fields: JsonObject = {};
    this.skipSpace();
    this.expect(OPEN_BRACE);
    this.skipSpace();
    if (this.raw[this.at] === CLOSE_BRACE) {
      this.at++;
    } else {
      for (;;) {
        this.skipSpace();
        const key = this.key();
        // JSON.parse makes `__proto__` an own key; an assignment would set the prototype.
        if (key === '__proto__') throw NOT_SCANNABLE;
        this.skipSpace();
        this.expect(COLON);
        this.skipSpace();
        fields[key] = this.raw[this.at] === OPEN_BRACKET && key.toLowerCase() === 'series' ? this.series() : this.plainValue();
        this.skipSpace();
        const next = this.raw[this.at++];
        if (next === CLOSE_BRACE) break;
        if (next !== COMMA) throw NOT_SCANNABLE;
      }
    }
    this.skipSpace();
    if (this.at !== this.raw.length) throw NOT_SCANNABLE;
    return new ScannedBody(this.raw, fields);
  }

  /** `[ {"timestamp": "...", "value": n}, ... ]`: points of those two fields at most, in either order. */
  private series(): ScannedSeries {
    const raw = this.raw;
    const values: number[] = [];
    const timestampsMs: number[] = [];
    let firstUnusable = -1;
    const numbers = this.numbers;
    numbers.begin();
    // The cursor lives in `at` here and in this.at only across calls: this loop is most of a request.
    let at = this.at;
    if (raw[at++] !== OPEN_BRACKET) throw NOT_SCANNABLE;
    while (isSpace(raw[at]!)) at++;
    if (raw[at] === CLOSE_BRACKET) {
      this.at = at + 1;
      return new ScannedSeries(values, timestampsMs, -1);
    }
    for (;;) {
      while (isSpace(raw[at]!)) at++;
      if (raw[at++] !== OPEN_BRACE) throw NOT_SCANNABLE;
      let value = 0;
      let valueSeen = false;
      let timestamp = Number.NaN;
      let timestampSeen = false;
      for (;;) {
        while (isSpace(raw[at]!)) at++;
        const field = pointKey(raw, at);
        at += field === VALUE_FIELD ? VALUE_KEY_BYTES : TIMESTAMP_KEY_BYTES;
        while (isSpace(raw[at]!)) at++;
        if (raw[at++] !== COLON) throw NOT_SCANNABLE;
        while (isSpace(raw[at]!)) at++;
        this.at = at;
        if (field === VALUE_FIELD) {
          if (valueSeen) throw NOT_SCANNABLE;
          valueSeen = true;
          value = numbers.read(raw, at);
          if (numbers.end < 0) throw NOT_SCANNABLE;
          if (Number.isNaN(value)) numbers.keep(raw, at, numbers.end, values.length);
          at = numbers.end;
        } else {
          if (timestampSeen) throw NOT_SCANNABLE;
          timestampSeen = true;
          timestamp = this.timestamp();
          at = this.at;
        }
        while (isSpace(raw[at]!)) at++;
        const next = raw[at++];
        if (next === CLOSE_BRACE) break;
        if (next !== COMMA) throw NOT_SCANNABLE;
      }
      if (!valueSeen) throw NOT_SCANNABLE;
      if (firstUnusable < 0 && Number.isNaN(timestamp)) firstUnusable = values.length;
      timestampsMs.push(timestamp);
      values.push(value);
      while (isSpace(raw[at]!)) at++;
      const next = raw[at++];
      if (next === CLOSE_BRACKET) break;
      if (next !== COMMA) throw NOT_SCANNABLE;
    }
    this.at = at;
    // The values JSON.parse reads (long or with exponents); one too large is the ordinary road's refusal.
    if (!numbers.settle(values, MAX_VALUE_MAGNITUDE)) throw NOT_SCANNABLE;
    return new ScannedSeries(values, timestampsMs, firstUnusable);
  }

  /**
   * A point's timestamp: epoch ms, or NaN for null (an absent optional field to the validator) and
   * for a string that does not parse. Any other JSON value is not scanned.
   */
  private timestamp(): number {
    const raw = this.raw;
    const at = this.at;
    if (raw[at] === 0x6e) {
      // null
      if (raw[at + 1] !== 0x75 || raw[at + 2] !== 0x6c || raw[at + 3] !== 0x6c) throw NOT_SCANNABLE;
      this.at = at + 4;
      return Number.NaN;
    }
    if (raw[at] !== QUOTE) throw NOT_SCANNABLE;
    if (this.bytesForUsualTimestamps) {
      const usual = this.usualTimestamp(at + 1);
      if (usual !== USUAL_NOT) return usual;
    }
    const end = this.plainString(true);
    return this.engine.parseIsoTimestamp(raw.toString('latin1', at + 1, end)) ?? Number.NaN;
  }

  /**
   * The string from `from` (after its opening quote) when it is `YYYY-MM-DDTHH:MM:SS[.d+]Z` (or
   * `z`), read as @adp/detection's parseIsoTimestamp reads that form: epoch ms, or NaN for a date
   * or time out of range; the cursor then moves past the closing quote. USUAL_NOT for any other
   * text, the cursor left where it was (that function decides).
   */
  private usualTimestamp(from: number): number {
    const raw = this.raw;
    if (raw[from + 4] !== MINUS || raw[from + 7] !== MINUS || raw[from + 10] !== UPPER_T || raw[from + 13] !== COLON || raw[from + 16] !== COLON) {
      return USUAL_NOT;
    }
    const century = twoDigits(raw, from);
    const yearOfCentury = twoDigits(raw, from + 2);
    const month = twoDigits(raw, from + 5);
    const day = twoDigits(raw, from + 8);
    const hour = twoDigits(raw, from + 11);
    const minute = twoDigits(raw, from + 14);
    const second = twoDigits(raw, from + 17);
    // A field that is not two digits is negative (or NaN, at the buffer's end).
    if (!(century >= 0 && yearOfCentury >= 0 && month >= 0 && day >= 0 && hour >= 0 && minute >= 0 && second >= 0)) return USUAL_NOT;
    const year = century * 100 + yearOfCentury;
    // Then the zone, or `.` and one or more digits before it, and the closing quote.
    let at = from + 19;
    let millis = 0;
    if (raw[at] === DOT) {
      at++;
      const digitsFrom = at;
      for (;;) {
        const digit = raw[at]! - ZERO;
        if (!(digit >= 0 && digit <= 9)) break;
        const place = at - digitsFrom;
        if (place < 3) millis += digit * (place === 0 ? 100 : place === 1 ? 10 : 1);
        at++;
      }
      if (at === digitsFrom) return USUAL_NOT;
    }
    const zone = raw[at];
    if ((zone !== UPPER_Z && zone !== LOWER_Z) || raw[at + 1] !== QUOTE) return USUAL_NOT;
    this.at = at + 2;
    if (hour > 23 || minute > 59 || second > 59) return Number.NaN;
    const key = year * 10_000 + month * 100 + day;
    if (key !== this.lastDay) {
      if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return Number.NaN;
      this.lastDay = key;
      this.lastDayMs = daysFromCivil(year, month, day) * 86_400_000;
    }
    return this.lastDayMs + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis;
  }

  /** A key without escapes (any other goes the ordinary road). */
  private key(): string {
    const from = this.at + 1;
    const end = this.plainString(false);
    return this.raw.toString('utf8', from, end);
  }

  /** Moves past a string without escapes (ASCII only, if asked); answers where its text ends. */
  private plainString(asciiOnly: boolean): number {
    const raw = this.raw;
    if (raw[this.at] !== QUOTE) throw NOT_SCANNABLE;
    let end = this.at + 1;
    for (;;) {
      const byte = raw[end];
      if (byte === undefined || byte === BACKSLASH || byte < 0x20 || (asciiOnly && byte >= 0x80)) throw NOT_SCANNABLE;
      if (byte === QUOTE) break;
      end++;
    }
    this.at = end + 1;
    return end;
  }

  /** Any other JSON value, skipped over and then JSON.parse'd alone (small: the options). */
  private plainValue(): unknown {
    const from = this.at;
    this.skipValue(0);
    try {
      return JSON.parse(this.raw.toString('utf8', from, this.at)) as unknown;
    } catch {
      throw NOT_SCANNABLE;
    }
  }

  /** Moves past one JSON value (its exact grammar is JSON.parse's to check). */
  private skipValue(depth: number): void {
    if (depth > MAX_SKIP_DEPTH) throw NOT_SCANNABLE;
    const raw = this.raw;
    const byte = raw[this.at];
    if (byte === QUOTE) {
      let at = this.at + 1;
      for (;;) {
        const next = raw[at];
        if (next === undefined) throw NOT_SCANNABLE;
        if (next === BACKSLASH) at += 2;
        else if (next === QUOTE) break;
        else at++;
      }
      this.at = at + 1;
      return;
    }
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      const close = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      this.at++;
      for (;;) {
        this.skipSpace();
        const next = raw[this.at];
        if (next === undefined) throw NOT_SCANNABLE;
        if (next === close) {
          this.at++;
          return;
        }
        if (next === COMMA || next === COLON) this.at++;
        else this.skipValue(depth + 1);
      }
    }
    // A number, true, false or null: up to the next delimiter.
    let at = this.at;
    for (;;) {
      const next = raw[at];
      if (next === undefined || next === COMMA || next === CLOSE_BRACE || next === CLOSE_BRACKET || isSpace(next)) break;
      at++;
    }
    if (at === this.at) throw NOT_SCANNABLE;
    this.at = at;
  }

  private skipSpace(): void {
    const raw = this.raw;
    let at = this.at;
    while (at < raw.length && isSpace(raw[at]!)) at++;
    this.at = at;
  }

  private expect(byte: number): void {
    if (this.raw[this.at] !== byte) throw NOT_SCANNABLE;
    this.at++;
  }
}

/** A point's key at `at`, matched without regard to case: VALUE_FIELD or TIMESTAMP_FIELD; any other is not scanned. */
function pointKey(raw: Buffer, at: number): number {
  if (raw[at] !== QUOTE) throw NOT_SCANNABLE;
  // "value"
  if (
    (raw[at + 1]! | CASE_BIT) === 0x76 &&
    (raw[at + 2]! | CASE_BIT) === 0x61 &&
    (raw[at + 3]! | CASE_BIT) === 0x6c &&
    (raw[at + 4]! | CASE_BIT) === 0x75 &&
    (raw[at + 5]! | CASE_BIT) === LOWER_E &&
    raw[at + 6] === QUOTE
  ) {
    return VALUE_FIELD;
  }
  // "timestamp"
  if (
    (raw[at + 1]! | CASE_BIT) === 0x74 &&
    (raw[at + 2]! | CASE_BIT) === 0x69 &&
    (raw[at + 3]! | CASE_BIT) === 0x6d &&
    (raw[at + 4]! | CASE_BIT) === LOWER_E &&
    (raw[at + 5]! | CASE_BIT) === 0x73 &&
    (raw[at + 6]! | CASE_BIT) === 0x74 &&
    (raw[at + 7]! | CASE_BIT) === 0x61 &&
    (raw[at + 8]! | CASE_BIT) === 0x6d &&
    (raw[at + 9]! | CASE_BIT) === 0x70 &&
    raw[at + 10] === QUOTE
  ) {
    return TIMESTAMP_FIELD;
  }
  throw NOT_SCANNABLE;
}

/** The two decimal digits at `at` as a number (0-99); negative when either is not a digit. */
function twoDigits(raw: Buffer, at: number): number {
  const high = raw[at]! - ZERO;
  const low = raw[at + 1]! - ZERO;
  return high >= 0 && high <= 9 && low >= 0 && low <= 9 ? high * 10 + low : -1;
}

/** usualTimestamp's answer for a text that is not of the usual form. */
const USUAL_NOT = Number.NEGATIVE_INFINITY;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Days from 1970-01-01 to a date of the proleptic Gregorian calendar (as Date counts them):
 * years counted from March, so the leap day ends a year, in 400-year eras of 146,097 days.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
