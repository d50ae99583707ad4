// The ClickHouse adapter of usage per day against the real server: sums per (day, endpoint) across
// group-committed rows, the range, the kind filter, and other organizations left out.
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openClickHouseStore, type Store } from '@adp/store';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;
const admin = gate.run ? createClient({ url, log: { level: ClickHouseLogLevel.OFF } }) : undefined;
afterAll(async () => {
  await admin?.close();
});

describe.skipIf(!gate.run)(gateTitle('ClickHouse usage per day', gate), () => {
  let database = '';
  let store: Store;
  let nowMs = Date.parse('2026-03-14T23:59:59.000Z');

  beforeEach(async () => {
    database = isolatedName('usage_daily');
    store = await openClickHouseStore({ url, database, now: () => new Date(nowMs) });
  });
  afterEach(async () => {
    await store.close();
    await admin?.command({ query: `DROP DATABASE IF EXISTS ${database}` });
  });

  it('sums calls and points per day and endpoint in the range', async () => {
    nowMs = Date.parse('2026-03-14T23:59:59.000Z');
    await Promise.all([store.recordUsage('org_a', 'v1/detect', 10, 'live'), store.recordUsage('org_a', 'v1/detect', 5, 'test'), store.recordUsage('org_b', 'v1/detect', 99, 'live')]);
    nowMs = Date.parse('2026-03-15T00:00:00.000Z');
    await Promise.all([store.recordUsage('org_a', 'entire/detect', 12, 'live'), store.recordUsage('org_a', 'v1/detect', 3, 'live')]);
    const daily = store.dailyUsage;
    if (!daily) throw new Error('no daily usage');
    expect(await daily.usageByDay('org_a', { fromDay: '2026-03-01', toDay: '2026-03-31' })).toEqual([
      { day: '2026-03-14', endpoint: 'v1/detect', points: 15, calls: 2 },
      { day: '2026-03-15', endpoint: 'entire/detect', points: 12, calls: 1 },
      { day: '2026-03-15', endpoint: 'v1/detect', points: 3, calls: 1 },
    ]);
    expect(await daily.usageByDay('org_a', { fromDay: '2026-03-14', toDay: '2026-03-14', keyKind: 'test' })).toEqual([
      { day: '2026-03-14', endpoint: 'v1/detect', points: 5, calls: 1 },
    ]);
    expect(await daily.usageByDay('org_a', { fromDay: '2026-03-16', toDay: '2026-03-20' })).toEqual([]);
  });
});
