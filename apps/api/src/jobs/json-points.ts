// The points of a job body's series, read from bytes: one point at a time (PointReader, for
// ./json-scan.ts), and while the body is still uploading (SeriesPrescan).
//
// A million-point body is 64 MB; reading it after it has arrived added its whole scan to the time
// before the 202. SeriesPrescan reads the points of each `"series": [` it sees in the chunks as
// they come (the upload and the scan overlap), and keeps what it read by the offset of the array's
// `[`. It is only ever a head start: the scanner of the whole body still walks its structure, and
// takes a prescanned run only where its own cursor meets a `[` at that very offset, so the run
// holds exactly what it would have read there (the same reader over the same bytes). A run that
// began at a `"series"` inside some string is simply never taken. A point is taken into a run only
// once the byte after it (`,` or `]`) has arrived: a point cut by a chunk's end cannot parse (every
// number, string and point needs its closing byte), and is read again with the next chunk.
import { JsonNumberReader } from '../json-number.js';
import type { ParseTimestamp } from './request.js';

/** JSON's structural bytes (the body scanner in json-scan.ts reads the same). */
export const QUOTE = 0x22;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const LOWER_E = 0x65;

export function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Thrown inside the scanners when the body is not of the shape they read; caught at their top. */
export class NotScannable extends Error {}
export const NOT_SCANNABLE = new NotScannable('not of the scanned shape');

/** Where the string without escapes (ASCII only, if asked) at `at` (its opening quote) ends: its closing quote. */
export function plainStringEnd(raw: Uint8Array, at: number, asciiOnly: boolean): number {
  if (raw[at] !== QUOTE) throw NOT_SCANNABLE;
  let end = at + 1;
  for (;;) {
    const byte = raw[end];
    if (byte === undefined || byte === BACKSLASH || byte < 0x20 || (asciiOnly && byte >= 0x80)) throw NOT_SCANNABLE;
    if (byte === QUOTE) return end;
    end++;
  }
}

/** One series' points as read so far: timestamps (epoch ms) and values, some values left to JSON.parse. */
export class SeriesRead {
  readonly timestampsMs: number[] = [];
  readonly values: number[] = [];
  readonly numbers = new JsonNumberReader();

  /** Appends the point `reader` has just read from `raw`. */
  add(reader: PointReader, raw: Uint8Array): void {
    if (Number.isNaN(reader.value)) this.numbers.keep(raw, reader.valueFrom, reader.valueTo, this.values.length);
    this.timestampsMs.push(reader.timestampMs);
    this.values.push(reader.value);
  }
}

/** Reads `{"timestamp": "...", "value": n}` (exactly those two fields, either order) from bytes. */
export class PointReader {
  /** The last point read: its timestamp, and its value (NaN: bytes valueFrom to valueTo are left to JSON.parse). */
  timestampMs = Number.NaN;
  value = Number.NaN;
  valueFrom = 0;
  valueTo = 0;
  private readonly numbers = new JsonNumberReader();
  /** The day of the last usual timestamp (year * 10,000 + month * 100 + day) and its epoch ms. */
  private lastDay = -1;
  private lastDayMs = 0;

  constructor(private readonly parseTimestamp: ParseTimestamp) {}

  /** The point whose `{` is at `at`: answers the offset after its `}`; throws NOT_SCANNABLE for any other shape. */
  point(raw: Uint8Array, at: number): number {
    if (raw[at++] !== OPEN_BRACE) throw NOT_SCANNABLE;
    let timestamp = Number.NaN;
    let valueSeen = false;
    for (let field = 0; field < 2; field++) {
      while (isSpace(raw[at]!)) at++;
      const isValue = pointKey(raw, at);
      at += isValue ? 7 : 11;
      while (isSpace(raw[at]!)) at++;
      if (raw[at++] !== COLON) throw NOT_SCANNABLE;
      while (isSpace(raw[at]!)) at++;
      if (isValue) {
        if (valueSeen) throw NOT_SCANNABLE;
        valueSeen = true;
        const numbers = this.numbers;
        this.value = numbers.read(raw, at);
        if (numbers.end < 0) throw NOT_SCANNABLE;
        this.valueFrom = at;
        this.valueTo = at = numbers.end;
      } else {
        if (!Number.isNaN(timestamp)) throw NOT_SCANNABLE;
        const end = plainStringEnd(raw, at, true);
        timestamp = this.timestamp(raw, at + 1, end);
        at = end + 1;
      }
      while (isSpace(raw[at]!)) at++;
      if (raw[at++] !== (field === 0 ? COMMA : CLOSE_BRACE)) throw NOT_SCANNABLE;
    }
    if (!valueSeen || Number.isNaN(timestamp)) throw NOT_SCANNABLE;
    this.timestampMs = timestamp;
    return at;
  }

