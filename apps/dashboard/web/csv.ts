// Reads a univariate series from a CSV file in the browser, so a bad file is explained (line,
// column, what is wrong) before anything is sent. Pure: no DOM, no I/O; the unit tests in
// ../test run it under Node.
import {
  DEFAULT_JOB_MAX_POINTS,
  MAX_SERIES_POINTS,
  MAX_VALUE_MAGNITUDE,
  MIN_BASELINE_POINTS,
  MIN_SERIES_POINTS,
  csvLines,
  describeCsvProblem,
  readCsvNumber,
  splitCsvFields,
  type CsvProblem,
} from '@adp/domain';

export type { CsvProblem };

/** One point as the API takes it: the timestamp only when the file has them. */
export interface SeriesPoint {
  readonly timestamp?: string;
  readonly value: number;
}

export interface ParsedSeries {
  readonly points: readonly SeriesPoint[];
  /** Epoch milliseconds per point, or null for a file of values only. */
  readonly timestampsMs: readonly number[] | null;
  /** The header row's names when the file has one. */
  readonly header: readonly string[] | null;
}

export type CsvResult = { readonly ok: true; readonly series: ParsedSeries } | { readonly ok: false; readonly problem: CsvProblem };

export interface CsvLimits {
  /** Fewest data rows accepted (the API's minimum for the chosen operation). */
  readonly minPoints: number;
  /** Most data rows accepted. */
  readonly maxPoints: number;
}

/** The vendor's limits for a detection: 12 to 8,640 points. */
export const DETECT_LIMITS: CsvLimits = { minPoints: MIN_SERIES_POINTS, maxPoints: MAX_SERIES_POINTS };
/** Entire-series detection as a job (POST /v1/jobs, over 8,640 points): 12 to the API's default most points. */
export const JOB_LIMITS: CsvLimits = { minPoints: MIN_SERIES_POINTS, maxPoints: DEFAULT_JOB_MAX_POINTS };
/** POST /v1/baseline's limits: 100 to 8,640 points. */
export const BASELINE_LIMITS: CsvLimits = { minPoints: MIN_BASELINE_POINTS, maxPoints: MAX_SERIES_POINTS };

// ISO 8601 date, optional time (T or a space), optional fraction and zone; no zone means UTC.
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** "Line 7, column 2 (value): ..." — the sentence the pages show for a problem. */
export { describeCsvProblem as describeProblem };

/**
 * Parses `timestamp,value` rows or one value per line, with an optional header row (recognised
 * by its value column not being a number). Blank lines are skipped; CRLF and a UTF-8 BOM are fine.
 * Timestamps must be ISO 8601 and strictly ascending.
 */
export function parseSeriesCsv(text: string, limits: CsvLimits = DETECT_LIMITS): CsvResult {
  const lines = csvLines(text);
  const points: SeriesPoint[] = [];
  const timestampsMs: number[] = [];
  let header: string[] | null = null;
  let columns: number | null = null;
  let firstDataLine = 0;
  let previousTimestampLine = 0;

  const fail = (line: number | null, column: number | null, message: string): CsvResult => ({
    ok: false,
    problem: { line, column, columnName: column === null ? null : nameOf(column, columns ?? 1, header), message },
  });

  for (let index = 0; index < lines.length; index += 1) {
    const raw = lines[index] ?? '';
    if (raw.trim() === '') continue;
    const lineNumber = index + 1;
    const fields = splitCsvFields(raw);

    if (columns === null) {
      if (fields.length > 2) {
        return fail(
          lineNumber,
          null,
          `${fields.length} columns; expected "timestamp,value" or one value per line`,
        );
      }
      columns = fields.length;
      const valueField = fields[columns - 1] ?? '';
      if (readCsvNumber(valueField) === null) {
        header = fields;
        continue;
      }
      firstDataLine = lineNumber;
    } else if (fields.length !== columns) {
      return fail(lineNumber, null, `${fields.length} column${fields.length === 1 ? '' : 's'} where ${firstDataLine > 0 ? `line ${firstDataLine}` : 'the header'} has ${columns}`);
    }
    if (firstDataLine === 0) firstDataLine = lineNumber;

    if (points.length >= limits.maxPoints) {
      return fail(lineNumber, null, `more than ${formatCount(limits.maxPoints)} data rows; the API takes at most ${formatCount(limits.maxPoints)} points`);
    }

    const valueText = fields[columns - 1] ?? '';
    const value = readCsvNumber(valueText);
    if (value === null) {
      return fail(lineNumber, columns, valueText === '' ? 'the value is empty' : `"${clip(valueText)}" is not a number`);
    }
    if (Math.abs(value) > MAX_VALUE_MAGNITUDE) return fail(lineNumber, columns, `${valueText} is beyond ±1e100`);

    if (columns === 2) {
      const stampText = fields[0] ?? '';
      const ms = readTimestamp(stampText);
      if (ms === null) {
        return fail(
          lineNumber,
          1,
          stampText === '' ? 'the timestamp is empty' : `"${clip(stampText)}" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)`,
        );
      }
      const previous = timestampsMs[timestampsMs.length - 1];
      if (previous !== undefined && ms <= previous) {
        return fail(
          lineNumber,
          1,
          ms === previous
            ? `${stampText} repeats line ${previousTimestampLine}'s timestamp`
            : `${stampText} is earlier than line ${previousTimestampLine}'s; timestamps must ascend`,
        );
      }
      timestampsMs.push(ms);
      previousTimestampLine = lineNumber;
      points.push({ timestamp: new Date(ms).toISOString(), value });
    } else {
      points.push({ value });
    }
  }

  if (points.length < limits.minPoints) {
    const rows = `${points.length} data row${points.length === 1 ? '' : 's'}`;
    return fail(null, null, `The file has ${rows}; at least ${formatCount(limits.minPoints)} are needed`);
  }
  return { ok: true, series: { points, timestampsMs: columns === 2 ? timestampsMs : null, header } };
}

