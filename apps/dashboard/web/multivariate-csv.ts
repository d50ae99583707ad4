// Reads a multivariate series from a CSV file in the browser: a header `timestamp,<channel>,...`
// naming each channel, then one row per instant with every channel's reading. The shape it makes
// is POST /v1/baseline's multivariate series (points with `channels`, as telemetry carries them).
// A bad file is explained by line, column and what is wrong. Pure: the unit tests run it under Node.
import { MAX_ABS_VALUE, readNumber, readTimestamp, splitFields, type CsvLimits, type CsvProblem } from './csv.js';

/** The API's channel names (telemetry's): a letter or _ first, then up to 63 of A-Z a-z 0-9 _ . : - */
const CHANNEL_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;
/** Most channels one machine may have (the API's limit). */
export const MAX_CHANNELS = 16;

export interface ChannelPoint {
  readonly timestamp: string;
  readonly channels: Readonly<Record<string, number>>;
}

export interface ParsedMultivariate {
  readonly channels: readonly string[];
  readonly points: readonly ChannelPoint[];
  readonly timestampsMs: readonly number[];
}

export type MultivariateResult = { readonly ok: true; readonly series: ParsedMultivariate } | { readonly ok: false; readonly problem: CsvProblem };

/** Whether the file's first non-blank line has three or more columns: a multivariate file. */
export function looksMultivariate(text: string): boolean {
  const first = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/).find((line) => line.trim() !== '');
  return first !== undefined && splitFields(first).length >= 3;
}

export function parseMultivariateCsv(text: string, limits: CsvLimits): MultivariateResult {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  let header: string[] | null = null;
  let headerLine = 0;
  const points: ChannelPoint[] = [];
  const timestampsMs: number[] = [];
  let previousLine = 0;

  const fail = (line: number | null, column: number | null, message: string): MultivariateResult => ({
    ok: false,
    problem: { line, column, columnName: column === null || header === null ? null : (header[column - 1] ?? null), message },
  });

  for (let index = 0; index < lines.length; index += 1) {
    const raw = lines[index] ?? '';
    if (raw.trim() === '') continue;
    const lineNumber = index + 1;
    const fields = splitFields(raw);

    if (header === null) {
      if ((fields[0] ?? '').toLowerCase() !== 'timestamp') {
        return fail(lineNumber, 1, `a multivariate file starts with a header "timestamp,<channel>,<channel>,…"; the first column is "${clip(fields[0] ?? '')}"`);
      }
      const names = fields.slice(1);
      header = ['timestamp', ...names];
      if (names.length > MAX_CHANNELS) return fail(lineNumber, null, `${names.length} channels; a machine has at most ${MAX_CHANNELS}`);
      const seen = new Map<string, number>();
      for (let i = 0; i < names.length; i += 1) {
        const name = names[i] ?? '';
        if (!CHANNEL_NAME.test(name)) {
          return fail(lineNumber, i + 2, name === '' ? 'the channel name is empty' : `"${clip(name)}" is not a channel name (a letter or _ first, then up to 63 of A-Z a-z 0-9 _ . : -)`);
        }
        const earlier = seen.get(name);
        if (earlier !== undefined) return fail(lineNumber, i + 2, `channel "${name}" repeats column ${earlier}`);
        seen.set(name, i + 2);
      }
      headerLine = lineNumber;
      continue;
    }

    if (fields.length !== header.length) {
      return fail(lineNumber, null, `${fields.length} column${fields.length === 1 ? '' : 's'} where the header (line ${headerLine}) has ${header.length}`);
    }
    if (points.length >= limits.maxPoints) {
      return fail(lineNumber, null, `more than ${limits.maxPoints.toLocaleString('en-US')} data rows; the API takes at most ${limits.maxPoints.toLocaleString('en-US')} points`);
    }
    const stampText = fields[0] ?? '';
    const ms = readTimestamp(stampText);
    if (ms === null) {
      return fail(lineNumber, 1, stampText === '' ? 'the timestamp is empty' : `"${clip(stampText)}" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)`);
    }
    const previous = timestampsMs[timestampsMs.length - 1];
    if (previous !== undefined && ms <= previous) {
      return fail(lineNumber, 1, ms === previous ? `${stampText} repeats line ${previousLine}'s timestamp` : `${stampText} is earlier than line ${previousLine}'s; timestamps must ascend`);
    }
    const channels: Record<string, number> = {};
    for (let column = 2; column <= header.length; column += 1) {
      const valueText = fields[column - 1] ?? '';
      const value = readNumber(valueText);
      if (value === null) return fail(lineNumber, column, valueText === '' ? 'the value is empty (every row needs every channel)' : `"${clip(valueText)}" is not a number`);
      if (Math.abs(value) > MAX_ABS_VALUE) return fail(lineNumber, column, `${valueText} is beyond ±1e100`);
      channels[header[column - 1] ?? ''] = value;
    }
    timestampsMs.push(ms);
    previousLine = lineNumber;
    points.push({ timestamp: new Date(ms).toISOString(), channels });
  }

  if (header === null) return fail(null, null, 'The file is empty');
  if (points.length < limits.minPoints) {
    return fail(null, null, `The file has ${points.length} data row${points.length === 1 ? '' : 's'}; at least ${limits.minPoints.toLocaleString('en-US')} are needed`);
  }
  return { ok: true, series: { channels: header.slice(1), points, timestampsMs } };
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
