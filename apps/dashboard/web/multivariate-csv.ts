// Reads a multivariate series from a CSV file in the browser: a header `timestamp,<channel>,...`
// naming each channel, then one row per instant with every channel's reading, by the rules the
// API's CSV jobs read it with (@adp/domain's readChannelsCsv). The shape it makes is
// POST /v1/baseline's multivariate series (points with `channels`, as telemetry carries them).
// A bad file is explained by line, column and what is wrong. Pure: the unit tests run it under Node.
import { MAX_MULTIVARIATE_CHANNELS, csvLines, readChannelsCsv, splitCsvFields } from '@adp/domain';
import { readTimestamp, type CsvLimits, type CsvProblem } from './csv.js';

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
  const first = csvLines(text).find((line) => line.trim() !== '');
  return first !== undefined && splitCsvFields(first).length >= 3;
}

export function parseMultivariateCsv(text: string, limits: CsvLimits): MultivariateResult {
  const lines = csvLines(text);
  const headerIndex = lines.findIndex((line) => line.trim() !== '');
  if (headerIndex < 0) return { ok: false, problem: { line: null, column: null, columnName: null, message: 'The file is empty' } };
  const read = readChannelsCsv(lines, headerIndex, { parseTimestamp: readTimestamp, maxRows: limits.maxPoints, maxChannels: MAX_MULTIVARIATE_CHANNELS });
  if (!read.ok) return read;
  if (read.rows.length < limits.minPoints) {
    const rows = `${read.rows.length} data row${read.rows.length === 1 ? '' : 's'}`;
    return { ok: false, problem: { line: null, column: null, columnName: null, message: `The file has ${rows}; at least ${limits.minPoints.toLocaleString('en-US')} are needed` } };
  }
  return {
    ok: true,
    series: {
      channels: read.channels,
      points: read.rows.map(({ timestampMs, channels }) => ({ timestamp: new Date(timestampMs).toISOString(), channels })),
      timestampsMs: read.rows.map((row) => row.timestampMs),
    },
  };
}