  /**
   * A timestamp's text (bytes `from` to `end`), read as the ordinary road reads it: the usual
   * `YYYY-MM-DDTHH:MM:SS[.fff]Z` from its bytes (the day's start computed once a day), any other
   * form by the ordinary road's own parser over its text.
   */
  private timestamp(raw: Uint8Array, from: number, end: number): number {
    const usual = this.usualTimestamp(raw, from, end);
    if (!Number.isNaN(usual)) return usual;
    const ms = this.parseTimestamp(Buffer.from(raw.buffer, raw.byteOffset + from, end - from).toString('latin1'));
    if (ms === null) throw NOT_SCANNABLE;
    return ms;
  }

  /** `YYYY-MM-DDTHH:MM:SS[.d+]Z` (years from 100) as epoch ms, NaN for any other text. */
  private usualTimestamp(raw: Uint8Array, from: number, end: number): number {
    const length = end - from;
    const zone = raw[end - 1];
    if (length < 20 || (zone !== 0x5a && zone !== 0x7a) || raw[from + 4] !== MINUS || raw[from + 7] !== MINUS || raw[from + 10] !== 0x54) return Number.NaN;
    if (raw[from + 13] !== COLON || raw[from + 16] !== COLON) return Number.NaN;
    const year = digits(raw, from, 4);
    const month = digits(raw, from + 5, 2);
    const day = digits(raw, from + 8, 2);
    const hour = digits(raw, from + 11, 2);
    const minute = digits(raw, from + 14, 2);
    const second = digits(raw, from + 17, 2);
    if (!(year >= 100 && month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 59)) return Number.NaN;
    let millis = 0;
    if (length > 20) {
      if (raw[from + 19] !== DOT || length < 22) return Number.NaN;
      for (let i = 20; i < length - 1; i++) {
        const digit = raw[from + i]! - ZERO;
        if (digit < 0 || digit > 9) return Number.NaN;
        if (i < 23) millis += digit * (i === 20 ? 100 : i === 21 ? 10 : 1);
      }
    }
    const key = year * 10_000 + month * 100 + day;
    if (key !== this.lastDay) {
      const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
      const days = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
      if (day > days) return Number.NaN;
      this.lastDay = key;
      this.lastDayMs = Date.UTC(year, month - 1, day);
    }
    return this.lastDayMs + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis;
  }
}

/** `count` decimal digits at `at` as a number, or -1. */
function digits(raw: Uint8Array, at: number, count: number): number {
  let n = 0;
  for (let i = 0; i < count; i++) {
    const digit = raw[at + i]! - ZERO;
    if (digit < 0 || digit > 9) return -1;
    n = n * 10 + digit;
  }
  return n;
}

/** A point's key at `at`: true for `"value"`, false for `"timestamp"`; any other key is not scanned. */
function pointKey(raw: Uint8Array, at: number): boolean {
  if (raw[at] !== QUOTE) throw NOT_SCANNABLE;
  // "value"
  if (raw[at + 1] === 0x76 && raw[at + 2] === 0x61 && raw[at + 3] === 0x6c && raw[at + 4] === 0x75 && raw[at + 5] === LOWER_E && raw[at + 6] === QUOTE) return true;
  // "timestamp"
  if (
    raw[at + 1] === 0x74 && raw[at + 2] === 0x69 && raw[at + 3] === 0x6d && raw[at + 4] === LOWER_E && raw[at + 5] === 0x73 &&
    raw[at + 6] === 0x74 && raw[at + 7] === 0x61 && raw[at + 8] === 0x6d && raw[at + 9] === 0x70 && raw[at + 10] === QUOTE
  ) {
    return false;
  }
  throw NOT_SCANNABLE;
}

