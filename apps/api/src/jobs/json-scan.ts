// A fast road for the JSON body of POST /v1/jobs. JSON.parse of a million-point body builds a
// million point objects and two million strings, which then live until validation has read them:
// on the shared 2-core host that alone took 1.5 to 2.5 s. Here the body stays a Buffer; its
// `series` arrays are read byte by byte straight into timestamps and values, and every other field
// (the options, machine ids) is JSON.parse'd alone.
//
// It only ever takes a body that the ordinary road (JSON.parse, then ./request.ts) would accept,
// and gives the same ParsedJobRequest: anything it does not recognise (a point with another field,
// a value that is not a plain number, a timestamp it cannot read, a series too short or too long,
// an option the skeleton check refuses), and it steps aside, so that every refusal, with its coded
// error naming the series and the point, comes from the ordinary road alone.
import type { FastifyRequest } from 'fastify';
import { alignSeries, type SeriesInput } from '@adp/detection';
import { MIN_SERIES_POINTS } from '@adp/domain';
import { parseJobRequest, type JobLimits, type ParsedJobRequest, type ParseTimestamp } from './request.js';
import type { JobRequest } from './schemas.js';
import { JsonNumberReader } from '../json-number.js';

/** One series of the body as read: its points' timestamps (epoch ms) and values. */
interface ScannedSeries {
  /** `machine_id` of a `series_list` item, as JSON.parse gives it (the top-level one is in `fields`). */
  readonly machineId?: unknown;
  readonly timestampsMs: number[];
  readonly values: number[];
}

/** A JSON body of POST /v1/jobs whose series were read by scanJobJson (fields other than the series parsed as usual). */
export class ScannedJobBody {
  constructor(
    /** The body's bytes: what the ordinary road parses when the fast one steps aside. */
    readonly raw: Buffer,
    /** Every top-level field but `series` / `series_list`. */
    readonly fields: Readonly<Record<string, unknown>>,
    readonly shape: 'series' | 'series_list',
    readonly series: readonly ScannedSeries[],
  ) {}
}

type Parse = (request: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void) => void;

/**
 * The jobs routes' application/json parser (`parseAs: 'buffer'`): an empty body reads as none (as
 * the app's own parser has it), a body of the usual shape as a ScannedJobBody, anything else
 * through Fastify's JSON parser (`fallback`), with its errors.
 */
export function jobJsonParser(fallback: Parse, parseTimestamp: ParseTimestamp) {
  return (request: FastifyRequest, body: Buffer | string, done: (err: Error | null, body?: unknown) => void): void => {
    const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    let start = 0;
    while (start < raw.length && isSpace(raw[start]!)) start++;
    if (start === raw.length) {
      done(null, undefined);
      return;
    }
    const scanned = scanJobJson(raw, parseTimestamp);
    if (scanned !== null) done(null, scanned);
    else fallback(request, raw.toString('utf8'), done);
  };
}

/**
 * The job's series and options from a body: the fast road for a ScannedJobBody, and where it steps
 * aside (or for any other body) parseJobRequest over the parsed JSON.
 */
export function parseJobBody(body: unknown, limits: JobLimits, parseTimestamp: ParseTimestamp, check: CheckBody): ParsedJobRequest {
  // Any other body was checked against the request schema by the route, except none at all: a
  // request without a body (and without a content type) has no content type's schema to meet.
  if (!(body instanceof ScannedJobBody)) return parseJobRequest(body === undefined || body === null ? check(body) : (body as JobRequest), limits, parseTimestamp);
  // The scanner refused bodies with __proto__ or constructor keys, so a plain JSON.parse is safe here.
  return acceptScanned(body, limits, parseTimestamp, check) ?? parseJobRequest(check(JSON.parse(body.raw.toString('utf8'))), limits, parseTimestamp);
}

/** The route's check of a body against the request schema (it throws the coded error). */
export type CheckBody = (body: unknown) => JobRequest;

/**
 * The ParsedJobRequest of a scanned body, or null where the ordinary road must decide. The options
 * and machine ids go through parseJobRequest itself, over a skeleton of the body whose series are
 * their own first points; each whole series then through the engine's alignment, as the ordinary
 * road runs it.
 */
export function acceptScanned(body: ScannedJobBody, limits: JobLimits, parseTimestamp: ParseTimestamp, check: CheckBody): ParsedJobRequest | null {
  let points = 0;
  for (const one of body.series) {
    if (one.values.length < MIN_SERIES_POINTS || one.values.length > limits.maxPoints) return null;
    points += one.values.length;
  }
  if (points > limits.maxPoints) return null;
  const head = (one: ScannedSeries) =>
    one.values.slice(0, MIN_SERIES_POINTS).map((value, i) => ({ timestamp: new Date(one.timestampsMs[i]!).toISOString(), value }));
  let checked: ParsedJobRequest;
  try {
    const skeleton =
      body.shape === 'series'
        ? { ...body.fields, series: head(body.series[0]!) }
        : { ...body.fields, series_list: body.series.map((one) => ({ machine_id: one.machineId, series: head(one) })) };
    checked = parseJobRequest(check(skeleton), limits, parseTimestamp);
  } catch {
    return null;
  }
  if (checked.multichannel.length > 0 || checked.series.length !== body.series.length) return null;
  const { options } = checked;
  const series = [];
  for (const [index, one] of body.series.entries()) {
    const input: SeriesInput = {
      timestampsMs: one.timestampsMs,
      values: one.values,
      granularity: options.granularity as SeriesInput['granularity'],
      customInterval: options.customInterval,
      imputeMode: options.imputeMode as SeriesInput['imputeMode'],
      ...(options.imputeFixedValue !== undefined ? { imputeFixedValue: options.imputeFixedValue } : {}),
    };
    try {
      alignSeries(input, options.period);
    } catch {
      return null;
    }
    series.push({ machineId: checked.series[index]!.machineId, timestampsMs: one.timestampsMs, values: one.values });
  }
  return { series, multichannel: [], options, points, sensitivityGiven: checked.sensitivityGiven };
}

