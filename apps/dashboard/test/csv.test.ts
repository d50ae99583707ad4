import { describe, expect, it } from 'vitest';
import { BASELINE_LIMITS, describeProblem, inferGranularity, parseSeriesCsv, readTimestamp, type CsvResult } from '../web/csv.js';

const LIMITS = { minPoints: 3, maxPoints: 5 };

function minutely(count: number, value = (i: number) => 10 + i): string {
  return Array.from({ length: count }, (_, i) => `2025-06-01T10:${String(i).padStart(2, '0')}:00Z,${value(i)}`).join('\n');
}

function problemOf(result: CsvResult): string {
  if (result.ok) throw new Error('expected a problem');
  return describeProblem(result.problem);
}

describe('parseSeriesCsv', () => {
  it('reads timestamp,value rows with a header, CRLF, a BOM and blank lines', () => {
    const result = parseSeriesCsv('\uFEFFtimestamp,value\r\n2025-06-01T10:00:00Z,1.5\r\n\r\n2025-06-01T10:01:00Z,-2\r\n2025-06-01 10:02,3e2\r\n', LIMITS);
    expect(result).toEqual({
      ok: true,
      series: {
        header: ['timestamp', 'value'],
        points: [
          { timestamp: '2025-06-01T10:00:00.000Z', value: 1.5 },
          { timestamp: '2025-06-01T10:01:00.000Z', value: -2 },
          { timestamp: '2025-06-01T10:02:00.000Z', value: 300 },
        ],
        timestampsMs: [Date.UTC(2025, 5, 1, 10, 0), Date.UTC(2025, 5, 1, 10, 1), Date.UTC(2025, 5, 1, 10, 2)],
      },
    });
  });

  it('reads one value per line, without a header and with one', () => {
    expect(parseSeriesCsv('1\n2\n3', LIMITS)).toEqual({ ok: true, series: { header: null, points: [{ value: 1 }, { value: 2 }, { value: 3 }], timestampsMs: null } });
    const named = parseSeriesCsv('temperature\n1\n2\n"3"', LIMITS);
    expect(named.ok && named.series.header).toEqual(['temperature']);
    expect(named.ok && named.series.points).toHaveLength(3);
  });

  it('names the line, the column and the problem of a bad value', () => {
    expect(problemOf(parseSeriesCsv('timestamp,value\n2025-06-01T10:00:00Z,1\n2025-06-01T10:01:00Z,abc\n', LIMITS))).toBe(
      'Line 3, column 2 (value): "abc" is not a number',
    );
    expect(problemOf(parseSeriesCsv('1\n2\n\n \n', LIMITS))).toBe('The file has 2 data rows; at least 3 are needed');
    expect(problemOf(parseSeriesCsv('t,reading\n2025-06-01T10:00:00Z,\n', LIMITS))).toBe('Line 2, column 2 (reading): the value is empty');
    expect(problemOf(parseSeriesCsv('1\n2\nNaN\n', LIMITS))).toBe('Line 3, column 1 (value): "NaN" is not a number');
    expect(problemOf(parseSeriesCsv('1\n2\n1e101\n', LIMITS))).toBe('Line 3, column 1 (value): 1e101 is beyond ±1e100');
  });

  it('names a bad, repeated or descending timestamp', () => {
    expect(problemOf(parseSeriesCsv('2025-06-01T10:00:00Z,1\nyesterday,2\n', LIMITS))).toBe(
      'Line 2, column 1 (timestamp): "yesterday" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)',
    );
    expect(problemOf(parseSeriesCsv('2025-06-01T10:00:00Z,1\n2025-06-01T10:00:00Z,2\n', LIMITS))).toBe(
      "Line 2, column 1 (timestamp): 2025-06-01T10:00:00Z repeats line 1's timestamp",
    );
    expect(problemOf(parseSeriesCsv('2025-06-01T10:05:00Z,1\n\n2025-06-01T10:00:00Z,2\n', LIMITS))).toBe(
      "Line 3, column 1 (timestamp): 2025-06-01T10:00:00Z is earlier than line 1's; timestamps must ascend",
    );
    expect(problemOf(parseSeriesCsv('2025-02-30T10:00:00Z,1\n', LIMITS))).toContain('"2025-02-30T10:00:00Z" is not an ISO 8601 timestamp');
  });

  it('refuses a row with another number of columns, and more than two columns', () => {
    expect(problemOf(parseSeriesCsv('2025-06-01T10:00:00Z,1\n2\n', LIMITS))).toBe('Line 2: 1 column where line 1 has 2');
    expect(problemOf(parseSeriesCsv('timestamp,value\n1,2,3\n', LIMITS))).toBe('Line 2: 3 columns where the header has 2');
    expect(problemOf(parseSeriesCsv('timestamp,a,b\n', LIMITS))).toContain('Line 1: 3 columns; expected "timestamp,value"');
  });

  it('refuses more rows than the limit, at the first row over it', () => {
    expect(problemOf(parseSeriesCsv(minutely(6), LIMITS))).toBe('Line 6: more than 5 data rows; the API takes at most 5 points');
    expect(parseSeriesCsv(minutely(5), LIMITS).ok).toBe(true);
    expect(problemOf(parseSeriesCsv(minutely(50), BASELINE_LIMITS))).toBe('The file has 50 data rows; at least 100 are needed');
  });
});

describe('readTimestamp', () => {
  it('reads ISO 8601 with and without a zone (UTC), offsets and fractions', () => {
    expect(readTimestamp('2025-06-01')).toBe(Date.UTC(2025, 5, 1));
    expect(readTimestamp('2025-06-01T10:00:00.5+02:00')).toBe(Date.UTC(2025, 5, 1, 8, 0, 0, 500));
    expect(readTimestamp('2025-06-01T10:00:00-0130')).toBe(Date.UTC(2025, 5, 1, 11, 30));
    expect(readTimestamp('2025-06-01T24:00:00Z')).toBeNull();
    expect(readTimestamp('1717236000')).toBeNull();
  });
});

describe('inferGranularity', () => {
  const at = (...minutes: number[]) => minutes.map((m) => Date.UTC(2025, 5, 1, 0, m));
  it('takes the largest step dividing every gap', () => {
    expect(inferGranularity(at(0, 1, 2, 4))).toEqual({ granularity: 'minutely', customInterval: 1 });
    expect(inferGranularity(at(0, 5, 10, 20))).toEqual({ granularity: 'minutely', customInterval: 5 });
    expect(inferGranularity(at(0, 60, 180))).toEqual({ granularity: 'hourly', customInterval: 1 });
    expect(inferGranularity([0, 86_400_000, 2 * 86_400_000 + 1_000])).toEqual({ granularity: 'secondly', customInterval: 1 });
    expect(inferGranularity([0, 7 * 86_400_000, 14 * 86_400_000])).toEqual({ granularity: 'weekly', customInterval: 1 });
  });
  it('uses calendar months and years on the first of the month', () => {
    expect(inferGranularity([Date.UTC(2025, 0, 1), Date.UTC(2025, 1, 1), Date.UTC(2025, 2, 1)])).toEqual({ granularity: 'monthly', customInterval: 1 });
    expect(inferGranularity([Date.UTC(2023, 0, 1), Date.UTC(2024, 0, 1), Date.UTC(2026, 0, 1)])).toEqual({ granularity: 'yearly', customInterval: 1 });
  });
  it('is none without timestamps or without a whole-second step', () => {
    expect(inferGranularity(null)).toEqual({ granularity: 'none', customInterval: 1 });
    expect(inferGranularity([0, 500, 1000])).toEqual({ granularity: 'none', customInterval: 1 });
  });
});