export type GranularityName = 'yearly' | 'monthly' | 'weekly' | 'daily' | 'hourly' | 'minutely' | 'secondly' | 'none';

export interface InferredGranularity {
  readonly granularity: GranularityName;
  readonly customInterval: number;
}

const STEPS: readonly (readonly [GranularityName, number])[] = [
  ['weekly', 604_800_000],
  ['daily', 86_400_000],
  ['hourly', 3_600_000],
  ['minutely', 60_000],
  ['secondly', 1_000],
];

/**
 * The API's granularity and custom interval for these timestamps: the largest step that divides
 * every gap (5-minute data is minutely × 5; gaps are then missing points the engine fills).
 * Calendar months and years when every point falls on the first of a month at midnight UTC.
 * `none` without timestamps or when no step of a second or more fits.
 */
export function inferGranularity(timestampsMs: readonly number[] | null): InferredGranularity {
  if (timestampsMs === null || timestampsMs.length < 2) return { granularity: 'none', customInterval: 1 };
  const months = calendarMonths(timestampsMs);
  if (months !== null) {
    let step = 0;
    for (let i = 1; i < months.length; i += 1) step = gcd(step, (months[i] ?? 0) - (months[i - 1] ?? 0));
    if (step > 0 && step % 12 === 0) return { granularity: 'yearly', customInterval: step / 12 };
    if (step > 0) return { granularity: 'monthly', customInterval: step };
  }
  let stepMs = 0;
  for (let i = 1; i < timestampsMs.length; i += 1) stepMs = gcd(stepMs, (timestampsMs[i] ?? 0) - (timestampsMs[i - 1] ?? 0));
  for (const [granularity, unitMs] of STEPS) {
    if (stepMs > 0 && stepMs % unitMs === 0) return { granularity, customInterval: stepMs / unitMs };
  }
  return { granularity: 'none', customInterval: 1 };
}

/** Month numbers (year × 12 + month) when every timestamp is the first of a month at 00:00 UTC. */
function calendarMonths(timestampsMs: readonly number[]): number[] | null {
  const months: number[] = [];
  for (const ms of timestampsMs) {
    const date = new Date(ms);
    if (date.getUTCDate() !== 1 || ms % 86_400_000 !== 0) return null;
    months.push(date.getUTCFullYear() * 12 + date.getUTCMonth());
  }
  return months;
}

function gcd(a: number, b: number): number {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y !== 0) [x, y] = [y, x % y];
  return x;
}


/** Epoch milliseconds of an ISO 8601 timestamp (no zone: UTC), or null if it is not one or not a real date. */
export function readTimestamp(text: string): number | null {
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) return null;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = match;
  const iso = `${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.padEnd(3, '0').slice(0, 3)}${normaliseZone(zone)}`;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  // Date.parse rolls 2025-02-30 over to March; a real date reads back the same day.
  const day0 = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (day0.getUTCDate() !== Number(day) || day0.getUTCMonth() + 1 !== Number(month)) return null;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return null;
  return ms;
}

function normaliseZone(zone: string): string {
  if (zone.toUpperCase() === 'Z') return 'Z';
  return zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
}

function nameOf(column: number, columns: number, header: readonly string[] | null): string {
  const named = header?.[column - 1];
  if (named) return named;
  if (columns === 1) return 'value';
  return column === 1 ? 'timestamp' : 'value';
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}
