import { describe, expect, it } from 'vitest';
import { describeProblem } from '../web/csv.js';
import { looksMultivariate, parseMultivariateCsv, type MultivariateResult } from '../web/multivariate-csv.js';

const LIMITS = { minPoints: 2, maxPoints: 3 };

function problemOf(result: MultivariateResult): string {
  if (result.ok) throw new Error('expected a problem');
  return describeProblem(result.problem);
}

describe('parseMultivariateCsv', () => {
  it("reads timestamp then one column per channel into the API's multivariate points", () => {
    const text = '\uFEFFtimestamp,temp,vibration.x\r\n2025-06-01T10:00:00Z,20.5,0.1\r\n\r\n2025-06-01 10:01,21,-2e-1\r\n';
    expect(parseMultivariateCsv(text, LIMITS)).toEqual({
      ok: true,
      series: {
        channels: ['temp', 'vibration.x'],
        points: [
          { timestamp: '2025-06-01T10:00:00.000Z', channels: { temp: 20.5, 'vibration.x': 0.1 } },
          { timestamp: '2025-06-01T10:01:00.000Z', channels: { temp: 21, 'vibration.x': -0.2 } },
        ],
        timestampsMs: [Date.UTC(2025, 5, 1, 10, 0), Date.UTC(2025, 5, 1, 10, 1)],
      },
    });
  });

  it('says which line, which column and what is wrong', () => {
    const head = 'timestamp,temp,rpm\n';
    const row = (i: number, temp = '20', rpm = '1500') => `2025-06-01T10:0${i}:00Z,${temp},${rpm}\n`;
    expect(problemOf(parseMultivariateCsv('time,temp,rpm\n', LIMITS))).toBe(
      'Line 1, column 1: a file of several channels starts with a header "timestamp,<channel>,<channel>,..."; the first column is "time"',
    );
    expect(problemOf(parseMultivariateCsv('timestamp,temp,9rpm\n', LIMITS))).toBe(
      'Line 1, column 3: "9rpm" is not a channel name (a letter or _ first, then up to 63 of A-Z a-z 0-9 _ . : -)',
    );
    expect(problemOf(parseMultivariateCsv('timestamp,temp,temp\n', LIMITS))).toBe('Line 1, column 3: channel "temp" repeats column 2');
    expect(problemOf(parseMultivariateCsv(`timestamp,${Array.from({ length: 17 }, (_, i) => `c${i}`).join(',')}\n`, LIMITS))).toBe(
      'Line 1: 17 channels; a machine has at most 16',
    );
    expect(problemOf(parseMultivariateCsv(head + row(0) + row(1, 'hot'), LIMITS))).toBe('Line 3, column 2 (temp): "hot" is not a number');
    expect(problemOf(parseMultivariateCsv(head + row(0) + row(1, '20', ''), LIMITS))).toBe(
      'Line 3, column 3 (rpm): the value is empty (every row needs every channel)',
    );
    expect(problemOf(parseMultivariateCsv(`${head + row(0)}2025-06-01T10:01:00Z,20\n`, LIMITS))).toBe('Line 3: 2 columns where the header (line 1) has 3');
    expect(problemOf(parseMultivariateCsv(head + row(1) + row(0), LIMITS))).toBe(
      "Line 3, column 1 (timestamp): 2025-06-01T10:00:00Z is earlier than line 2's; timestamps must ascend",
    );
    expect(problemOf(parseMultivariateCsv(`${head}yesterday,1,2\n`, LIMITS))).toBe(
      'Line 2, column 1 (timestamp): "yesterday" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)',
    );
    expect(problemOf(parseMultivariateCsv(head + row(0) + row(1) + row(2) + row(3), LIMITS))).toBe(
      'Line 5: more than 3 data rows; the API takes at most 3 points',
    );
    expect(problemOf(parseMultivariateCsv(head + row(0), LIMITS))).toBe('The file has 1 data row; at least 2 are needed');
    expect(problemOf(parseMultivariateCsv('\n\n', LIMITS))).toBe('The file is empty');
  });

  it('tells a multivariate file from a univariate one by its column count', () => {
    expect(looksMultivariate('\n timestamp,temp,rpm\n')).toBe(true);
    expect(looksMultivariate('timestamp,value\n2025-06-01T10:00:00Z,1\n')).toBe(false);
    expect(looksMultivariate('1\n2\n')).toBe(false);
  });
});
