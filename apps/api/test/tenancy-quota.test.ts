// Plans and the free tier: a free organization gets FREE_TIER_POINTS_PER_MONTH data points a
// calendar month (UTC) on live keys, then metered calls answer 403 (the gateway's shape on vendor
// paths, ours elsewhere) saying when the quota renews; test keys are never counted or refused; paid
// organizations have no quota; the count lives in the store. Also: GET /v1/usage?kind=.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { dailySeries } from './fixtures/vendor/harness.js';
import { ADMIN_TOKEN, call, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';
const DETECT_BODY = { series: dailySeries(20), granularity: 'daily' };
const QUOTA = 50;
const MARCH = Date.parse('2026-03-15T12:00:00.000Z');
const APRIL_FIRST = '2026-04-01T00:00:00.000Z';
const MESSAGE = (renews: string) =>
  `This organization has used its free plan's ${QUOTA} data points for this month (UTC). ` +
  `The quota renews at ${renews}. Test keys are not counted; a paid plan has no quota.`;

describe('plans and the free tier', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let live: string;
  let test: string;

  beforeEach(async () => {
    env = await tenancyEnvironment(MARCH);
    app = await env.start({ FREE_TIER_POINTS_PER_MONTH: String(QUOTA) });
    const created = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Free Co', plan: 'free' });
    const keys = created.json<{ keys: { kind: string; key: string }[] }>().keys;
    live = keys.find((key) => key.kind === 'live')?.key ?? '';
    test = keys.find((key) => key.kind === 'test')?.key ?? '';
  });
  afterEach(async () => {
    await env.cleanup();
  });

  const detect = (key: string, on: FastifyInstance = app) => call(on, 'POST', ENTIRE, key, DETECT_BODY);

  it('serves live calls until the month’s points are used, then answers 403 in the vendor shape with the renewal date', async () => {
    // 20 + 20 + 20: the third call crosses the quota and is still served; the fourth is refused.
    for (let call = 0; call < 3; call++) expect((await detect(live)).statusCode).toBe(200);
    const refused = await detect(live);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['x-quota-renews-at']).toBe(APRIL_FIRST);
    expect(refused.json()).toEqual({ error: { code: '403', message: MESSAGE(APRIL_FIRST) } });
    // Refused calls are not counted.
    const usage = (await call(app, 'GET', '/v1/usage/summary?kind=live', live)).json<{ total_points: number; call_count: number }>();
    expect(usage).toMatchObject({ total_points: 60, call_count: 3 });
  });

  it('answers 403 QuotaExceeded in the native shape on native metered routes', async () => {
    for (let call = 0; call < 3; call++) expect((await detect(live)).statusCode).toBe(200);
    for (const [url, body] of [
      ['/v1/detect', { machine_id: 'pump-1', series: dailySeries(20) }],
      ['/v1/telemetry', { machine_id: 'pump-1', points: [{ timestamp: '2026-03-15T12:00:00Z', value: 1 }] }],
      ['/v1/baseline', { machine_id: 'pump-1', energies: Array.from({ length: 100 }, () => 1) }],
    ] as const) {
      const refused = await call(app, 'POST', url, live, body);
      expect(refused.statusCode, url).toBe(403);
      expect(refused.headers['x-quota-renews-at']).toBe(APRIL_FIRST);
      expect(refused.json()).toEqual({ error: { code: 'QuotaExceeded', message: MESSAGE(APRIL_FIRST) } });
    }
    // Reads are not metered.
    expect((await call(app, 'GET', '/v1/machines', live)).statusCode).toBe(200);
  });

  it('never counts or refuses test keys; /v1/usage reports each kind with ?kind=', async () => {
    for (let call = 0; call < 4; call++) expect((await detect(test)).statusCode).toBe(200);
    for (let call = 0; call < 3; call++) expect((await detect(live)).statusCode).toBe(200);
    expect((await detect(live)).statusCode).toBe(403);
    expect((await detect(test)).statusCode).toBe(200);

    const totals = async (query: string) => (await call(app, 'GET', `/v1/usage/summary${query}`, live)).json<{ total_points: number; call_count: number }>();
    expect(await totals('?kind=live')).toMatchObject({ total_points: 60, call_count: 3 });
    expect(await totals('?kind=test')).toMatchObject({ total_points: 100, call_count: 5 });
    expect(await totals('')).toMatchObject({ total_points: 160, call_count: 8 });
    // The seed's array of per-endpoint records takes the same filter.
    const records = async (query: string) =>
      (await call(app, 'GET', `/v1/usage${query}`, live)).json<{ total_points: number; call_count: number }[]>();
    const summed = (rows: { total_points: number; call_count: number }[]) =>
      rows.reduce((sum, row) => ({ total_points: sum.total_points + row.total_points, call_count: sum.call_count + row.call_count }), { total_points: 0, call_count: 0 });
    expect(summed(await records('?kind=live'))).toEqual({ total_points: 60, call_count: 3 });
    expect(summed(await records('?kind=test'))).toEqual({ total_points: 100, call_count: 5 });
    const bad = await call(app, 'GET', '/v1/usage?kind=gold', live);
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: { code: string } }>().error.code).toBe('BadRequest');
  });

  it('renews on the first of the next month (UTC); the count is in the store, so every replica and restart sees it', async () => {
    for (let call = 0; call < 3; call++) expect((await detect(live)).statusCode).toBe(200);
    const replica = await env.start({ FREE_TIER_POINTS_PER_MONTH: String(QUOTA) });
    expect((await detect(live, replica)).statusCode).toBe(403);

    env.nowMs = Date.parse(APRIL_FIRST) - 1;
    expect((await detect(live)).statusCode).toBe(403);
    env.nowMs = Date.parse(APRIL_FIRST);
    expect((await detect(live)).statusCode).toBe(200);
    expect((await detect(live, replica)).statusCode).toBe(200);
    expect((await detect(live)).statusCode).toBe(200);
    const refused = await detect(live);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['x-quota-renews-at']).toBe('2026-05-01T00:00:00.000Z');
  });

  it('a December quota renews on the first of January', async () => {
    env.nowMs = Date.parse('2026-12-31T23:59:59.000Z');
    for (let call = 0; call < 3; call++) expect((await detect(live)).statusCode).toBe(200);
    const refused = await detect(live);
    expect(refused.json()).toEqual({ error: { code: '403', message: MESSAGE('2027-01-01T00:00:00.000Z') } });
  });

  it('paid organizations, the default one included, have no quota', async () => {
    const defaultLive = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.key ?? '';
    for (let call = 0; call < 4; call++) expect((await detect(defaultLive)).statusCode).toBe(200);
    const paid = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Paid Co', plan: 'paid' });
    const paidLive = paid.json<{ keys: { kind: string; key: string }[] }>().keys.find((key) => key.kind === 'live')?.key ?? '';
    for (let call = 0; call < 4; call++) expect((await detect(paidLive)).statusCode).toBe(200);
  });
});
