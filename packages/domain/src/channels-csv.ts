// A machine's channels in a CSV file, read the same way by the API (POST /v1/jobs with
// `Content-Type: text/csv`) and by the dashboard (before it sends a file): a header
// `timestamp,<channel>,...`, then one row per instant with a timestamp and every channel's
// reading. A problem names its line and column, so both sides explain a bad file alike. Pure:
// lines in, rows or a problem out.
import { CHANNEL_NAME_MAX_LENGTH, CHANNEL_NAME_PATTERN } from './identifiers.js';
import { MAX_VALUE_MAGNITUDE } from './limits.js';

/** What is wrong with a file, and where: `line` and `column` are 1-based, as an editor shows them. */
export interface CsvProblem {
  readonly line: number | null;
  /** Null when the problem is the whole line or file. */
  readonly column: number | null;
  /** The column's name where a data row is at fault (the header's name for it). */
  readonly columnName: string | null;
  readonly message: string;
}

/** "Line 7, column 2 (value): ..." — the sentence a problem is reported as. */
export function describeCsvProblem(problem: CsvProblem): string {
  const where: string[] = [];
  if (problem.line !== null) where.push(`Line ${problem.line}`);
  if (problem.column !== null) where.push(`column ${problem.column}${problem.columnName ? ` (${problem.columnName})` : ''}`);
  return where.length > 0 ? `${where.join(', ')}: ${problem.message}` : problem.message;
}

/** Splits a line on commas, trimming each field and one pair of surrounding double quotes. */
export function splitCsvFields(line: string): string[] {
  return line.split(',').map((field) => {
    const trimmed = field.trim();
    return trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1).trim() : trimmed;
  });
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A finite decimal number (no hex, no "Infinity", no empty string), else null. */
export function readCsvNumber(text: string): number | null {
  if (!DECIMAL.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

/** The lines of a file's text: a UTF-8 byte-order mark dropped, CRLF, LF and CR all ending a line. */
export function csvLines(text: string): string[] {
  return text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
}

export interface ChannelRow {
  /** The timestamp as the file writes it. */
  readonly timestamp: string;
  readonly timestampMs: number;
  /** Every channel's reading, by channel name. */
  readonly channels: Readonly<Record<string, number>>;
}

export interface ChannelsCsvOptions {
  /** Epoch milliseconds of a timestamp, null when it is not one (the caller's timestamp rule). */
  readonly parseTimestamp: (text: string) => number | null;
  /** Most data rows; absent: no limit here (a later check applies one). */
  readonly maxRows?: number;
  /** Most channels; absent: no limit here. */
  readonly maxChannels?: number;
}

export type ChannelsCsvResult =
  | { readonly ok: true; readonly channels: readonly string[]; readonly rows: readonly ChannelRow[] }
  | { readonly ok: false; readonly problem: CsvProblem };

const CHANNEL_NAME_TEXT = `a letter or _ first, then up to ${CHANNEL_NAME_MAX_LENGTH - 1} of A-Z a-z 0-9 _ . : -`;

/**
 * The channels of `lines` (csvLines of a file), whose line `headerIndex` (0-based) is the header.
 * Blank lines are skipped; timestamps must ascend strictly.
 */
export function readChannelsCsv(lines: readonly string[], headerIndex: number, options: ChannelsCsvOptions): ChannelsCsvResult {
  const header = splitCsvFields(lines[headerIndex] ?? '');
  const headerLine = headerIndex + 1;
  const fail = (line: number, column: number | null, message: string, named = true): ChannelsCsvResult => ({
    ok: false,
    // Column 1 is named by its role whatever the header's case ("Timestamp").
    problem: { line, column, columnName: !named || column === null ? null : column === 1 ? 'timestamp' : (header[column - 1] ?? null), message },
  });

  const first = header[0] ?? '';
  if (first.toLowerCase() !== 'timestamp') {
    return fail(headerLine, 1, `a file of several channels starts with a header "timestamp,<channel>,<channel>,..."; the first column is "${clip(first)}"`, false);
  }
  const names = header.slice(1);
  if (options.maxChannels !== undefined && names.length > options.maxChannels) {
    return fail(headerLine, null, `${names.length} channels; a machine has at most ${options.maxChannels}`);
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (!CHANNEL_NAME_PATTERN.test(name)) {
      return fail(headerLine, i + 2, name === '' ? 'the channel name is empty' : `"${clip(name)}" is not a channel name (${CHANNEL_NAME_TEXT})`, false);
    }
    const earlier = names.indexOf(name);
    if (earlier !== i) return fail(headerLine, i + 2, `channel "${name}" repeats column ${earlier + 2}`, false);
  }

  const rows: ChannelRow[] = [];
  let previous: { ms: number; line: number } | null = null;
  for (let index = headerIndex + 1; index < lines.length; index++) {
    const raw = lines[index]!;
    if (raw.trim() === '') continue;
    const line = index + 1;
    const row = splitCsvFields(raw);
    if (row.length !== header.length) {
      return fail(line, null, `${row.length} column${row.length === 1 ? '' : 's'} where the header (line ${headerLine}) has ${header.length}`);
    }
    if (options.maxRows !== undefined && rows.length >= options.maxRows) {
      const most = options.maxRows.toLocaleString('en-US');
      return fail(line, null, `more than ${most} data rows; the API takes at most ${most} points`);
    }
    const timestamp = row[0]!;
    const ms = timestamp === '' ? null : options.parseTimestamp(timestamp);
    if (ms === null) return fail(line, 1, timestamp === '' ? 'the timestamp is empty' : `"${clip(timestamp)}" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)`);
    if (previous !== null && ms <= previous.ms) {
      return fail(line, 1, ms === previous.ms ? `${timestamp} repeats line ${previous.line}'s timestamp` : `${timestamp} is earlier than line ${previous.line}'s; timestamps must ascend`);
    }
    previous = { ms, line };
    // A Map first: a channel may be named `__proto__`, which an assignment to a plain object would not store.
    const readings = new Map<string, number>();
    for (let i = 0; i < names.length; i++) {
      const text = row[i + 1]!;
      const value = readCsvNumber(text);
      if (value === null) return fail(line, i + 2, text === '' ? 'the value is empty (every row needs every channel)' : `"${clip(text, 32)}" is not a number`);
      if (Math.abs(value) > MAX_VALUE_MAGNITUDE) return fail(line, i + 2, `${text} is beyond ±1e100`);
      readings.set(names[i]!, value);
    }
    rows.push({ timestamp, timestampMs: ms, channels: Object.fromEntries(readings) });
  }
  return { ok: true, channels: names, rows };
}

function clip(text: string, length = 40): string {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}