// --- the scanner ----------------------------------------------------------------------------------

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

/** The vendor's limit on a value's magnitude (larger values are refused by the ordinary road). */
const MAX_VALUE_MAGNITUDE = 1e100;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Thrown inside the scanner when the body is not of the shape it reads; caught at its top. */
class NotScannable extends Error {}
const NOT_SCANNABLE = new NotScannable('not of the scanned shape');

/** Reads one body; null when it is not of the usual shape (the ordinary road then parses it). */
export function scanJobJson(raw: Buffer, parseTimestamp: ParseTimestamp): ScannedJobBody | null {
  try {
    return new Scanner(raw, parseTimestamp).body();
  } catch (err) {
    if (err instanceof NotScannable) return null;
    throw err;
  }
}

class Scanner {
  private at = 0;

  constructor(
    private readonly raw: Buffer,
    private readonly parseTimestamp: ParseTimestamp,
  ) {}

  body(): ScannedJobBody {
    const fields: Record<string, unknown> = {};
    let shape: 'series' | 'series_list' | null = null;
    let series: ScannedSeries[] = [];
    this.skipSpace();
    this.objectMembers((key) => {
      if (key === 'series' || key === 'series_list') {
        if (shape !== null) throw NOT_SCANNABLE;
        shape = key;
        series = key === 'series' ? [this.points()] : this.seriesList();
      } else {
        fields[key] = this.plainValue();
      }
    });
    this.skipSpace();
    if (this.at !== this.raw.length || shape === null) throw NOT_SCANNABLE;
    return new ScannedJobBody(this.raw, fields, shape, series);
  }

  /** `{ "key": value, ... }`, calling `member` with each key once the cursor is at its value. */
  private objectMembers(member: (key: string) => void): void {
    const seen = new Set<string>();
    this.expect(OPEN_BRACE);
    this.skipSpace();
    if (this.raw[this.at] === CLOSE_BRACE) {
      this.at++;
      return;
    }
    for (;;) {
      this.skipSpace();
      const key = this.key();
      // A repeated key (JSON.parse keeps the last) and the keys the app's parser refuses go the ordinary road.
      if (seen.has(key) || key === '__proto__' || key === 'constructor') throw NOT_SCANNABLE;
      seen.add(key);
      this.skipSpace();
      this.expect(COLON);
      this.skipSpace();
      member(key);
      this.skipSpace();
      const next = this.raw[this.at++];
      if (next === CLOSE_BRACE) return;
      if (next !== COMMA) throw NOT_SCANNABLE;
    }
  }

  /** `[ {"machine_id": ..., "series": [...]}, ... ]`: items of exactly those two fields. */
  private seriesList(): ScannedSeries[] {
    const list: ScannedSeries[] = [];
    this.expect(OPEN_BRACKET);
    this.skipSpace();
    if (this.raw[this.at] === CLOSE_BRACKET) throw NOT_SCANNABLE;
    for (;;) {
      this.skipSpace();
      let machineId: unknown;
      let read: ScannedSeries | null = null;
      this.objectMembers((key) => {
        if (key === 'machine_id') machineId = this.plainValue();
        else if (key === 'series') read = this.points();
        else throw NOT_SCANNABLE;
      });
      if (read === null || machineId === undefined) throw NOT_SCANNABLE;
      list.push({ ...(read as ScannedSeries), machineId });
      this.skipSpace();
      const next = this.raw[this.at++];
      if (next === CLOSE_BRACKET) return list;
      if (next !== COMMA) throw NOT_SCANNABLE;
    }
  }

