// GET /v1/usage/summary reports the organization's plan and its free-tier quota: the points sent
// on live keys this calendar month (the count the quota is enforced on), what remains (never below
// 0, null without a quota) and when it renews (the first instant of next month, UTC).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { dailySeries } from './fixtures/vendor/harness.js';
import { sharedStoreView } from './store-view.js';
import { ADMIN_TOKEN, call, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';
/** 20 points a call. */
const DETECT_BODY = { series: dailySeries(20), granularity: 'daily' };
const QUOTA = 50;
const MARCH = Date.parse('2026-03-15T12:00:00.000Z');
const APRIL_FIRST = '2026-04-01T00:00:00.000Z';

interface QuotaFields {
  plan: string;
  monthly_point_quota: number | null;
  points_used_this_month: number;
  points_remaining: number | null;
  quota_renews_at: string | null;
}

describe('the quota in GET /v1/usage/summary', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;

  beforeEach(async () => {
    env = await tenancyEnvironment(MARCH);
    app = await env.start({ FREE_TIER_POINTS_PER_MONTH: String(QUOTA) });
  });
  afterEach(async () => {
    await env.cleanup();
  });

  async function organization(plan: 'free' | 'paid'): Promise<{ live: string; test: string }> {
    const created = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: `${plan} co`, plan });
    expect(created.statusCode).toBe(201);
    const keys = created.json<{ keys: { kind: string; key: string }[] }>().keys;
    return { live: keys.find((key) => key.kind === 'live')?.key ?? '', test: keys.find((key) => key.kind === 'test')?.key ?? '' };
  }

  const detect = (key: string) => call(app, 'POST', ENTIRE, key, DETECT_BODY);

  async function quota(key: string, query = ''): Promise<QuotaFields> {
    const response = await call(app, 'GET', `/v1/usage/summary${query}`, key);
    expect(response.statusCode).toBe(200);
    const body = response.json<QuotaFields & Record<string, unknown>>();
    return {
      plan: body.plan,
      monthly_point_quota: body.monthly_point_quota,
      points_used_this_month: body.points_used_this_month,
      points_remaining: body.points_remaining,
      quota_renews_at: body.quota_renews_at,
    };
  }

  it('a free organization: the points its live keys sent this month and what remains; test keys count for neither', async () => {
    const { live, test } = await organization('free');
    expect(await quota(live)).toEqual({ plan: 'free', monthly_point_quota: QUOTA, points_used_this_month: 0, points_remaining: QUOTA, quota_renews_at: APRIL_FIRST });
    expect((await detect(live)).statusCode).toBe(200);
    expect((await detect(test)).statusCode).toBe(200);
    const after = { plan: 'free', monthly_point_quota: QUOTA, points_used_this_month: 20, points_remaining: 30, quota_renews_at: APRIL_FIRST };
    expect(await quota(live)).toEqual(after);
    // The same for either key and whatever kind the totals are asked for.
    expect(await quota(test)).toEqual(after);
    expect(await quota(live, '?kind=test')).toEqual(after);
    const summary = (await call(app, 'GET', '/v1/usage/summary?kind=test', live)).json<{ total_points: number }>();
    expect(summary.total_points).toBe(20);
  });

  it('remaining stops at 0 when the call that crossed the quota was served in full, as the refusals that follow say', async () => {
    const { live } = await organization('free');
    for (let sent = 0; sent < 2; sent++) expect((await detect(live)).statusCode).toBe(200);
    expect(await quota(live)).toMatchObject({ points_used_this_month: 40, points_remaining: 10 });
    expect((await detect(live)).statusCode).toBe(200);
    expect(await quota(live)).toEqual({ plan: 'free', monthly_point_quota: QUOTA, points_used_this_month: 60, points_remaining: 0, quota_renews_at: APRIL_FIRST });
    const refused = await detect(live);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['x-quota-renews-at']).toBe(APRIL_FIRST);
    expect(await quota(live)).toMatchObject({ points_used_this_month: 60, points_remaining: 0 });
  });

  it('renews at the first instant of next month (UTC): last month’s points no longer count', async () => {
    const { live } = await organization('free');
    for (let sent = 0; sent < 3; sent++) expect((await detect(live)).statusCode).toBe(200);
    env.nowMs = Date.parse(APRIL_FIRST) - 1;
    expect(await quota(live)).toMatchObject({ points_used_this_month: 60, points_remaining: 0, quota_renews_at: APRIL_FIRST });
    env.nowMs = Date.parse(APRIL_FIRST);
    expect(await quota(live)).toEqual({
      plan: 'free',
      monthly_point_quota: QUOTA,
      points_used_this_month: 0,
      points_remaining: QUOTA,
      quota_renews_at: '2026-05-01T00:00:00.000Z',
    });
    expect((await detect(live)).statusCode).toBe(200);
    expect(await quota(live)).toMatchObject({ points_used_this_month: 20, points_remaining: 30 });
  });

  it('a December quota renews on the first of January', async () => {
    const { live } = await organization('free');
    env.nowMs = Date.parse('2026-12-31T23:59:59.999Z');
    expect((await quota(live)).quota_renews_at).toBe('2027-01-01T00:00:00.000Z');
  });

  it('a paid organization, the first-start one included, has no quota: nulls, and its live points this month', async () => {
    const { live } = await organization('paid');
    for (let sent = 0; sent < 4; sent++) expect((await detect(live)).statusCode).toBe(200);
    const unlimited = { plan: 'paid', monthly_point_quota: null, points_used_this_month: 80, points_remaining: null, quota_renews_at: null };
    expect(await quota(live)).toEqual(unlimited);
    const firstStart = app.bootstrap.createdKeys.find((key) => key.kind === 'live')?.key ?? '';
    expect(await quota(firstStart)).toEqual({ ...unlimited, points_used_this_month: 0 });
  });

  it('a free tier of 0 points: nothing remains from the start', async () => {
    const zero = await env.start({ FREE_TIER_POINTS_PER_MONTH: '0' });
    const { live } = await organization('free');
    const response = await call(zero, 'GET', '/v1/usage/summary', live);
    expect(response.json()).toMatchObject({ monthly_point_quota: 0, points_used_this_month: 0, points_remaining: 0, quota_renews_at: APRIL_FIRST });
  });

  it('answers 404 OrganizationNotFound, not a 500, when the caller’s organization is gone after it signed in', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-quota-summary-'));
    let gone = false;
    const view = sharedStoreView(env.store, {
      getOrganization: async (orgId: string) => (gone ? null : env.store.getOrganization(orgId)),
    });
    const lonely = await buildApp(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ADMIN_TOKEN }), { store: view, nowMs: () => env.nowMs });
    try {
      const { live } = await organization('free');
      // The first call looks the key up (and its organization) and caches it; the next one only reads the cache.
      expect((await call(lonely, 'GET', '/v1/usage/summary', live)).statusCode).toBe(200);
      gone = true;
      const response = await call(lonely, 'GET', '/v1/usage/summary', live);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: { code: 'OrganizationNotFound', message: 'This organization no longer exists.' } });
    } finally {
      await lonely.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the summary in the OpenAPI document', () => {
  let env: TenancyEnvironment;
  afterEach(async () => {
    await env.cleanup();
  });

  it('declares the quota fields with their nullability', async () => {
    env = await tenancyEnvironment(MARCH);
    const app = await env.start();
    const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, unknown>; required: string[] } }> }> } }>;
    }>();
    const schema = document.paths['/v1/usage/summary']?.get.responses['200']?.content['application/json']?.schema;
    expect(schema?.required).toEqual(
      expect.arrayContaining(['plan', 'monthly_point_quota', 'points_used_this_month', 'points_remaining', 'quota_renews_at', 'total_points', 'org_id']),
    );
    expect(schema?.properties['plan']).toMatchObject({ anyOf: [{ enum: ['free'] }, { enum: ['paid'] }] });
    expect(schema?.properties['monthly_point_quota']).toMatchObject({ anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] });
    expect(schema?.properties['points_used_this_month']).toMatchObject({ type: 'integer', minimum: 0 });
    expect(schema?.properties['points_remaining']).toMatchObject({ anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] });
    expect(schema?.properties['quota_renews_at']).toMatchObject({ anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] });
    expect(Object.keys(document.paths['/v1/usage/summary']?.get.responses ?? {})).toContain('404');
  });
});
