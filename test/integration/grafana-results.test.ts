// The compose deployment's "ADP results" Grafana dashboard (infra/grafana/dashboards/results.json)
// run against the real ClickHouse: every panel's SQL and both template variables' queries, with
// Grafana's variables expanded as Grafana expands them, over rows the result store wrote. Each
// panel's answer is checked against the same figures computed here from the rows, so a renamed
// column, a function the server lacks (18.16 here, a current release in compose) or a filter that
// drops or double-counts points fails the test. A panel this file does not know fails it too.
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { readFileSync } from 'node:fs';
import type { ResultRow, ResultStore } from '@adp/streaming';
import { createClickHouseResultStore } from '@adp/store';
import { resultRow } from '@adp/streaming/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');

interface GrafanaTarget {
  readonly rawSql?: string;
}
interface GrafanaPanel {
  readonly title: string;
  readonly targets?: readonly GrafanaTarget[];
}
interface GrafanaVariable {
  readonly name: string;
  readonly query: string;
  readonly multi?: boolean;
  readonly includeAll?: boolean;
}
interface Dashboard {
  readonly panels: readonly GrafanaPanel[];
  readonly templating: { readonly list: readonly GrafanaVariable[] };
}

const dashboard = JSON.parse(
  readFileSync(new URL('../../infra/grafana/dashboards/results.json', import.meta.url), 'utf8'),
) as Dashboard;

/** What Grafana puts in place of the variables a query uses. */
interface Variables {
  readonly org: string;
  readonly machines: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  readonly intervalMs: number;
}

/**
 * Grafana's interpolation of the forms the dashboard uses (`${org}`, `${machine:singlequote}`,
 * `$__from`, `$__to`, `$__interval_ms`), and the dashboard's database `adp` replaced by the test's
 * own. Anything else that looks like a variable is an error: a new macro needs a test here.
 */
function expand(sql: string, database: string, v: Partial<Variables>): string {
  const need = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`the query uses ${name}, which this test does not set`);
    return value;
  };
  const out = sql
    .replaceAll('${machine:singlequote}', () =>
      need(v.machines, '${machine}')
        .map((m) => `'${m.replaceAll("'", "\\'")}'`)
        .join(','),
    )
    .replaceAll('${org}', () => need(v.org, '${org}'))
    .replaceAll('$__from', () => String(need(v.fromMs, '$__from')))
    .replaceAll('$__to', () => String(need(v.toMs, '$__to')))
    .replaceAll('$__interval_ms', () => String(need(v.intervalMs, '$__interval_ms')))
    .replace(/\badp\.results\b/g, `${database}.results`);
  const left = /\$\{?[A-Za-z_][\w:]*\}?/.exec(out);
  if (left) throw new Error(`unexpanded Grafana variable ${left[0]} in:\n${sql}`);
  if (/\badp\./.test(out)) throw new Error(`the query reads a table other than adp.results:\n${sql}`);
  return out;
}

const MINUTE = 60_000;
/** 23:50 UTC: the rows cross midnight, so the day-range pruning must span two days. */
const T0 = Date.UTC(2026, 10, 21, 23, 50);

const REGIMES_M1 = (i: number): ResultRow['regime'] =>
  i < 50 ? 'HEALTHY' : i < 100 ? 'ACTIVE' : i < 110 ? 'SHOCK' : 'TRANSITION';

/** The rows as first written, then a replay of m1's first 20 points that flags its 6th. */
function writes(): { first: ResultRow[]; replay: ResultRow[] } {
  const first: ResultRow[] = [];
  for (let i = 0; i < 150; i++) {
    first.push(
      resultRow({
        orgId: 'org_a',
        machineId: 'm1',
        tsMs: T0 + i * 10_000,
        value: i,
        expectedValue: i - 0.5,
        upperMargin: 2,
        lowerMargin: 1.5,
        isAnomaly: i === 30 || i === 31 || i === 100,
        isPositiveAnomaly: i === 30 || i === 31 || i === 100,
        severity: i === 30 || i === 31 || i === 100 ? 0.25 + i / 1024 : 0,
        energy: i < 20 ? null : i / 8,
        // Distinct |z| within any bucket, signs mixed: the extreme is unambiguous. Fractions are
        // binary (i / 1024, i / 8): 18.16 parses some decimal ones to a neighbouring double.
        zScore: ((i * 37) % 11) - 5 + i / 1024,
        regime: REGIMES_M1(i),
        modelVersion: 'engine-0.11.0',
      }),
    );
  }
  for (let i = 0; i < 90; i++) {
    first.push(
      resultRow({
        orgId: 'org_a',
        machineId: 'm2',
        tsMs: T0 + 5 * MINUTE + i * 20_000,
        value: 100 + i,
        isAnomaly: i === 45,
        isNegativeAnomaly: i === 45,
        severity: i === 45 ? 0.9 : 0,
        zScore: i === 45 ? -9 : i % 3 === 0 ? null : 0.5 + i / 1024,
        regime: i < 10 ? 'UNKNOWN' : 'HEALTHY',
        modelVersion: 'engine-0.11.0',
      }),
    );
  }
  // Another organization at the same machine ids and times: never counted for org_a.
  for (let i = 0; i < 40; i++) {
    first.push(resultRow({ orgId: 'org_b', machineId: 'm1', tsMs: T0 + i * 10_000, isAnomaly: true, regime: 'SHOCK', energy: 50 }));
  }
  const replay = first
    .slice(0, 20)
    .map((row, i) => ({ ...row, writtenAtMs: 5, ...(i === 5 ? { isAnomaly: true, isPositiveAnomaly: true, severity: 0.6 } : {}) }));
  return { first, replay };
}

