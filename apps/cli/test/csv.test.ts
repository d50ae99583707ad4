import { describe, expect, it } from 'vitest';
import { parseSeriesCsv, parseValue, readCsvRecords } from '../src/csv.js';
import { CliError, EXIT_DATA } from '../src/errors.js';
import { parseTimestamp } from '../src/timestamps.js';

/** A header and `points` hourly rows; `row(i)` may replace any data row's text. */
function csv(points: number, row?: (i: number) => string | undefined, eol = '\n'): string {
  const lines = ['timestamp,value'];
  for (let i = 0; i < points; i++) {
    lines.push(row?.(i) ?? `${new Date(Date.UTC(2024, 0, 1, i)).toISOString()},${i}`);
  }
  return lines.join(eol) + eol;
}

function failure(text: string): CliError {
  try {
    parseSeriesCsv(text);
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error('parseSeriesCsv did not fail');
}

describe('readCsvRecords', () => {
  it('splits LF, CRLF and CR lines and keeps the starting line of each record', () => {
    expect(readCsvRecords('a,b\r\n1,2\n3,4\r5,6').map((r) => [r.line, r.fields])).toEqual([
      [1, ['a', 'b']], [2, ['1', '2']], [3, ['3', '4']], [4, ['5', '6']],
    ]);
  });

  it('reads quoted fields with commas, doubled quotes and line breaks', () => {
    const records = readCsvRecords('"t","v"\n"x, ""y""",1\n"multi\nline",2\nlast,3\n');
    expect(records.map((r) => r.fields)).toEqual([['t', 'v'], ['x, "y"', '1'], ['multi\nline', '2'], ['last', '3']]);
    expect(records.map((r) => r.line)).toEqual([1, 2, 3, 5]);
  });

  it('drops blank lines and a byte-order mark', () => {
    expect(readCsvRecords('\ufeffa,b\n\n1,2\n \n\r\n\n').map((r) => r.fields)).toEqual([['a', 'b'], ['1', '2']]);
  });

  it('rejects an unclosed quote, naming the line it opened on', () => {
    expect(() => readCsvRecords('a,b\n1,"2\n3,4\n')).toThrowError(/line 2: a quoted field is not closed/);
  });
});

describe('parseValue and parseTimestamp', () => {
  it('takes decimal numbers only', () => {
    expect(parseValue(' 1.5e3 ')).toBe(1500);
    expect(parseValue('-.5')).toBe(-0.5);
    for (const bad of ['', 'NaN', 'Infinity', '0x10', '1,5', '1e999', 'abc']) expect(parseValue(bad)).toBeNull();
  });

  it('reads ISO 8601 and epoch seconds or milliseconds', () => {
    const ms = Date.UTC(2024, 0, 1);
    expect(parseTimestamp('2024-01-01T00:00:00Z')).toBe(ms);
    expect(parseTimestamp('2024-01-01T00:00:00.0000000Z')).toBe(ms);
    expect(parseTimestamp('2024-01-01T01:00:00+01:00')).toBe(ms);
    expect(parseTimestamp(String(ms / 1000))).toBe(ms);
    expect(parseTimestamp(String(ms))).toBe(ms);
    expect(parseTimestamp('1704067200.5')).toBe(ms + 500);
    expect(parseTimestamp('yesterday')).toBeNull();
  });
});

describe('parseSeriesCsv', () => {
  it('parses a plain file', () => {
    const s = parseSeriesCsv(csv(12));
    expect(s.values).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(s.timestamps[0]).toBe('2024-01-01T00:00:00.000Z');
    expect(s.timestampsMs[1]).toBe(Date.UTC(2024, 0, 1, 1));
    expect(s.lines[0]).toBe(2);
  });

  it('tolerates CRLF, quoted fields, spaces and blank trailing lines', () => {
    const text = csv(12, (i) => `"${new Date(Date.UTC(2024, 0, 1, i)).toISOString()}", "${i}" `, '\r\n') + '\r\n\r\n';
    const s = parseSeriesCsv(text);
    expect(s.values).toHaveLength(12);
    expect(s.values[11]).toBe(11);
    expect(s.timestamps[0]).toBe('2024-01-01T00:00:00.000Z');
  });

  it('keeps timestamps as written and takes epoch seconds', () => {
    const s = parseSeriesCsv(csv(12, (i) => `${1704067200 + i * 60},${i}`));
    expect(s.timestamps[1]).toBe('1704067260');
    expect(s.timestampsMs[1]).toBe(1704067260000);
  });

  it.each([
    ['an empty file', '', 'EmptyFile', /the file is empty/],
    ['only blank lines', '\n\n\r\n', 'EmptyFile', /the file is empty/],
    ['no header', csv(12).split('\n').slice(1).join('\n'), 'MissingHeader', /line 1: expected a header row/],
    ['a header with 3 columns', 'timestamp,value,extra\n', 'FieldCount', /line 1: the header has 3 column\(s\); expected 2/],
    ['a row with 3 fields', csv(20, (i) => (i === 4 ? '2024-01-01T04:00:00Z,4,9' : undefined)), 'FieldCount', /line 6: expected 2 fields \(timestamp,value\), found 3/],
    ['a row with 1 field', csv(20, (i) => (i === 7 ? '2024-01-01T07:00:00Z' : undefined)), 'FieldCount', /line 9: expected 2 fields.*found 1/],
    ['a non-numeric value', csv(20, (i) => (i === 9 ? '2024-01-01T09:00:00Z,abc' : undefined)), 'BadValue', /line 11: value "abc" is not a finite number/],
    ['an empty value', csv(20, (i) => (i === 2 ? '2024-01-01T02:00:00Z,' : undefined)), 'BadValue', /line 4: value is empty/],
    ['NaN', csv(20, (i) => (i === 3 ? '2024-01-01T03:00:00Z,NaN' : undefined)), 'BadValue', /line 5: value "NaN"/],
    ['a bad timestamp', csv(20, (i) => (i === 5 ? 'not-a-date,5' : undefined)), 'BadTimestamp', /line 7: timestamp "not-a-date" is neither ISO 8601 nor epoch/],
    ['unsorted timestamps', csv(20, (i) => (i === 6 ? '2024-01-01T01:30:00Z,6' : undefined)), 'UnsortedTimestamps', /line 8: timestamps must be sorted/],
    ['11 points', csv(11), 'TooFewPoints', /the file has 11 data point\(s\); at least 12 are needed/],
    ['a header only', 'timestamp,value\n', 'TooFewPoints', /has 0 data point/],
  ])('rejects %s', (_name, text, code, message) => {
    const err = failure(text);
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.exitCode).toBe(EXIT_DATA);
  });

  it('keeps the later row of a repeated timestamp and reports both lines', () => {
    // Rows 5 and 6 (lines 7 and 8) share 05:00; later, three rows (lines 14-16) share 12:00.
    const text = csv(20, (i) => (i === 6 ? '2024-01-01T05:00:00Z,60' : i === 13 || i === 14 ? `2024-01-01T12:00:00Z,${i * 10}` : undefined));
    const s = parseSeriesCsv(text);
    expect(s.repeated).toEqual([
      { line: 8, droppedLine: 7 },
      { line: 15, droppedLine: 14 },
      { line: 16, droppedLine: 15 },
    ]);
    expect(s.values).toHaveLength(17);
    expect(s.values.slice(4, 7)).toEqual([4, 60, 7]);
    expect(s.lines.slice(4, 7)).toEqual([6, 8, 9]);
    expect(s.values.slice(10, 13)).toEqual([11, 140, 15]);
    expect(s.lines.slice(10, 13)).toEqual([13, 16, 17]);
    expect(s.timestampsMs.every((ms, i) => i === 0 || ms > s.timestampsMs[i - 1]!)).toBe(true);
    expect(parseSeriesCsv(csv(12)).repeated).toEqual([]);
  });

  it('refuses a repeated timestamp with its line under strict', () => {
    const text = csv(20, (i) => (i === 6 ? '2024-01-01T05:00:00Z,6' : undefined));
    try {
      parseSeriesCsv(text, { strict: true });
      throw new Error('parseSeriesCsv did not fail');
    } catch (err) {
      expect(err).toBeInstanceOf(CliError);
      expect((err as CliError).code).toBe('DuplicateTimestamp');
      expect((err as CliError).message).toBe('line 8: duplicate timestamp (same instant as line 7; refused by --strict)');
    }
  });

  it('counts the points after dropping repeated rows', () => {
    const text = csv(12, (i) => (i === 11 ? '2024-01-01T10:00:00Z,11' : undefined));
    expect(failure(text).code).toBe('TooFewPoints');
  });

  it('counts lines through blank lines and CRLF when reporting', () => {
    const text = 'timestamp,value\r\n\r\n' + csv(12).split('\n').slice(1, 4).join('\r\n') + '\r\n2024-02-01T00:00:00Z,oops\r\n';
    expect(failure(text).message).toMatch(/^line 6: value "oops"/);
  });
});
