// GET /v1/usage/daily: calls and points per endpoint and UTC day, the default and explicit ranges,
// the kind filter, another organization's usage never shown, and refused ranges.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const DAY_MS = 86_400_000;
const START = Date.parse('2026-03-15T12:00:00.000Z');

describe('GET /v1/usage/daily', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let key: string;

  beforeEach(async () => {
    env = await tenancyEnvironment(START);
    app = await env.start();
    key = app.bootstrap.createdKeys.find((issued) => issued.kind === 'live')?.key ?? '';
    const org = app.bootstrap.organizationId;
    env.nowMs = START - 40 * DAY_MS;
    await env.store.recordUsage(org, 'v1/detect', 999, 'live');
    env.nowMs = START - DAY_MS;
    await env.store.recordUsage(org, 'v1/detect', 100, 'live');
    await env.store.recordUsage(org, 'v1/detect', 50, 'test');
    await env.store.recordUsage(org, 'entire/detect', 12, 'live');
    env.nowMs = START;
    await env.store.recordUsage(org, 'v1/detect', 7, 'live');
    await env.store.recordUsage('org_other', 'v1/detect', 1_000_000, 'live');
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('answers the last 30 days by default, per day and endpoint, both kinds together', async () => {
    const response = await call(app, 'GET', '/v1/usage/daily', key);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      org_id: app.bootstrap.organizationId,
      from: '2026-02-14',
      to: '2026-03-15',
      days: [
        { day: '2026-03-14', endpoint: 'entire/detect', total_points: 12, call_count: 1 },
        { day: '2026-03-14', endpoint: 'v1/detect', total_points: 150, call_count: 2 },
        { day: '2026-03-15', endpoint: 'v1/detect', total_points: 7, call_count: 1 },
      ],
    });
  });

  it('reads an explicit range and one kind', async () => {
    const response = await call(app, 'GET', '/v1/usage/daily?from=2026-02-01&to=2026-03-14&kind=test', key);
    expect(response.json().days).toEqual([{ day: '2026-03-14', endpoint: 'v1/detect', total_points: 50, call_count: 1 }]);
    const old = await call(app, 'GET', '/v1/usage/daily?from=2026-02-03&to=2026-02-03', key);
    expect(old.json().days).toEqual([{ day: '2026-02-03', endpoint: 'v1/detect', total_points: 999, call_count: 1 }]);
  });

  it('refuses a reversed, too long or unreal range with a coded 400', async () => {
    for (const query of ['from=2026-03-15&to=2026-03-14', 'from=2025-01-01&to=2026-03-14', 'to=2026-02-30', 'from=15.03.2026']) {
      const response = await call(app, 'GET', `/v1/usage/daily?${query}`, key);
      expect(response.statusCode, query).toBe(400);
      expect(['InvalidArgument', 'BadRequest'], query).toContain(response.json().error.code);
    }
  });
});