/** The rows a FINAL read sees: one per (org, machine, timestamp), the latest write. */
function finalRows(all: readonly ResultRow[]): ResultRow[] {
  const byKey = new Map<string, ResultRow>();
  for (const row of all) {
    const key = `${row.orgId}\u0000${row.machineId}\u0000${row.tsMs}`;
    const held = byKey.get(key);
    if (held === undefined || row.writtenAtMs >= held.writtenAtMs) byKey.set(key, row);
  }
  return [...byKey.values()];
}

/** ClickHouse's JSON rendering of DateTime in UTC: `YYYY-MM-DD hh:mm:ss`. */
const dateTime = (ms: number): string => new Date(ms - (ms % 1000)).toISOString().replace('T', ' ').slice(0, 19);

function groupCount<K>(rows: readonly ResultRow[], key: (r: ResultRow) => K): Map<K, ResultRow[]> {
  const groups = new Map<K, ResultRow[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k);
    if (list) list.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const byTime = (a: { time: string }, b: { time: string }): number => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0);

/** Each panel's answer, computed from the rows the panel's filter selects. */
const EXPECTED: Record<string, (rows: readonly ResultRow[], v: Variables) => unknown[]> = {
  Totals: (rows) => {
    const anomalies = rows.filter((r) => r.isAnomaly).length;
    return [
      {
        points: rows.length,
        anomalies,
        anomaly_percent: round2((100 * anomalies) / Math.max(rows.length, 1)),
        machines: new Set(rows.map((r) => r.machineId)).size,
      },
    ];
  },
  'Points per minute': (rows, v) => {
    const bucket = Math.max(v.intervalMs, MINUTE);
    return [...groupCount(rows, (r) => Math.floor(r.tsMs / bucket) * bucket)]
      .map(([start, group]) => ({ time: dateTime(start), points_per_minute: (group.length * MINUTE) / bucket }))
      .sort(byTime);
  },
  'Anomalies per machine': (rows) =>
    [...groupCount(rows, (r) => r.machineId)]
      .map(([machine_id, group]) => ({ machine_id, anomalies: group.filter((r) => r.isAnomaly).length }))
      .sort((a, b) => b.anomalies - a.anomalies || (a.machine_id < b.machine_id ? -1 : 1))
      .slice(0, 25),
  Energy: (rows, v) => {
    const bucket = Math.max(v.intervalMs, 1000);
    return [...groupCount(rows.filter((r) => r.energy !== null), (r) => `${Math.floor(r.tsMs / bucket) * bucket} ${r.machineId}`)].map(
      ([, group]) => ({
        time: dateTime(Math.floor(group[0]!.tsMs / bucket) * bucket),
        machine_id: group[0]!.machineId,
        max_energy: Math.max(...group.map((r) => r.energy!)),
      }),
    );
  },
  'Z-score': (rows, v) => {
    const bucket = Math.max(v.intervalMs, 1000);
    return [...groupCount(rows.filter((r) => r.zScore !== null), (r) => `${Math.floor(r.tsMs / bucket) * bucket} ${r.machineId}`)].map(
      ([, group]) => ({
        time: dateTime(Math.floor(group[0]!.tsMs / bucket) * bucket),
        machine_id: group[0]!.machineId,
        extreme_z_score: group.reduce((best, r) => (Math.abs(r.zScore!) > Math.abs(best) ? r.zScore! : best), 0),
      }),
    );
  },
  'Regime counts': (rows) =>
    [...groupCount(rows, (r) => r.regime)]
      .map(([regime, group]) => ({ regime, points: group.length }))
      .sort((a, b) => (a.regime < b.regime ? -1 : 1)),
  'Regimes over time': (rows, v) => {
    const bucket = Math.max(v.intervalMs, MINUTE);
    return [...groupCount(rows, (r) => `${Math.floor(r.tsMs / bucket) * bucket} ${r.regime}`)].map(([, group]) => ({
      time: dateTime(Math.floor(group[0]!.tsMs / bucket) * bucket),
      regime: group[0]!.regime,
      points: group.length,
    }));
  },
  'Latest anomalies': (rows) =>
    rows
      .filter((r) => r.isAnomaly)
      .sort((a, b) => b.tsMs - a.tsMs)
      .slice(0, 100)
      .map((r) => ({
        time: dateTime(r.tsMs),
        machine_id: r.machineId,
        value: r.value,
        expected_value: r.expectedValue,
        lower_margin: r.lowerMargin,
        upper_margin: r.upperMargin,
        severity: r.severity,
        energy: r.energy,
        z_score: r.zScore,
        regime: r.regime,
        model_version: r.modelVersion,
        ts_ms: r.tsMs,
      })),
};

