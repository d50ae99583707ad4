import { describe, expect, it } from 'vitest';
import { csvLines, describeCsvProblem, readChannelsCsv, type ChannelsCsvResult } from '../src/index.js';

const parseTimestamp = (text: string): number | null => (/^\d{4}-\d{2}-\d{2}T/.test(text) ? Date.parse(text) : null);

function read(text: string, options: { maxRows?: number; maxChannels?: number } = {}): ChannelsCsvResult {
  const lines = csvLines(text);
  return readChannelsCsv(lines, lines.findIndex((line) => line.trim() !== ''), { parseTimestamp, ...options });
}

function problemOf(result: ChannelsCsvResult): string {
  if (result.ok) throw new Error('expected a problem');
  return describeCsvProblem(result.problem);
}

describe('readChannelsCsv', () => {
  it('reads a header of channels, then a timestamp and every reading a row, keeping the timestamps as written', () => {
    const result = read('\uFEFF\r\ntimestamp,temp,"__proto__"\r\n2025-06-01T10:00:00Z,20.5,"1"\r\n\r\n2025-06-01T10:01:00Z,-2e-1,+3\r\n');
    expect(result).toEqual({
      ok: true,
      channels: ['temp', '__proto__'],
      rows: [
        { timestamp: '2025-06-01T10:00:00Z', timestampMs: Date.UTC(2025, 5, 1, 10, 0), channels: JSON.parse('{"temp":20.5,"__proto__":1}') },
        { timestamp: '2025-06-01T10:01:00Z', timestampMs: Date.UTC(2025, 5, 1, 10, 1), channels: JSON.parse('{"temp":-0.2,"__proto__":3}') },
      ],
    });
  });

  it('names the line, the column and what is wrong', () => {
    const head = 'timestamp,temp,rpm\n';
    const row = (i: number, temp = '20', rpm = '1500') => `2025-06-01T10:0${i}:00Z,${temp},${rpm}\n`;
    const cases: [string, string, { maxRows?: number; maxChannels?: number }?][] = [
      ['time,temp,rpm\n', 'Line 1, column 1: a file of several channels starts with a header "timestamp,<channel>,<channel>,..."; the first column is "time"'],
      ['timestamp,temp,9rpm\n', 'Line 1, column 3: "9rpm" is not a channel name (a letter or _ first, then up to 63 of A-Z a-z 0-9 _ . : -)'],
      ['timestamp,temp,\n', 'Line 1, column 3: the channel name is empty'],
      ['timestamp,temp,temp\n', 'Line 1, column 3: channel "temp" repeats column 2'],
      ['timestamp,a,b,c\n', 'Line 1: 3 channels; a machine has at most 2', { maxChannels: 2 }],
      [head + row(0) + row(1, 'hot'), 'Line 3, column 2 (temp): "hot" is not a number'],
      [head + row(0) + row(1, '2e100'), 'Line 3, column 2 (temp): 2e100 is beyond ±1e100'],
      [head + row(0) + row(1, '20', ''), 'Line 3, column 3 (rpm): the value is empty (every row needs every channel)'],
      [`${head + row(0)}2025-06-01T10:01:00Z,20\n`, 'Line 3: 2 columns where the header (line 1) has 3'],
      [head + row(1) + row(0), "Line 3, column 1 (timestamp): 2025-06-01T10:00:00Z is earlier than line 2's; timestamps must ascend"],
      [head + row(1) + row(1), "Line 3, column 1 (timestamp): 2025-06-01T10:01:00Z repeats line 2's timestamp"],
      [`${head},1,2\n`, 'Line 2, column 1 (timestamp): the timestamp is empty'],
      [`${head}yesterday,1,2\n`, 'Line 2, column 1 (timestamp): "yesterday" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)'],
      [head + row(0) + row(1) + row(2), 'Line 4: more than 2 data rows; the API takes at most 2 points', { maxRows: 2 }],
    ];
    for (const [text, message, options] of cases) expect(problemOf(read(text, options)), text).toBe(message);
  });
});
