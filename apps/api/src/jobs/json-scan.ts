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
import { pipeline, Transform } from 'node:stream';
import type { FastifyRequest, preParsingHookHandler } from 'fastify';
import { alignSeries, type SeriesInput } from '@adp/detection';
import { MIN_SERIES_POINTS } from '@adp/domain';
import { parseJobRequest, type JobLimits, type ParsedJobRequest, type ParseTimestamp } from './request.js';
import type { JobRequest } from './schemas.js';
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isSpace,
  NOT_SCANNABLE,
  NotScannable,
  OPEN_BRACE,
  OPEN_BRACKET,
  plainStringEnd,
  PointReader,
  QUOTE,
  SeriesPrescan,
  SeriesRead,
} from './json-points.js';

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
 * Prescans of the JSON bodies uploading now (./json-points.ts): `hook` (POST /v1/jobs's preParsing
 * hook) passes a JSON body's chunks through one on their way to the body parser, which finds it
 * with `of`. Fastify's own reading of the body (its limit, its length check, its errors) is unchanged.
 */
export class JobBodyPrescans {
  private readonly byRequest = new WeakMap<FastifyRequest, SeriesPrescan>();

  constructor(private readonly parseTimestamp: ParseTimestamp) {}

  readonly hook: preParsingHookHandler = (request, _reply, payload, done) => {
    if (!/^\s*application\/json/i.test(request.headers['content-type'] ?? '')) {
      done(null, payload);
      return;
    }
    const prescan = new SeriesPrescan(this.parseTimestamp);
    this.byRequest.set(request, prescan);
    const observed = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        prescan.feed(chunk);
        callback(null, chunk);
      },
    });
    // The upload's failure reaches the body parser through `observed`, as it would from the payload.
    pipeline(payload, observed, () => {});
    done(null, observed);
  };

  of(request: FastifyRequest): SeriesPrescan | undefined {
    return this.byRequest.get(request);
  }
}

/**
 * The jobs routes' application/json parser (`parseAs: 'buffer'`): an empty body reads as none (as
 * the app's own parser has it), a body of the usual shape as a ScannedJobBody (with the points its
 * prescan read, if any), anything else through Fastify's JSON parser (`fallback`), with its errors.
 */
export function jobJsonParser(fallback: Parse, parseTimestamp: ParseTimestamp, prescans?: JobBodyPrescans) {
  return (request: FastifyRequest, body: Buffer | string, done: (err: Error | null, body?: unknown) => void): void => {
    const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    let start = 0;
    while (start < raw.length && isSpace(raw[start]!)) start++;
    if (start === raw.length) {
      done(null, undefined);
      return;
    }
    const scanned = scanJobJson(raw, parseTimestamp, prescans?.of(request));
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

/** The vendor's limit on a value's magnitude (larger values are refused by the ordinary road). */
const MAX_VALUE_MAGNITUDE = 1e100;

/**
 * Reads one body; null when it is not of the usual shape (the ordinary road then parses it). The
 * points a prescan read while the body uploaded (./json-points.ts) are taken where they fit.
 */
export function scanJobJson(raw: Buffer, parseTimestamp: ParseTimestamp, prescan?: SeriesPrescan): ScannedJobBody | null {
  try {
    return new Scanner(raw, parseTimestamp, prescan).body();
  } catch (err) {
    if (err instanceof NotScannable) return null;
    throw err;
  }
}

class Scanner {
  private at = 0;

  private readonly reader: PointReader;

  constructor(
    private readonly raw: Buffer,
    parseTimestamp: ParseTimestamp,
    private readonly prescan: SeriesPrescan | undefined,
  ) {
    this.reader = new PointReader(parseTimestamp);
  }

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
    const reader = this.reader;
    let at = this.at;
    // The points read while the body arrived, where they are this array's: then the rest from there.
    const prescanned = this.prescan?.take(at);
    const read = prescanned?.read ?? new SeriesRead();
    let open: boolean;
    if (prescanned !== undefined) {
      open = prescanned.closedAt < 0;
      at = open ? prescanned.resumeAt : prescanned.closedAt;
    } else {
      if (raw[at++] !== OPEN_BRACKET) throw NOT_SCANNABLE;
      while (isSpace(raw[at]!)) at++;
      open = raw[at] !== CLOSE_BRACKET;
      if (!open) at++;
    }
    while (open) {
      while (isSpace(raw[at]!)) at++;
      at = reader.point(raw, at);
      read.add(reader, raw);
      while (isSpace(raw[at]!)) at++;
      const next = raw[at++];
      if (next === CLOSE_BRACKET) open = false;
      else if (next !== COMMA) throw NOT_SCANNABLE;
    }
    this.at = at;
    // The values JSON.parse reads (long or with exponents); one too large is the ordinary road's refusal.
    if (!read.numbers.settle(read.values, MAX_VALUE_MAGNITUDE)) throw NOT_SCANNABLE;
    return { timestampsMs: read.timestampsMs, values: read.values };
  }

  /** A key without escapes (any other goes the ordinary road). */
  private key(): string {
    const end = plainStringEnd(this.raw, this.at, false);
    const key = this.raw.toString('utf8', this.at + 1, end);
    this.at = end + 1;
    return key;
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