/** The points of one `[` of the body, read ahead of the scanner. */
export interface PrescannedRun {
  readonly read: SeriesRead;
  /** The body offset where the points after those read begin (after a `,`), while the array is open. */
  resumeAt: number;
  /** The body offset after the array's `]` once it was reached, else -1. */
  closedAt: number;
}

/** `"series"`: the key whose array a run reads. */
const SERIES_KEY = Buffer.from('"series"');
/**
 * The most bytes held back for the next chunk: a point is far shorter. More means the bytes there are
 * not of the usual shape, and the prescan stops (the scanner reads the rest itself).
 */
const MAX_CARRY_BYTES = 4096;

/** Reads the series' points of a job body as its chunks arrive (see the top of this file). */
export class SeriesPrescan {
  private readonly reader: PointReader;
  private readonly runs = new Map<number, PrescannedRun>();
  /** The run being read, if a `"series": [` was seen and its array has not closed. */
  private run: PrescannedRun | null = null;
  /** Bytes of the last chunks not read yet, and the body offset of their first. */
  private carry: Buffer = Buffer.alloc(0);
  private base = 0;
  private stopped = false;

  constructor(parseTimestamp: ParseTimestamp) {
    this.reader = new PointReader(parseTimestamp);
  }

  /** Reads what it can of the next chunk of the body. */
  feed(chunk: Buffer): void {
    if (this.stopped) return;
    const window = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    let from: number;
    try {
      from = this.advance(window);
    } catch {
      // A shape it does not read: the scanner reads the body itself (a prescan is only a head start).
      this.stop();
      return;
    }
    if (window.length - from > MAX_CARRY_BYTES) {
      this.stop();
      return;
    }
    // A copy: the chunk's memory is the socket's to reuse.
    this.carry = Buffer.from(window.subarray(from));
    this.base += from;
  }

  /** The run whose array opens at body offset `at`, where it read any of it; it is handed out once. */
  take(at: number): PrescannedRun | undefined {
    const run = this.runs.get(at);
    if (run === undefined || (run.read.values.length === 0 && run.closedAt < 0)) return undefined;
    this.runs.delete(at);
    if (run === this.run) this.stop();
    return run;
  }

  private stop(): void {
    this.stopped = true;
    this.run = null;
    this.carry = Buffer.alloc(0);
  }

  /** Reads runs from `window` (the carry and a chunk); answers the window offset from which to read next time. */
  private advance(window: Buffer): number {
    let at = 0;
    for (;;) {
      if (this.run === null) {
        const key = window.indexOf(SERIES_KEY, at);
        // Not (wholly) here: keep a tail that may be the key's beginning.
        if (key < 0) return Math.max(at, window.length - SERIES_KEY.length + 1);
        let next = key + SERIES_KEY.length;
        while (isSpace(window[next]!)) next++;
        if (next >= window.length) return key;
        if (window[next] !== COLON) {
          at = key + 1;
          continue;
        }
        next++;
        while (isSpace(window[next]!)) next++;
        if (next >= window.length) return key;
        if (window[next] !== OPEN_BRACKET) {
          at = key + 1;
          continue;
        }
        this.run = { read: new SeriesRead(), resumeAt: this.base + next + 1, closedAt: -1 };
        this.runs.set(this.base + next, this.run);
        at = next + 1;
      }
      const run = this.run;
      // The points of the open run, each taken once the byte after it is here.
      for (;;) {
        let next = at;
        while (isSpace(window[next]!)) next++;
        if (next >= window.length) return at;
        if (window[next] === CLOSE_BRACKET && run.read.values.length === 0) {
          run.closedAt = this.base + next + 1;
          this.run = null;
          at = next + 1;
          break;
        }
        let end: number;
        try {
          end = this.reader.point(window, next);
        } catch (err) {
          // Cut by the window's end (read again with the next chunk), or of another shape (then
          // the carry grows past its limit and the prescan stops).
          if (err instanceof NotScannable) return at;
          throw err;
        }
        while (isSpace(window[end]!)) end++;
        const separator = window[end];
        if (separator === undefined) return at;
        if (separator !== COMMA && separator !== CLOSE_BRACKET) throw NOT_SCANNABLE;
        run.read.add(this.reader, window);
        at = end + 1;
        if (separator === COMMA) {
          run.resumeAt = this.base + at;
        } else {
          run.closedAt = this.base + at;
          this.run = null;
          break;
        }
      }
    }
  }
}