  /** `[ {"timestamp": "...", "value": n}, ... ]`: points of exactly those two fields, in either order. */
  private points(): ScannedSeries {
    const raw = this.raw;
    const timestampsMs: number[] = [];
    const values: number[] = [];
    const numbers = this.numbers;
    numbers.begin();
    this.expect(OPEN_BRACKET);
    this.skipSpace();
    if (raw[this.at] === CLOSE_BRACKET) {
      this.at++;
      return { timestampsMs, values };
    }
    for (;;) {
      this.skipSpace();
      this.expect(OPEN_BRACE);
      let timestamp = Number.NaN;
      let value = Number.NaN;
      let valueSeen = false;
      for (let field = 0; field < 2; field++) {
        this.skipSpace();
        const isValue = this.pointKey();
        this.skipSpace();
        this.expect(COLON);
        this.skipSpace();
        if (isValue) {
          if (valueSeen) throw NOT_SCANNABLE;
          valueSeen = true;
          value = numbers.read(raw, this.at);
          if (numbers.end < 0) throw NOT_SCANNABLE;
          if (Number.isNaN(value)) numbers.keep(raw, this.at, numbers.end, values.length);
          this.at = numbers.end;
        } else {
          if (!Number.isNaN(timestamp)) throw NOT_SCANNABLE;
          timestamp = this.timestamp();
        }
        this.skipSpace();
        const next = raw[this.at++];
        if (next !== (field === 0 ? COMMA : CLOSE_BRACE)) throw NOT_SCANNABLE;
      }
      if (!valueSeen || Number.isNaN(timestamp)) throw NOT_SCANNABLE;
      timestampsMs.push(timestamp);
      values.push(value);
      this.skipSpace();
      const next = raw[this.at++];
      if (next === CLOSE_BRACKET) break;
      if (next !== COMMA) throw NOT_SCANNABLE;
    }
    // The values JSON.parse reads (long or with exponents); one too large is the ordinary road's refusal.
    if (!numbers.settle(values, MAX_VALUE_MAGNITUDE)) throw NOT_SCANNABLE;
    return { timestampsMs, values };
  }

  /** A point's key: true for `"value"`, false for `"timestamp"`; any other key is not scanned. */
  private pointKey(): boolean {
    const raw = this.raw;
    const at = this.at;
    if (raw[at] !== QUOTE) throw NOT_SCANNABLE;
    // "value"
    if (raw[at + 1] === 0x76 && raw[at + 2] === 0x61 && raw[at + 3] === 0x6c && raw[at + 4] === 0x75 && raw[at + 5] === LOWER_E && raw[at + 6] === QUOTE) {
      this.at = at + 7;
      return true;
    }
    // "timestamp"
    if (
      raw[at + 1] === 0x74 && raw[at + 2] === 0x69 && raw[at + 3] === 0x6d && raw[at + 4] === LOWER_E && raw[at + 5] === 0x73 &&
      raw[at + 6] === 0x74 && raw[at + 7] === 0x61 && raw[at + 8] === 0x6d && raw[at + 9] === 0x70 && raw[at + 10] === QUOTE
    ) {
      this.at = at + 11;
      return false;
    }
    throw NOT_SCANNABLE;
  }

  /**
   * A timestamp string without escapes, read as the ordinary road reads it: the usual
   * `YYYY-MM-DDTHH:MM:SS[.fff]Z` from its bytes (the day's start computed once a day), any other
   * form by the ordinary road's own parser over its text.
   */
  private timestamp(): number {
    const raw = this.raw;
    const from = this.at + 1;
    const end = this.plainString(true);
    const usual = this.usualTimestamp(from, end);
    if (!Number.isNaN(usual)) return usual;
    const ms = this.parseTimestamp(raw.toString('latin1', from, end));
    if (ms === null) throw NOT_SCANNABLE;
    return ms;
  }

  private lastDay = -1;
  private lastDayMs = 0;

  /** `YYYY-MM-DDTHH:MM:SS[.d+]Z` (years from 100) as epoch ms, NaN for any other text. */
  private usualTimestamp(from: number, end: number): number {
    const raw = this.raw;
    const length = end - from;
    const zone = raw[end - 1];
    if (length < 20 || (zone !== 0x5a && zone !== 0x7a) || raw[from + 4] !== MINUS || raw[from + 7] !== MINUS || raw[from + 10] !== 0x54) return Number.NaN;
    if (raw[from + 13] !== COLON || raw[from + 16] !== COLON) return Number.NaN;
    const year = this.digits(from, 4);
    const month = this.digits(from + 5, 2);
    const day = this.digits(from + 8, 2);
    const hour = this.digits(from + 11, 2);
    const minute = this.digits(from + 14, 2);
    const second = this.digits(from + 17, 2);
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

  /** `count` decimal digits at `at` as a number, or -1. */
  private digits(at: number, count: number): number {
    let n = 0;
    for (let i = 0; i < count; i++) {
      const digit = this.raw[at + i]! - ZERO;
      if (digit < 0 || digit > 9) return -1;
      n = n * 10 + digit;
    }
    return n;
  }

  /** The series' numbers, read from the bytes (or left to one JSON.parse). */
  private readonly numbers = new JsonNumberReader();

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

  /** Any other JSON value, skipped over and then JSON.parse'd alone (small: options, ids). */
  private plainValue(): unknown {
    const from = this.at;
    this.skipValue(0);
    const text = this.raw.toString('utf8', from, this.at);
    if (text.includes('__proto__') || text.includes('constructor')) throw NOT_SCANNABLE;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw NOT_SCANNABLE;
    }
  }

  /** Moves past one JSON value (its exact grammar is JSON.parse's to check). */
  private skipValue(depth: number): void {
    if (depth > 64) throw NOT_SCANNABLE;
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
