// The audit log through the API: baseline changes recorded with the right actor (API key or
// identity-provider subject), time and address; GET /v1/audit paged, newest first, and only ever
// the caller's own organization's events; a failing audit write never fails the change.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditStore, Store } from '@adp/store';
import { describeApiKey, generateApiKey } from '../src/tenancy/keys.js';
import { AUDIENCE, signingKey, signToken, startProvider, type FakeProvider, type SigningKey } from './oidc-helpers.js';
import { firstKey, testEnvironment, type TestEnvironment } from './platform-helpers.js';

interface AuditBody {
  events: { event_id: string; org_id: string; at: string; actor: { kind: string; id: string }; action: string; target: string; source_ip: string | null }[];
  next_cursor: string | null;
}

const energies = Array.from({ length: 100 }, (_, i) => 3 + (i % 2));

let key: SigningKey;
beforeAll(async () => {
  key = await signingKey('rsa-1', 'RS256');
});

describe('audit log', () => {
  let env: TestEnvironment;
  let provider: FakeProvider;
  let app: FastifyInstance;
  let apiKey: string;

  beforeEach(async () => {
    env = await testEnvironment();
    provider = await startProvider([key]);
    app = await env.start({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE, LOG_LEVEL: 'silent' });
    apiKey = firstKey(app);
  });
  afterEach(async () => {
    await env.cleanup();
    await provider.close();
  });

  const call = (credential: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${credential}` }, ...(payload === undefined ? {} : { payload }) });

  const auditOf = async (credential: string, query = ''): Promise<AuditBody> => {
    const response = await call(credential, 'GET', `/v1/audit${query}`);
    expect(response.statusCode).toBe(200);
    return response.json<AuditBody>();
  };

  async function keyIdOf(credential: string): Promise<string> {
    return (await call(credential, 'GET', '/v1/usage/summary')).json<{ key_id: string }>().key_id;
  }

  it('records baseline created, updated and deleted by an API key, with when and from where', async () => {
    const before = Date.now();
    expect((await call(apiKey, 'POST', '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    expect((await call(apiKey, 'POST', '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    expect((await call(apiKey, 'DELETE', '/v1/machines/pump-1')).statusCode).toBe(200);
    const keyId = await keyIdOf(apiKey);
    const { events, next_cursor } = await auditOf(apiKey);
    expect(next_cursor).toBeNull();
    expect(events.map((event) => event.action)).toEqual(['baseline.deleted', 'baseline.updated', 'baseline.created']);
    for (const event of events) {
      expect(event).toMatchObject({ org_id: 'org_default', actor: { kind: 'key', id: keyId }, target: 'machine:pump-1', source_ip: '127.0.0.1' });
      expect(Date.parse(event.at)).toBeGreaterThanOrEqual(before - 1000);
    }
    expect(new Set(events.map((event) => event.event_id)).size).toBe(3);
  });

  it('records a token caller as its subject', async () => {
    const token = await signToken(key, { issuer: provider.issuer, subject: 'alice@example.com' });
    expect((await call(token, 'POST', '/v1/baseline', { machine_id: 'fan-2', energies })).statusCode).toBe(200);
    const { events } = await auditOf(token);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action: 'baseline.created', actor: { kind: 'jwt', id: 'alice@example.com' }, target: 'machine:fan-2' });
    // The token's usage is the organization's, on the v1/baseline label.
    const usage = (await call(apiKey, 'GET', '/v1/usage')).json<{ endpoint: string; call_count: number }[]>();
    expect(usage.find((entry) => entry.endpoint === 'v1/baseline')?.call_count).toBe(1);
  });

  it("records a token caller's key changes as its subject", async () => {
    const token = await signToken(key, { issuer: provider.issuer, subject: 'bob@example.com' });
    const created = await call(token, 'POST', '/v1/keys', { kind: 'test', name: 'from-sso' });
    expect(created.statusCode).toBe(201);
    const keyId = created.json<{ key_id: string }>().key_id;
    expect((await call(token, 'DELETE', `/v1/keys/${keyId}`)).statusCode).toBe(200);
    const { events } = await auditOf(token);
    expect(events.map((event) => [event.action, event.target, event.actor])).toEqual([
      ['key.revoked', `key:${keyId}`, { kind: 'jwt', id: 'bob@example.com' }],
      ['key.created', `key:${keyId}`, { kind: 'jwt', id: 'bob@example.com' }],
    ]);
  });

  it('records the deletion of a machine without a baseline as machine.deleted', async () => {
    await app.store.recordDetection('org_default', 'seen-only', {
      points: 10,
      withBaseline: false,
      regimeCounts: { HEALTHY: 10, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 },
    });
    expect((await call(apiKey, 'DELETE', '/v1/machines/seen-only')).statusCode).toBe(200);
    expect((await auditOf(apiKey)).events.map((event) => [event.action, event.target])).toEqual([['machine.deleted', 'machine:seen-only']]);
    // A refused change (no such machine) is not an event.
    expect((await call(apiKey, 'DELETE', '/v1/machines/nothing-here')).statusCode).toBe(404);
    expect((await auditOf(apiKey)).events).toHaveLength(1);
  });

  it('never shows another organization the events, whether it calls with a key or a token', async () => {
    await app.store.createOrganization('org_other', 'Other');
    const otherKey = generateApiKey('live');
    await app.store.createApiKey('org_other', describeApiKey(otherKey));
    const otherToken = await signToken(key, { issuer: provider.issuer, subject: 'mallory', claims: { org_id: 'org_other' } });

    expect((await call(apiKey, 'POST', '/v1/baseline', { machine_id: 'shared-name', energies })).statusCode).toBe(200);
    expect((await auditOf(otherKey)).events).toEqual([]);
    expect((await auditOf(otherToken)).events).toEqual([]);

    // The other organization's own change is its own, and not the first one's.
    expect((await call(otherToken, 'POST', '/v1/baseline', { machine_id: 'shared-name', energies })).statusCode).toBe(200);
    const theirs = (await auditOf(otherKey)).events;
    expect(theirs.map((event) => [event.org_id, event.action, event.actor.id])).toEqual([['org_other', 'baseline.created', 'mallory']]);
    const ours = (await auditOf(apiKey)).events;
    expect(ours.map((event) => event.org_id)).toEqual(['org_default']);
    // A cursor from one organization's pages only pages the caller's own events.
    expect((await call(apiKey, 'POST', '/v1/baseline', { machine_id: 'second', energies })).statusCode).toBe(200);
    const cursor = (await auditOf(apiKey, '?limit=1')).next_cursor;
    expect(cursor).not.toBeNull();
    const viaCursor = await auditOf(otherKey, `?cursor=${encodeURIComponent(cursor ?? '')}`);
    expect(viaCursor.events.map((event) => event.org_id)).toEqual(['org_other']);
  });

  it('pages newest first with limit and cursor, and filters by time', async () => {
    for (const machine of ['m1', 'm2', 'm3']) {
      expect((await call(apiKey, 'POST', '/v1/baseline', { machine_id: machine, energies })).statusCode).toBe(200);
    }
    const first = await auditOf(apiKey, '?limit=2');
    expect(first.events.map((event) => event.target)).toEqual(['machine:m3', 'machine:m2']);
    expect(first.next_cursor).not.toBeNull();
    const second = await auditOf(apiKey, `?limit=2&cursor=${encodeURIComponent(first.next_cursor ?? '')}`);
    expect(second.events.map((event) => event.target)).toEqual(['machine:m1']);
    expect(second.next_cursor).toBeNull();

    const all = (await auditOf(apiKey)).events;
    const oldest = all[all.length - 1]?.at ?? '';
    expect((await auditOf(apiKey, `?to=${encodeURIComponent(oldest)}`)).events).toEqual([]);
    expect((await auditOf(apiKey, `?from=${encodeURIComponent(oldest)}`)).events.length).toBe(3);
    expect((await auditOf(apiKey, '?from=2999-01-01')).events).toEqual([]);
  });

  it('answers 400 in our shape for a bad cursor, time or limit', async () => {
    for (const query of ['?cursor=not-ours', '?from=yesterday', '?to=2025-13-01', '?from=2025-02-01&to=2025-01-01', '?limit=0', '?limit=1001']) {
      const response = await call(apiKey, 'GET', `/v1/audit${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json<{ error: { code: string } }>().error.code, query).toBe('BadRequest');
    }
  });

  it('needs a caller like every other route', async () => {
    const response = await app.inject({ method: 'GET', url: '/v1/audit' });
    expect(response.statusCode).toBe(401);
  });
});

describe('audit log failures', () => {
  let env: TestEnvironment;
  beforeEach(async () => {
    env = await testEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('a failing audit write is logged and does not fail the change', async () => {
    const { openEmbeddedStore } = await import('@adp/store');
    const real = await openEmbeddedStore({ dataDir: env.dataDir });
    const failing: AuditStore = {
      record: () => Promise.reject(new Error('audit disk on fire')),
      list: (orgId, options) => real.audit.list(orgId, options),
    };
    const store = new Proxy(real, {
      get(target, property, receiver) {
        if (property === 'audit') return failing;
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Store;
    const app = await env.start({ LOG_LEVEL: 'silent' }, { store });
    const response = await app.inject({
      method: 'POST',
      url: '/v1/baseline',
      headers: { authorization: `Bearer ${firstKey(app)}` },
      payload: { machine_id: 'pump-1', energies },
    });
    expect(response.statusCode).toBe(200);
    expect(await real.getBaseline('org_default', 'pump-1')).not.toBeNull();
  });
});
