// The audit log's key and organization events: a key created, revoked or rotated through /v1/keys
// (by the calling key) or the admin API (by `admin`), an organization created or disabled; each
// in the organization's own log only, with when and from where; a refused or repeated change
// records nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN, call, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

interface AuditEventBody {
  event_id: string;
  org_id: string;
  at: string;
  actor: { kind: string; id: string };
  action: string;
  target: string;
  source_ip: string | null;
}

describe('audit log: keys and organizations', () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let live: string;
  let liveId: string;
  let testId: string;

  beforeEach(async () => {
    env = await tenancyEnvironment();
    app = await env.start();
    const keys = app.bootstrap.createdKeys;
    live = keys.find((key) => key.kind === 'live')?.key ?? '';
    liveId = keys.find((key) => key.kind === 'live')?.keyId ?? '';
    testId = keys.find((key) => key.kind === 'test')?.keyId ?? '';
  });
  afterEach(async () => {
    await env.cleanup();
  });

  const eventsOf = async (key: string): Promise<AuditEventBody[]> => {
    const response = await call(app, 'GET', '/v1/audit', key);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<{ events: AuditEventBody[] }>().events;
  };
  /** [action, target, actor kind, actor id], oldest first. */
  const trail = async (key: string): Promise<string[][]> =>
    (await eventsOf(key)).reverse().map((event) => [event.action, event.target, event.actor.kind, event.actor.id]);

  const createOrganization = async () => {
    const response = await call(app, 'POST', '/admin/v1/organizations', ADMIN_TOKEN, { name: 'Acme', plan: 'paid' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json<{ org_id: string; keys: { key: string; key_id: string; kind: string }[] }>();
    const liveKey = body.keys.find((key) => key.kind === 'live');
    const testKey = body.keys.find((key) => key.kind === 'test');
    return { orgId: body.org_id, live: liveKey?.key ?? '', liveId: liveKey?.key_id ?? '', testId: testKey?.key_id ?? '' };
  };

  it('records a key created, rotated and revoked through /v1/keys by the calling key, with when and from where', async () => {
    const before = Date.now();
    const created = await call(app, 'POST', '/v1/keys', live, { kind: 'live', name: 'ci' });
    expect(created.statusCode).toBe(201);
    const createdId = created.json<{ key_id: string }>().key_id;
    const rotated = await call(app, 'POST', `/v1/keys/${createdId}/rotate`, live, { grace_seconds: 60 });
    expect(rotated.statusCode).toBe(201);
    const successorId = rotated.json<{ key_id: string }>().key_id;
    expect((await call(app, 'DELETE', `/v1/keys/${testId}`, live)).statusCode).toBe(200);

    expect(await trail(live)).toEqual([
      ['key.created', `key:${createdId}`, 'key', liveId],
      ['key.rotated', `key:${createdId}`, 'key', liveId],
      ['key.created', `key:${successorId}`, 'key', liveId],
      ['key.revoked', `key:${testId}`, 'key', liveId],
    ]);
    for (const event of await eventsOf(live)) {
      expect(event).toMatchObject({ org_id: app.bootstrap.organizationId, source_ip: '127.0.0.1' });
      expect(Date.parse(event.at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(event.at)).toBeLessThanOrEqual(Date.now() + 1000);
    }
  });

  it('records nothing for a refused change or a key revoked twice', async () => {
    const test = app.bootstrap.createdKeys.find((key) => key.kind === 'test')?.key ?? '';
    expect((await call(app, 'POST', '/v1/keys', test, { kind: 'live' })).statusCode).toBe(403);
    expect((await call(app, 'DELETE', `/v1/keys/${liveId}`, live)).statusCode).toBe(409);
    expect((await call(app, 'DELETE', '/v1/keys/key_nothing', live)).statusCode).toBe(404);
    expect((await call(app, 'POST', '/v1/keys/key_nothing/rotate', live, {})).statusCode).toBe(404);
    expect(await trail(live)).toEqual([]);
    expect((await call(app, 'DELETE', `/v1/keys/${testId}`, live)).statusCode).toBe(200);
    expect((await call(app, 'DELETE', `/v1/keys/${testId}`, live)).statusCode).toBe(200);
    expect(await trail(live)).toEqual([['key.revoked', `key:${testId}`, 'key', liveId]]);
  });

  it('records an organization created with its two keys, and admin key changes, by admin in that organization only', async () => {
    const acme = await createOrganization();
    const issued = await call(app, 'POST', `/admin/v1/organizations/${acme.orgId}/keys`, ADMIN_TOKEN, { kind: 'test', name: 'ops' });
    expect(issued.statusCode).toBe(201);
    const issuedId = issued.json<{ key_id: string }>().key_id;
    expect((await call(app, 'DELETE', `/admin/v1/organizations/${acme.orgId}/keys/${issuedId}`, ADMIN_TOKEN)).statusCode).toBe(200);
    expect((await call(app, 'DELETE', `/admin/v1/organizations/${acme.orgId}/keys/${issuedId}`, ADMIN_TOKEN)).statusCode).toBe(200);

    expect(await trail(acme.live)).toEqual([
      ['organization.created', `organization:${acme.orgId}`, 'admin', 'admin'],
      ['key.created', `key:${acme.liveId}`, 'admin', 'admin'],
      ['key.created', `key:${acme.testId}`, 'admin', 'admin'],
      ['key.created', `key:${issuedId}`, 'admin', 'admin'],
      ['key.revoked', `key:${issuedId}`, 'admin', 'admin'],
    ]);
    for (const event of await eventsOf(acme.live)) {
      expect(event).toMatchObject({ org_id: acme.orgId, source_ip: '127.0.0.1' });
    }
    // The default organization sees none of it.
    expect(await trail(live)).toEqual([]);
  });

  it('records an organization disabled once, in its own log', async () => {
    const acme = await createOrganization();
    const other = await createOrganization();
    for (let i = 0; i < 2; i += 1) {
      expect((await call(app, 'POST', `/admin/v1/organizations/${acme.orgId}/disable`, ADMIN_TOKEN)).statusCode).toBe(200);
    }
    const events = await app.store.audit.list(acme.orgId, { limit: 100 });
    expect(events.events.map((event) => [event.action, event.target, event.actor.kind, event.orgId, event.sourceIp])[0]).toEqual([
      'organization.disabled',
      `organization:${acme.orgId}`,
      'admin',
      acme.orgId,
      '127.0.0.1',
    ]);
    expect(events.events.filter((event) => event.action === 'organization.disabled')).toHaveLength(1);
    expect((await trail(other.live)).map(([action]) => action)).toEqual(['organization.created', 'key.created', 'key.created']);
    expect(await trail(live)).toEqual([]);
  });

  it("never lets one organization's key changes reach another's log", async () => {
    const acme = await createOrganization();
    const created = await call(app, 'POST', '/v1/keys', acme.live, { kind: 'test' });
    expect(created.statusCode).toBe(201);
    // Another organization's key id is not found for this one, and records nothing anywhere.
    expect((await call(app, 'DELETE', `/v1/keys/${acme.testId}`, live)).statusCode).toBe(404);
    expect((await call(app, 'POST', `/v1/keys/${acme.testId}/rotate`, live, {})).statusCode).toBe(404);
    expect(await trail(live)).toEqual([]);
    const theirs = await eventsOf(acme.live);
    expect(theirs.every((event) => event.org_id === acme.orgId)).toBe(true);
    expect(theirs[0]).toMatchObject({ action: 'key.created', target: `key:${created.json<{ key_id: string }>().key_id}`, actor: { kind: 'key', id: acme.liveId } });
  });
});
