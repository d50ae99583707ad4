// Key management, disabling and the free tier in the scale-out configuration: two API replicas,
// each with its own ClickHouse store on one shared database, the key cache in Redis and the
// notifier on Redis pub/sub. A revocation, a rotation's end and a disabled organization are refused
// on the other replica within a second; the free tier's count is shared through ClickHouse. Each
// test has its own database, Redis key prefix and channel prefix.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../apps/api/src/app.js';
import { ADMIN_TOKEN, call, eventually } from '../../apps/api/test/tenancy-helpers.js';
import { dailySeries } from '../../apps/api/test/fixtures/vendor/harness.js';
import { scaleOut, type ScaleOut } from './scale-out.js';
import { gateTitle, serverGate } from './servers.js';

const clickhouseGate = await serverGate('clickhouse');
const redisGate = await serverGate('redis');
const gate = clickhouseGate.run ? redisGate : clickhouseGate;
const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';

describe.skipIf(!gate.run)(gateTitle('API tenancy on ClickHouse and Redis', gate), () => {
  const clickhouseUrl = clickhouseGate.address.value;
  const redisUrl = redisGate.address.value;
  let shared: ScaleOut;
  let nowMs: number;
  const apps: FastifyInstance[] = [];

  beforeEach(async () => {
    shared = await scaleOut(clickhouseUrl, redisUrl);
    nowMs = Date.parse('2026-03-15T12:00:00.000Z');
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await shared.cleanup();
  });

  /** A replica: its own store and notifier on the shared database, Redis and channels. */
  async function replica(): Promise<FastifyInstance> {
    const store = await shared.openStore(() => new Date(nowMs));
    const notifier = await shared.notifier();
    const config = shared.config({
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      AUTH_CACHE_TTL_MS: '300000',
      FREE_TIER_POINTS_PER_MONTH: '50',
    });
    const app = await buildApp(config, { store, notifier, nowMs: () => nowMs });
    apps.push(app);
    return app;
  }

  async function freeOrganization(app: FastifyInstance): Promise<{ orgId: string; live: string; test: string; liveId: string }> {
    const response = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Free Co', plan: 'free' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json<{ org_id: string; keys: { kind: string; key: string; key_id: string }[] }>();
    const live = body.keys.find((key) => key.kind === 'live');
    return { orgId: body.org_id, live: live?.key ?? '', liveId: live?.key_id ?? '', test: body.keys.find((key) => key.kind === 'test')?.key ?? '' };
  }

  const usable = async (app: FastifyInstance, key: string) => (await call(app, 'GET', '/v1/usage', key)).statusCode === 200;

  it('a key revoked or rotated on one replica is refused on the other within a second', async () => {
    const first = await replica();
    const second = await replica();
    const org = await freeOrganization(first);
    const extra = (await call(first, 'POST', '/v1/keys', org.live, { kind: 'test', name: 'ci' })).json<{ key: string; key_id: string }>();
    expect(await usable(second, extra.key)).toBe(true);
    expect(await usable(second, org.live)).toBe(true);

    expect((await call(first, 'DELETE', `/v1/keys/${extra.key_id}`, org.live)).statusCode).toBe(200);
    await eventually(async () => !(await usable(second, extra.key)), 1_000);

    const rotated = await call(first, 'POST', `/v1/keys/${org.liveId}/rotate`, org.live, { grace_seconds: 30 });
    expect(rotated.statusCode).toBe(201);
    const successor = rotated.json<{ key: string }>().key;
    expect(await usable(second, org.live)).toBe(true);
    nowMs += 30_000;
    await eventually(async () => !(await usable(second, org.live)), 1_000);
    expect(await usable(second, successor)).toBe(true);
  });

  it('a disabled organization is refused on every replica within a second', async () => {
    const first = await replica();
    const second = await replica();
    const org = await freeOrganization(first);
    for (const key of [org.live, org.test]) expect(await usable(second, key)).toBe(true);
    expect((await call(first, 'POST', `/admin/v1/organizations/${org.orgId}/disable`, ADMIN_TOKEN)).statusCode).toBe(200);
    for (const key of [org.live, org.test]) await eventually(async () => !(await usable(second, key)), 1_000);
  });

  it('counts the free tier across replicas in ClickHouse; test keys are not counted', async () => {
    const first = await replica();
    const second = await replica();
    const org = await freeOrganization(first);
    const body = { series: dailySeries(20), granularity: 'daily' };
    expect((await call(first, 'POST', ENTIRE, org.live, body)).statusCode).toBe(200);
    expect((await call(second, 'POST', ENTIRE, org.live, body)).statusCode).toBe(200);
    expect((await call(second, 'POST', ENTIRE, org.test, body)).statusCode).toBe(200);
    expect((await call(first, 'POST', ENTIRE, org.live, body)).statusCode).toBe(200);
    const refused = await call(second, 'POST', ENTIRE, org.live, body);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['x-quota-renews-at']).toBe('2026-04-01T00:00:00.000Z');
    expect((await call(first, 'POST', ENTIRE, org.test, body)).statusCode).toBe(200);
    // Test-key calls are counted write-behind (docs/limits-and-guarantees.md): their usage lands a moment after the answer.
    const testPoints = async () => (await call(first, 'GET', '/v1/usage/summary?kind=test', org.live)).json<{ total_points: number }>().total_points;
    await eventually(async () => (await testPoints()) >= 40);
    expect(await testPoints()).toBe(40);
    // Every replica reports the count the refusal was decided on: three live calls, the third served in full.
    for (const app of [first, second]) {
      expect((await call(app, 'GET', '/v1/usage/summary', org.live)).json()).toMatchObject({
        plan: 'free',
        monthly_point_quota: 50,
        points_used_this_month: 60,
        points_remaining: 0,
        quota_renews_at: '2026-04-01T00:00:00.000Z',
      });
    }
  });
});
