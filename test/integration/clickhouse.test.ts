// Smoke test of @clickhouse/client against the real ClickHouse from infra/clickhouse.sh: 18.16 from
// Debian's packages here, a current release in docker-compose. So the DDL and SQL stay inside what
// both accept: DateTime (no DateTime64) with a separate millisecond column, or Int64 epoch
// milliseconds; values travel as JSONEachRow bodies, never as server-side `{name:Type}` parameters
// (18.16 has none); identifiers are generated and checked before they go into SQL.
//
// Each test creates its own database and drops it afterwards.
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');

/** Guards every identifier interpolated into SQL: generated names only, never input. */
function identifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a safe ClickHouse identifier: ${name}`);
  return name;
}

/**
 * The server's numeric error code. Current releases answer `Code: 81. DB::Exception: ... (TYPE)`,
 * which the client parses into a ClickHouseError with `code`; 18.16 answers
 * `Code: 81, e.displayText() = ...` with no type, which the client passes on as a plain Error, so the
 * code is only in the text.
 */
function serverErrorCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^\d+$/.test(code)) return code;
  return /^Code: (\d+)[.,]/.exec(error.message)?.[1];
}

const MACHINES = ['m1', 'm2', 'm3'] as const;
const POINTS_PER_MACHINE = 50;
const START_S = Date.UTC(2024, 0, 1) / 1000;

interface StoredResult {
  machine_id: string;
  ts_s: number;
  ts_ms: number;
  value: number;
  is_anomaly: number;
  written_at_ms: string;
}

interface StoredPoint {
  ts_ms: number;
  value: number;
  tags: string[];
  severity: number | null;
  day: string;
}

describe.skipIf(!gate.run)(gateTitle('clickhouse', gate), () => {
  let client: ClickHouseClient;
  let database: string;

  beforeEach(async () => {
    client = createClient({ url: gate.address.value, request_timeout: 30_000 });
    database = identifier(isolatedName('it_ch'));
    await client.command({ query: `CREATE DATABASE ${database}` });
  });

  afterEach(async () => {
    await client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await client.close();
  });

  it('answers SELECT version() over HTTP', async () => {
    const rows = await (await client.query({ query: 'SELECT version() AS version', format: 'JSONEachRow' })).json<{
      version: string;
    }>();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.version).toMatch(/^\d+\.\d+/);
  });

  it('ReplacingMergeTree on (org, machine, DateTime, ms): a replayed batch reads back once with FINAL', async () => {
    const table = `${database}.${identifier('results')}`;
    await client.command({
      query: `
        CREATE TABLE ${table} (
          org_id String,
          machine_id String,
          ts DateTime,
          ts_ms UInt16,
          value Float64,
          is_anomaly UInt8,
          written_at_ms UInt64
        )
        ENGINE = ReplacingMergeTree(written_at_ms)
        PARTITION BY toYYYYMM(ts)
        ORDER BY (org_id, machine_id, ts, ts_ms)`,
    });

    const rows = MACHINES.flatMap((machineId, m) =>
      Array.from({ length: POINTS_PER_MACHINE }, (_, i) => ({
        org_id: 'org_a',
        machine_id: machineId,
        ts: START_S + i, // DateTime accepts epoch seconds in JSONEachRow
        ts_ms: (i * 7) % 1000,
        value: m * 1000 + i,
        is_anomaly: i === 10 ? 1 : 0,
        written_at_ms: 1,
      })),
    );
    await client.insert({ table, values: rows, format: 'JSONEachRow' });
    // A replay after a crash: the same points again, one of them now judged differently and
    // written later. FINAL must show each key once, with the later row.
    const replay = rows.map((row) => {
      const rejudged = row.machine_id === 'm2' && row.ts === START_S + 3;
      return { ...row, is_anomaly: rejudged ? 1 : row.is_anomaly, written_at_ms: 2 };
    });
    await client.insert({ table, values: replay, format: 'JSONEachRow' });

    const stored = await (
      await client.query({
        query: `SELECT machine_id, toUnixTimestamp(ts) AS ts_s, ts_ms, value, is_anomaly, written_at_ms
                FROM ${table} FINAL ORDER BY machine_id, ts, ts_ms`,
        format: 'JSONEachRow',
      })
    ).json<StoredResult>();

    expect(stored).toHaveLength(MACHINES.length * POINTS_PER_MACHINE);
    expect(new Set(stored.map((row) => row.written_at_ms))).toEqual(new Set(['2'])); // UInt64 comes quoted
    expect(stored[0]).toEqual({
      machine_id: 'm1',
      ts_s: START_S,
      ts_ms: 0,
      value: 0,
      is_anomaly: 0,
      written_at_ms: '2',
    });
    const anomalies = stored.filter((row) => row.is_anomaly === 1);
    expect(anomalies.map((row) => `${row.machine_id}@${row.ts_s - START_S}`)).toEqual([
      'm1@10',
      'm2@3',
      'm2@10',
      'm3@10',
    ]);
  });

  it('Int64 epoch ms, MATERIALIZED Date partition: a partial replay reads back once, ranges by ms', async () => {
    const table = `${database}.${identifier('points')}`;
    await client.command({
      query: `
        CREATE TABLE ${table} (
          org_id String,
          machine_id String,
          ts_ms Int64,
          day Date MATERIALIZED toDate(intDiv(ts_ms, 1000)),
          value Float64,
          tags Array(String),
          severity Nullable(Float64),
          version UInt32
        )
        ENGINE = ReplacingMergeTree(version)
        PARTITION BY toYYYYMM(day)
        ORDER BY (org_id, machine_id, ts_ms)`,
    });
    const startMs = Date.UTC(2024, 4, 31, 23, 59, 59, 900); // crosses a month: two partitions
    const rows = Array.from({ length: 20 }, (_, i) => ({
      org_id: 'org_b',
      machine_id: 'pump_7',
      ts_ms: startMs + i * 25,
      value: i / 4,
      tags: i % 2 === 0 ? ['even'] : [],
      severity: i === 5 ? 0.9 : null,
      version: 1,
    }));
    await client.insert({ table, values: rows, format: 'JSONEachRow' });
    await client.insert({ table, values: rows.slice(0, 10), format: 'JSONEachRow' });

    const fromMs = startMs + 100;
    const toMs = startMs + 300;
    // Values in SQL are numbers we computed and formatted ourselves, never text from a request.
    const stored = await (
      await client.query({
        query: `SELECT ts_ms, value, tags, severity, toString(day) AS day FROM ${table} FINAL
                WHERE org_id = 'org_b' AND machine_id = 'pump_7'
                  AND ts_ms >= ${Math.trunc(fromMs)} AND ts_ms < ${Math.trunc(toMs)}
                ORDER BY ts_ms`,
        format: 'JSONEachRow',
        // 18.16 and current releases both quote 64-bit integers in JSON by default; this asks for
        // plain numbers, safe for epoch milliseconds (< 2^53).
        clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
      })
    ).json<StoredPoint>();

    expect(stored.map((row) => row.ts_ms)).toEqual(Array.from({ length: 8 }, (_, i) => fromMs + i * 25));
    expect(stored[0]).toEqual({ ts_ms: fromMs, value: 1, tags: ['even'], severity: null, day: '2024-06-01' });
    expect(stored.filter((row) => row.severity !== null)).toEqual([
      { ts_ms: fromMs + 25, value: 1.25, tags: [], severity: 0.9, day: '2024-06-01' },
    ]);

    const total = await (
      await client.query({
        query: `SELECT count() AS n, uniqExact(day) AS days FROM ${table} FINAL`,
        format: 'JSONEachRow',
      })
    ).json<{ n: string; days: string }>();
    expect(total).toEqual([{ n: '20', days: '2' }]);
  });

  it('a server error rejects with the numeric code recoverable on every server version', async () => {
    const missing = identifier(isolatedName('it_missing'));
    // Its own client with logging off: the client logs every failed request at ERROR, and this
    // failure is the expected outcome.
    const quiet = createClient({ url: gate.address.value, log: { level: ClickHouseLogLevel.OFF } });
    const error: unknown = await quiet
      .query({ query: `SELECT 1 FROM ${missing}.nothing`, format: 'JSONEachRow' })
      .then(() => undefined, (rejected: unknown) => rejected)
      .finally(() => quiet.close());
    expect(error).toBeInstanceOf(Error);
    expect(serverErrorCode(error)).toBe('81'); // UNKNOWN_DATABASE
  });
});
