// The RowBinary body of a results insert, byte by byte against the layout written out by hand,
// and the regime codes against the DDL's Enum8. (test/integration/worker-stores.test.ts inserts
// such bodies into the real server and reads every double back bit for bit.)
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REGIMES } from '@adp/streaming';
import { encodeResultRowsRowBinary, REGIME_ENUM_VALUES } from '../src/clickhouse/row-binary.js';
import { REGIME_NAMES } from '../src/types.js';
import { encodeJobResultsRowBinary } from '../src/clickhouse/clickhouse-jobs.js';
import { JUDGED_POINT_COLUMNS } from '../src/judged-point.js';
import { RESULT_COLUMNS } from '../src/result-rows.js';
import { resultRow } from '@adp/streaming/testing';

const le64 = (x: number): number[] => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return [...b];
};

describe('encodeResultRowsRowBinary', () => {
  it('writes each column in schema order: strings with LEB128 lengths, little-endian numbers, nullable flags, enum codes', () => {
    const row = resultRow({
      orgId: 'org',
      machineId: 'm-é',
      tsMs: 2 ** 32 + 5,
      value: 0.1,
      expectedValue: -2.5,
      upperMargin: 1,
      lowerMargin: 0.75,
      isAnomaly: true,
      isPositiveAnomaly: false,
      isNegativeAnomaly: true,
      severity: 0.5,
      energy: null,
      zScore: -3,
      regime: 'SHOCK',
      modelVersion: 'v'.repeat(130),
      writtenAtMs: 258,
    });
    const expected = [
      3, ...Buffer.from('org'),
      4, ...Buffer.from('m-é', 'utf8'), // é is two bytes
      5, 0, 0, 0, 1, 0, 0, 0, // 2^32 + 5 as Int64 LE
      ...le64(0.1), ...le64(-2.5), ...le64(1), ...le64(0.75),
      1, 0, 1,
      ...le64(0.5),
      1, // energy NULL: the flag alone
      0, ...le64(-3), // z-score present
      4, // SHOCK
      130 & 0x7f | 0x80, 1, ...Buffer.from('v'.repeat(130)), // 130 = 0b1_0000010: two LEB128 bytes
      2, 1, 0, 0, 0, 0, 0, 0, // 258
    ];
    expect([...encodeResultRowsRowBinary([row])]).toEqual(expected);
  });

  it('writes rows back to back, a repeated string each time in full', () => {
    const a = resultRow({ orgId: 'o', machineId: 'm', tsMs: 1, energy: 2 });
    const b = resultRow({ orgId: 'o', machineId: 'm', tsMs: 2 });
    const both = encodeResultRowsRowBinary([a, b]);
    expect(Buffer.compare(both, Buffer.concat([encodeResultRowsRowBinary([a]), encodeResultRowsRowBinary([b])]))).toBe(0);
    expect(encodeResultRowsRowBinary([])).toHaveLength(0);
  });

  it('gives each regime the value the DDL declares for it', () => {
    const ddl = readFileSync(new URL('../../../schemas/clickhouse/0001_results.sql', import.meta.url), 'utf8');
    const declared = Object.fromEntries([.../regime Enum8\(([^)]*)\)/.exec(ddl)![1]!.matchAll(/'(\w+)' = (\d+)/g)].map((m) => [m[1], Number(m[2])]));
    expect(REGIME_ENUM_VALUES).toEqual(declared);
    expect(Object.keys(REGIME_ENUM_VALUES).sort()).toEqual([...REGIMES].sort());
    // The Avro schema's enum lists them in the order of the platform's one list.
    expect([...REGIMES]).toEqual([...REGIME_NAMES]);
  });
});

describe('encodeJobResultsRowBinary', () => {
  it("writes job_results' columns in schema order: the id, series and point indices, a nullable timestamp, the judged point, the write time", () => {
    const point = {
      value: 7.25,
      expectedValue: 7,
      upperMargin: 0.5,
      lowerMargin: 0.25,
      isAnomaly: false,
      isPositiveAnomaly: true,
      isNegativeAnomaly: false,
      severity: 0.125,
    };
    const rows = [
      { seriesIndex: 2, pointIndex: 2 ** 32 + 1, tsMs: 1_000, ...point },
      { seriesIndex: 3, pointIndex: 0, tsMs: null, ...point },
    ];
    const judged = [...le64(7.25), ...le64(7), ...le64(0.5), ...le64(0.25), 0, 1, 0, ...le64(0.125)];
    const expected = [
      3, ...Buffer.from('job'),
      2, 0, 0, 0, // series 2 as UInt32 LE
      1, 0, 0, 0, 1, 0, 0, 0, // point 2^32 + 1 as Int64 LE
      0, 0xe8, 3, 0, 0, 0, 0, 0, 0, // ts 1000, present
      ...judged,
      9, 0, 0, 0, 0, 0, 0, 0, // written at 9
      3, ...Buffer.from('job'),
      3, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0,
      1, // ts NULL: the flag alone
      ...judged,
      9, 0, 0, 0, 0, 0, 0, 0,
    ];
    expect([...encodeJobResultsRowBinary('job', rows, 9)]).toEqual(expected);
  });
});

describe('the judged-point columns', () => {
  /** The `name Type` pairs of a CREATE TABLE, comments left out. */
  const declared = (file: string, table: string): [string, string][] => {
    const ddl = readFileSync(new URL(`../../../schemas/clickhouse/${file}`, import.meta.url), 'utf8');
    const body = new RegExp(`CREATE TABLE IF NOT EXISTS \\{database\\}\\.${table} \\(([\\s\\S]*?)\\n\\)`).exec(ddl)![1]!;
    return body
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('--'))
      .map((line) => line.replace(/,$/, '').split(' ').slice(0, 2) as [string, string])
      .filter(([, type]) => type !== 'Date');
  };
  const clickHouseType = { double: 'Float64', flag: 'UInt8' } as const;
  const judged = JUDGED_POINT_COLUMNS.map((column): [string, string] => [column.name, clickHouseType[column.type]]);

  it('are the ClickHouse results table\'s, in its order and types', () => {
    const columns = declared('0001_results.sql', 'results');
    expect(columns.map(([name]) => name)).toEqual(RESULT_COLUMNS);
    expect(columns.slice(3, 3 + judged.length)).toEqual(judged);
  });

  it("are the ClickHouse job_results table's, in its order and types", () => {
    expect(declared('0012_jobs.sql', 'job_results').slice(4, 4 + judged.length)).toEqual(judged);
  });
});