/** Panels whose rows come in an order the SQL does not fix completely (ties in ORDER BY time). */
const UNORDERED = new Set(['Energy', 'Z-score', 'Regimes over time']);
const canonical = (rows: unknown[]): unknown[] => [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

const panelQueries = dashboard.panels.flatMap((panel) =>
  (panel.targets ?? []).flatMap((target) => (target.rawSql ? [{ title: panel.title, sql: target.rawSql }] : [])),
);

describe('the results dashboard file', () => {
  it('has a computed answer in this test for every panel that queries ClickHouse', () => {
    expect(panelQueries.map((q) => q.title).sort()).toEqual(Object.keys(EXPECTED).sort());
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['org', 'machine']);
  });
});

describe.skipIf(!gate.run)(gateTitle('clickhouse', gate), () => {
  let client: ClickHouseClient;
  let store: ResultStore;
  let database: string;
  const { first, replay } = writes();
  const stored = finalRows([...first, ...replay]);

  beforeAll(async () => {
    database = isolatedName('it_grafana');
    store = await createClickHouseResultStore({ url: gate.address.value, database });
    await store.insert(first);
    await store.insert(replay);
    // 64-bit integers as JSON numbers, as the Grafana plugin reads them (18.16 quotes them by default).
    client = createClient({ url: gate.address.value, clickhouse_settings: { output_format_json_quote_64bit_integers: 0 } });
  });

  afterAll(async () => {
    await client?.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await client?.close();
    await store?.close();
  });

  async function rows(sql: string): Promise<Record<string, unknown>[]> {
    return (await client.query({ query: sql, format: 'JSONEachRow' })).json<Record<string, unknown>>();
  }

  const variable = (name: string): GrafanaVariable => dashboard.templating.list.find((v) => v.name === name)!;

  it('offers the organizations, and for one of them its machines ("All" is every one)', async () => {
    const orgs = await rows(expand(variable('org').query, database, {}));
    expect(orgs).toEqual([{ org_id: 'org_a' }, { org_id: 'org_b' }]);
    const machines = await rows(expand(variable('machine').query, database, { org: 'org_a' }));
    expect(machines).toEqual([{ machine_id: 'm1' }, { machine_id: 'm2' }]);
    expect(variable('machine')).toMatchObject({ multi: true, includeAll: true });
  });

  const ranges: { name: string; v: Variables }[] = [
    {
      name: 'every machine, the whole range across midnight, 1-minute interval',
      v: { org: 'org_a', machines: ['m1', 'm2'], fromMs: T0, toMs: T0 + 40 * MINUTE, intervalMs: MINUTE },
    },
    {
      name: 'one machine, 7 to 20 minutes in, 20-second interval',
      v: { org: 'org_a', machines: ['m2'], fromMs: T0 + 7 * MINUTE, toMs: T0 + 20 * MINUTE, intervalMs: 20_000 },
    },
    {
      name: 'm1 only, before midnight, a 500 ms interval (buckets of at least a second)',
      v: { org: 'org_a', machines: ['m1'], fromMs: T0, toMs: T0 + 10 * MINUTE, intervalMs: 500 },
    },
  ];

  for (const { name, v } of ranges) {
    describe(name, () => {
      const selected = stored.filter(
        (r) => r.orgId === v.org && v.machines.includes(r.machineId) && r.tsMs >= v.fromMs && r.tsMs < v.toMs,
      );

      it('selects rows of both days and of the replay (fixture check)', () => {
        expect(selected.length).toBeGreaterThan(20);
      });

      for (const { title, sql } of panelQueries) {
        it(`panel "${title}" answers the figures of the stored rows`, async () => {
          const answer = await rows(expand(sql, database, v));
          const expected = EXPECTED[title]!(selected, v);
          if (UNORDERED.has(title)) {
            expect(canonical(answer)).toEqual(canonical(expected));
            // Still ascending by time, as the time series panel needs.
            const times = answer.map((r) => String(r.time));
            expect(times).toEqual([...times].sort());
          } else {
            expect(answer).toEqual(expected);
          }
        });
      }
    });
  }

  it('counts a replayed point once, with its latest judgement', async () => {
    const totals = panelQueries.find((q) => q.title === 'Totals')!;
    const [answer] = await rows(
      expand(totals.sql, database, { org: 'org_a', machines: ['m1'], fromMs: T0, toMs: T0 + 20 * 10_000, intervalMs: MINUTE }),
    );
    // 20 points written twice; the replay flagged the 6th.
    expect(answer).toEqual({ points: 20, anomalies: 1, anomaly_percent: 5, machines: 1 });
  });
});
