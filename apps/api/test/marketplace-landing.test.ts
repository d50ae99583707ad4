// The marketplace landing page against a loopback metering service driven by the real AWS SDK
// client: a subscriber's first visit provisions a paid organization and shows its live key once,
// later visits find the same organization, and every refusal or outage is a page (400, 403, 503),
// never JSON and never a 500.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openEmbeddedStore, type Store } from '@adp/store';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { redactUrl } from '../src/logging.js';
import { marketplaceOrganizationId } from '../src/marketplace/provisioning.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from './marketplace-fake.js';
import { sharedStoreView } from './store-view.js';

const LIVE_KEY = /svc_live_[A-Za-z0-9_-]+/;

describe('marketplace landing page', () => {
  let fake: FakeMeteringService;
  let dataDir: string;
  let store: Store;
  let app: FastifyInstance;

  const start = async (env: Record<string, string> = {}, client = fake.client()): Promise<FastifyInstance> =>
    buildApp(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', MARKETPLACE_PRODUCT_CODE: PRODUCT_CODE, MARKETPLACE_ENDPOINT: fake.url, ...env }), {
      store: sharedStoreView(store),
      marketplaceClient: client,
    });

  beforeEach(async () => {
    fake = await startFakeMeteringService();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-marketplace-'));
    store = await openEmbeddedStore({ dataDir });
    app = await start();
  });
  afterEach(async () => {
    await app.close();
    await store.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const visitWithQuery = (token: string) =>
    app.inject({ method: 'GET', url: `/marketplace/landing?x-cloud-marketplace-token=${encodeURIComponent(token)}` });
  const visitWithForm = (token: string) =>
    app.inject({
      method: 'POST',
      url: '/marketplace/landing',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ 'x-amzn-marketplace-token': token }).toString(),
    });
  const expectPage = (response: LightMyRequestResponse, status: number) => {
    expect(response.statusCode, response.body).toBe(status);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body.startsWith('<!doctype html>')).toBe(true);
    // Self-contained: nothing fetched from elsewhere.
    expect(response.body).not.toMatch(/<script|<link|src=/i);
  };
  const marketplaceOrganizations = async () => (await store.listOrganizations()).filter((org) => org.externalId?.startsWith('aws:'));

  it('provisions a paid organization on the first visit and shows a working live key once', async () => {
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-A1', CustomerAWSAccountId: '111122223333', ProductCode: PRODUCT_CODE });
    const first = await visitWithQuery('token-1');
    expectPage(first, 200);
    const key = LIVE_KEY.exec(first.body)?.[0];
    expect(key).toBeDefined();
    expect(fake.calls).toEqual([{ operation: 'ResolveCustomer', body: { RegistrationToken: 'token-1' }, signed: true }]);

    const [organization, ...others] = await marketplaceOrganizations();
    expect(others).toEqual([]);
    expect(organization).toMatchObject({ plan: 'paid', externalId: 'aws:cust-A1', disabledAt: null, id: marketplaceOrganizationId('aws:cust-A1') });
    expect(first.body).toContain(organization?.id);

    const summary = await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { 'x-service-key': key ?? '' } });
    expect(summary.statusCode, summary.body).toBe(200);
    expect(summary.json<{ org_id: string; key_kind: string }>()).toMatchObject({ org_id: organization?.id, key_kind: 'live' });
  });

  it('shows the same organization and no new key on a later visit, by form post or query', async () => {
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-A1', ProductCode: PRODUCT_CODE });
    fake.tokens.set('token-2', { CustomerIdentifier: 'cust-A1', ProductCode: PRODUCT_CODE });
    expectPage(await visitWithForm('token-1'), 200);
    const [organization] = await marketplaceOrganizations();
    for (const again of [await visitWithForm('token-2'), await visitWithQuery('token-1')]) {
      expectPage(again, 200);
      expect(again.body).toContain('already set up');
      expect(again.body).toContain(organization?.id);
      expect(again.body).not.toMatch(LIVE_KEY);
    }
    expect(await marketplaceOrganizations()).toHaveLength(1);
    expect(await store.listApiKeys(organization?.id ?? '')).toHaveLength(1);
    expect(fake.calls.map((call) => call.body['RegistrationToken'])).toEqual(['token-1', 'token-2', 'token-1']);
  });

  it('lands simultaneous first visits of one customer on one organization, one key shown', async () => {
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-B', ProductCode: PRODUCT_CODE });
    fake.tokens.set('token-2', { CustomerIdentifier: 'cust-B', ProductCode: PRODUCT_CODE });
    const visits = await Promise.all([visitWithQuery('token-1'), visitWithForm('token-2'), visitWithQuery('token-1')]);
    for (const visit of visits) expectPage(visit, 200);
    const organizations = await marketplaceOrganizations();
    expect(organizations).toHaveLength(1);
    expect(visits.filter((visit) => LIVE_KEY.test(visit.body))).toHaveLength(1);
    expect(await store.listApiKeys(organizations[0]?.id ?? '')).toHaveLength(1);
  });

  it('names the organization by the AWS account id when the marketplace gives no customer identifier', async () => {
    fake.tokens.set('token-1', { CustomerAWSAccountId: '444455556666', ProductCode: PRODUCT_CODE });
    expectPage(await visitWithQuery('token-1'), 200);
    expect((await marketplaceOrganizations()).map((org) => org.externalId)).toEqual(['aws:444455556666']);
  });

  it('issues the key on a later visit when an earlier one stopped before issuing it', async () => {
    await store.createOrganization(marketplaceOrganizationId('aws:cust-C'), 'half-provisioned', { plan: 'paid', externalId: 'aws:cust-C' });
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-C', ProductCode: PRODUCT_CODE });
    const visit = await visitWithQuery('token-1');
    expectPage(visit, 200);
    expect(visit.body).toMatch(LIVE_KEY);
  });

  it('answers a clear 400 page for an invalid, expired or missing token, provisioning nothing', async () => {
    fake.expired.add('old-token');
    for (const visit of [await visitWithQuery('forged-token'), await visitWithForm('old-token'), await app.inject({ method: 'GET', url: '/marketplace/landing' })]) {
      expectPage(visit, 400);
      expect(visit.body).toContain('This registration link is not valid');
    }
    // The missing token never reached the marketplace.
    expect(fake.calls).toHaveLength(2);
    expect(await marketplaceOrganizations()).toEqual([]);
  });

  it('refuses a token for another product with a 400 page', async () => {
    fake.tokens.set('token-other', { CustomerIdentifier: 'cust-D', ProductCode: 'someoneelsesproduct' });
    const visit = await visitWithQuery('token-other');
    expectPage(visit, 400);
    expect(visit.body).toContain('another product');
    expect(await marketplaceOrganizations()).toEqual([]);
  });

  it('answers a 403 page for a customer whose organization is disabled', async () => {
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-E', ProductCode: PRODUCT_CODE });
    expectPage(await visitWithQuery('token-1'), 200);
    const [organization] = await marketplaceOrganizations();
    await store.disableOrganization(organization?.id ?? '');
    const visit = await visitWithQuery('token-1');
    expectPage(visit, 403);
    expect(visit.body).not.toMatch(LIVE_KEY);
  });

  it.each([
    ['an internal error', { type: 'InternalServiceErrorException', status: 500 }],
    ['throttling', { type: 'ThrottlingException', status: 400 }],
    ['refused credentials', { type: 'UnrecognizedClientException', status: 400 }],
  ])('answers a 503 page when the marketplace fails with %s', async (_name, failure) => {
    fake.tokens.set('token-1', { CustomerIdentifier: 'cust-F', ProductCode: PRODUCT_CODE });
    fake.failWith = failure;
    const visit = await visitWithQuery('token-1');
    expectPage(visit, 503);
    expect(visit.headers['retry-after']).toBe('5');
    expect(visit.body).toContain('try again');
    expect(await marketplaceOrganizations()).toEqual([]);
  });

  it('answers a 503 page when the marketplace cannot be reached', async () => {
    const gone = await startFakeMeteringService();
    const client = gone.client();
    await gone.close();
    const unreachable = await start({}, client);
    try {
      const visit = await unreachable.inject({ method: 'GET', url: '/marketplace/landing?x-cloud-marketplace-token=t' });
      expectPage(visit, 503);
    } finally {
      await unreachable.close();
      client.destroy();
    }
  });

  it('is off (404, JSON) without MARKETPLACE_PRODUCT_CODE', async () => {
    const off = await start({ MARKETPLACE_PRODUCT_CODE: '', MARKETPLACE_ENDPOINT: '' });
    try {
      for (const method of ['GET', 'POST'] as const) {
        const visit = await off.inject({ method, url: '/marketplace/landing?x-cloud-marketplace-token=t' });
        expect(visit.statusCode).toBe(404);
        expect(visit.json()).toEqual({ error: { code: 'NotFound', message: `Route ${method} /marketplace/landing not found` } });
      }
      expect(fake.calls).toEqual([]);
      // Nor are calls counted per hour.
      const key = app.bootstrap.createdKeys.find((created) => created.kind === 'live')?.key ?? '';
      const series = Array.from({ length: 24 }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1, i)).toISOString(), value: 10 + (i % 3) }));
      const detected = await off.inject({
        method: 'POST',
        url: '/anomalydetector/v1.1/timeseries/entire/detect',
        headers: { 'ocp-apim-subscription-key': key },
        payload: { series, granularity: 'hourly' },
      });
      expect(detected.statusCode, detected.body).toBe(200);
      const hourMs = Math.floor(Date.now() / 3_600_000) * 3_600_000;
      const counted = [...(await store.metering?.callsInHour(hourMs) ?? []), ...(await store.metering?.callsInHour(hourMs - 3_600_000) ?? [])];
      expect(counted).toEqual([]);
    } finally {
      await off.close();
    }
  });

  it('keeps the form parser to the landing route', async () => {
    const key = app.bootstrap.createdKeys.find((created) => created.kind === 'live')?.key ?? '';
    const response = await app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-service-key': key },
      payload: 'kind=live',
    });
    expect(response.statusCode).toBe(415);
  });

  it('keeps the registration token out of the request log', () => {
    expect(redactUrl('/marketplace/landing?x-cloud-marketplace-token=abc%2Fdef&x=1')).toBe('/marketplace/landing?x-cloud-marketplace-token=[redacted]&x=1');
    expect(redactUrl('/marketplace/landing?X-AMZN-MARKETPLACE-TOKEN=abc')).toBe('/marketplace/landing?X-AMZN-MARKETPLACE-TOKEN=[redacted]');
  });
});
