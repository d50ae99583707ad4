// Reading a `timestamp,value` CSV into a series. Pure: text in, series out, errors with line numbers.
import { CliError } from './errors.js';
import { parseTimestamp } from './timestamps.js';

/** Fewest points any detection accepts (the vendor API's rule). */
export const MIN_POINTS = 12;

/** One CSV record and the physical line (1-based) it starts on. */
export interface CsvRecord {
  readonly line: number;
  readonly fields: string[];
  /** Whether each field was quoted; quoted fields keep their inner whitespace. */
  readonly quoted: boolean[];
}

export interface CsvSeries {
  /** Timestamps exactly as written in the file (after unquoting). */
  readonly timestamps: string[];
  /** Epoch milliseconds of each timestamp; strictly increasing. */
  readonly timestampsMs: number[];
  readonly values: number[];
  /** Line in the file of each point, for messages about a point. */
  readonly lines: number[];
  /** Rows whose timestamp repeated the row before (dropped in favour of the later one). */
  readonly repeated: readonly RepeatedTimestamp[];
}

/** A row that repeated the instant of the row before it: that earlier row was dropped. */
export interface RepeatedTimestamp {
  /** The later row, whose value is kept. */
  readonly line: number;
  /** The earlier row, dropped. */
  readonly droppedLine: number;
}

export interface CsvOptions {
  /** Refuse a repeated timestamp (DuplicateTimestamp) instead of keeping the later row. */
  readonly strict?: boolean;
}

/**
 * Splits CSV text into records (RFC 4180: quoted fields with doubled quotes, commas and line
 * breaks inside quotes; LF, CRLF or CR line ends). Blank lines are dropped; a UTF-8 BOM is ignored.
 */
export function readCsvRecords(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let line = 1;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = text.length;

  while (i < n) {
    const recordLine = line;
    const fields: string[] = [];
    const quoted: boolean[] = [];
    let endOfRecord = false;
    while (!endOfRecord) {
      // Spaces before an opening quote do not make the field unquoted.
      let j = i;
      while (j < n && (text[j] === ' ' || text[j] === '\t')) j++;
      let field = '';
      let isQuoted = false;
      if (j < n && text[j] === '"') {
        isQuoted = true;
        const quoteLine = line;
        i = j + 1;
        for (;;) {
          if (i >= n) {
            throw new CliError('UnterminatedQuote', `line ${quoteLine}: a quoted field is not closed`);
          }
          const c = text[i] as string;
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) line++;
          field += c;
          i++;
        }
        // Anything between the closing quote and the separator is kept, as most readers do.
        while (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') field += text[i++];
      } else {
        const start = i;
        while (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') i++;
        field = text.slice(start, i);
      }
      fields.push(field);
      quoted.push(isQuoted);
      if (i >= n) {
        endOfRecord = true;
      } else if (text[i] === ',') {
        i++;
      } else {
        i += text[i] === '\r' && text[i + 1] === '\n' ? 2 : 1;
        line++;
        endOfRecord = true;
      }
    }
    const blank = fields.length === 1 && quoted[0] === false && (fields[0] as string).trim() === '';
    if (!blank) records.push({ line: recordLine, fields, quoted });
  }
  return records;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A finite decimal number, or null (rejects '', 'NaN', 'Infinity', '0x10' that Number() takes). */
export function parseValue(text: string): number | null {
  const t = text.trim();
  if (!DECIMAL.test(t)) return null;
  const v = Number(t);
  return Number.isFinite(v) ? v : null;
}

function preview(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

/**
 * Parses a whole file: a header row, then one `timestamp,value` row per point. Columns are taken
 * by position, so the header's names are free; the header is recognised by its second column not
 * being a number. Timestamps must be increasing, as the API requires; a row with the same instant
 * as the row before replaces it (the later reading wins, as a re-sent point does in the streaming
 * store), and is reported in `repeated`, unless `strict`. Real recordings (NAB's among them) hold
 * a few such rows, and refusing a whole file for one would leave the user to clean it by hand.
 */
export function parseSeriesCsv(text: string, options: CsvOptions = {}): CsvSeries {
  const records = readCsvRecords(text);
  const header = records[0];
  if (header === undefined) {
    throw new CliError('EmptyFile', 'the file is empty; expected a header row (timestamp,value) and data rows');
  }
  if (header.fields.length !== 2) {
    throw new CliError(
      'FieldCount',
      `line ${header.line}: the header has ${header.fields.length} column(s); expected 2 (timestamp,value)`,
    );
  }
  if (parseValue(header.fields[1] as string) !== null) {
    throw new CliError(
      'MissingHeader',
      `line ${header.line}: expected a header row such as "timestamp,value" but found data; add a header line`,
    );
  }

  const timestamps: string[] = [];
  const timestampsMs: number[] = [];
  const values: number[] = [];
  const lines: number[] = [];
  const repeated: RepeatedTimestamp[] = [];
  for (let r = 1; r < records.length; r++) {
    const { line, fields, quoted } = records[r] as CsvRecord;
    if (fields.length !== 2) {
      throw new CliError('FieldCount', `line ${line}: expected 2 fields (timestamp,value), found ${fields.length}`);
    }
    const rawTimestamp = fields[0] as string;
    const timestamp = quoted[0] ? rawTimestamp : rawTimestamp.trim();
    const ms = parseTimestamp(timestamp.trim());
    if (ms === null) {
      throw new CliError(
        'BadTimestamp',
        `line ${line}: timestamp "${preview(timestamp)}" is neither ISO 8601 nor epoch seconds/milliseconds`,
      );
    }
    const rawValue = fields[1] as string;
    const value = parseValue(rawValue);
    if (value === null) {
      const what = rawValue.trim() === '' ? 'is empty' : `"${preview(rawValue.trim())}" is not a finite number`;
      throw new CliError('BadValue', `line ${line}: value ${what}`);
    }
    const previousMs = timestampsMs[timestampsMs.length - 1];
    if (previousMs !== undefined && ms <= previousMs) {
      const previousLine = lines[lines.length - 1] as number;
      if (ms === previousMs) {
        if (options.strict === true) {
          throw new CliError('DuplicateTimestamp', `line ${line}: duplicate timestamp (same instant as line ${previousLine}; refused by --strict)`);
        }
        const last = timestamps.length - 1;
        timestamps[last] = timestamp;
        values[last] = value;
        lines[last] = line;
        repeated.push({ line, droppedLine: previousLine });
        continue;
      }
      throw new CliError('UnsortedTimestamps', `line ${line}: timestamps must be sorted; this one is before line ${previousLine}'s`);
    }
    timestamps.push(timestamp);
    timestampsMs.push(ms);
    values.push(value);
    lines.push(line);
  }
  if (values.length < MIN_POINTS) {
    throw new CliError('TooFewPoints', `the file has ${values.length} data point(s); at least ${MIN_POINTS} are needed`);
  }
  return { timestamps, timestampsMs, values, lines, repeated };
}
