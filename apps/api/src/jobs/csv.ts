// POST /v1/jobs with `Content-Type: text/csv`: one series as a file, with the dashboard's column
// rules (apps/dashboard/web/csv.ts): `timestamp,value` rows or one value per line, an optional
// header row (recognised by its value column not being a number), blank lines skipped, CRLF, CR
// and a UTF-8 byte-order mark accepted, one pair of double quotes around a field dropped. A file of
// three or more columns is a machine's channels, read as the dashboard reads them (@adp/domain's
// readChannelsCsv): a header `timestamp,<channel>,...`, then every row a timestamp and a reading of
// each channel. The detection options and `machine_id` come from the query string. The file becomes the body a JSON
// submission would have been, so every later rule (and message) is the same; a problem of the file
// itself is an InvalidSeries naming its line and column.
import { csvLines, describeCsvProblem, readChannelsCsv, readCsvNumber as readNumber, splitCsvFields as fields } from '@adp/domain';
import { AppError, ERRORS } from '../errors.js';

/** The query parameters a CSV submission takes, as the JSON body's fields. */
const NUMBER_FIELDS = ['customInterval', 'period', 'sensitivity', 'maxAnomalyRatio', 'imputeFixedValue'] as const;
const TEXT_FIELDS = ['machine_id', 'granularity', 'imputeMode'] as const;
export const CSV_QUERY_FIELDS: readonly string[] = [...TEXT_FIELDS, ...NUMBER_FIELDS];

function problem(line: number, column: number | null, columnName: string | null, message: string): AppError {
  return new AppError(ERRORS.InvalidSeries, describeCsvProblem({ line, column, columnName, message }));
}

/**
 * The JSON body equivalent to a CSV submission: `series` from the file, the options from the
 * query. Timestamps are read as the JSON body's are (`parseTimestamp`), and must ascend: a file's
 * problems name their line rather than the point's index.
 */
export function csvJobBody(text: string, query: unknown, parseTimestamp: (text: string) => number | null): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const params = typeof query === 'object' && query !== null ? (query as Record<string, unknown>) : {};
  for (const name of CSV_QUERY_FIELDS) {
    const raw = params[name];
    if (raw === undefined || raw === '') continue;
    if (typeof raw !== 'string') throw new AppError(ERRORS.InvalidArgument, `The '${name}' query parameter must be given once.`);
    // A number where the JSON body has one; anything else is passed on for the body's own message.
    body[name] = (NUMBER_FIELDS as readonly string[]).includes(name) ? (readNumber(raw) ?? raw) : raw;
  }

  const lines = csvLines(text);
  const series: { timestamp?: string; value: number }[] = [];
  let columns: number | null = null;
  let header: string[] | null = null;
  let firstDataLine = 0;
  let previous: { ms: number; line: number } | null = null;
  const nameOf = (column: number): string | null => header?.[column - 1] ?? (columns === 2 ? (column === 1 ? 'timestamp' : 'value') : 'value');
  for (let index = 0; index < lines.length; index++) {
    const raw = lines[index]!;
    if (raw.trim() === '') continue;
    const line = index + 1;
    const row = fields(raw);
    if (columns === null) {
      if (row.length > 2) {
        body['series'] = multichannelSeries(lines, index, parseTimestamp);
        return body;
      }
      columns = row.length;
      if (readNumber(row[columns - 1]!) === null) {
        header = row;
        continue;
      }
    } else if (row.length !== columns) {
      throw problem(line, null, null, `${row.length} column${row.length === 1 ? '' : 's'} where ${firstDataLine > 0 ? `line ${firstDataLine}` : 'the header'} has ${columns}`);
    }
    if (firstDataLine === 0) firstDataLine = line;
    const valueText = row[columns - 1]!;
    const value = readNumber(valueText);
    if (value === null) throw problem(line, columns, nameOf(columns), valueText === '' ? 'the value is empty' : `"${valueText.slice(0, 32)}" is not a number`);
    if (columns === 2) {
      const timestamp = row[0]!;
      if (timestamp === '') throw problem(line, 1, nameOf(1), 'the timestamp is empty');
      const ms = parseTimestamp(timestamp);
      if (ms === null) throw problem(line, 1, nameOf(1), `"${timestamp.slice(0, 40)}" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)`);
      if (previous !== null && ms <= previous.ms) {
        throw problem(line, 1, nameOf(1), ms === previous.ms ? `${timestamp} repeats line ${previous.line}'s timestamp` : `${timestamp} is earlier than line ${previous.line}'s; timestamps must ascend`);
      }
      previous = { ms, line };
      series.push({ timestamp, value });
    } else {
      series.push({ value });
    }
  }
  body['series'] = series;
  return body;
}

/** A machine's channels from `lines`, whose line `at` (0-based) is the header. */
function multichannelSeries(lines: readonly string[], at: number, parseTimestamp: (text: string) => number | null): { timestamp: string; channels: Readonly<Record<string, number>> }[] {
  const read = readChannelsCsv(lines, at, { parseTimestamp });
  if (!read.ok) throw new AppError(ERRORS.InvalidSeries, describeCsvProblem(read.problem));
  return read.rows.map(({ timestamp, channels }) => ({ timestamp, channels }));
}
