// The audit log and identity-provider tokens with the scale-out store: the API built on the
// ClickHouse store records baseline changes with the right actor (API key or token subject), lists
// them newest first, and never shows them to another organization. A JWKS server runs on loopback;
// each test has its own ClickHouse database.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openClickHouseStore } from '@adp/store';
import { buildApp } from '../../apps/api/src/app.js';
import { loadConfig } from '../../apps/api/src/config.js';
import { describeApiKey, generateApiKey } from '../../apps/api/src/tenancy/keys.js';
import { AUDIENCE, signingKey, signToken, startProvider, type FakeProvider, type SigningKey } from '../../apps/api/test/oidc-helpers.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;
const API_KEY = `svc_live_${'auditclickhouse0123456789'}`;
const energies = Array.from({ length: 100 }, (_, i) => 3 + (i % 2));

interface AuditBody {
  events: { org_id: string; actor: { kind: string; id: string }; action: string; target: string }[];
  next_cursor: string | null;
}

let signing: SigningKey;
beforeAll(async () => {
  signing = await signingKey('rsa-1', 'RS256');
});

describe.skipIf(!gate.run)(gateTitle('API audit log on ClickHouse', gate), () => {
  let database: string;
  let dataDir: string;
  let provider: FakeProvider;
  let app: FastifyInstance;

  beforeEach(async () => {
    database = isolatedName('audit_api');
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-audit-ch-'));
    provider = await startProvider([signing]);
    const store = await openClickHouseStore({ url, database });
    const config = loadConfig({
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: API_KEY,
      LOG_LEVEL: 'silent',
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: AUDIENCE,
    });
    app = await buildApp(config, { store });
  });
  afterEach(async () => {
    await app.close();
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
    const admin = createClient({ url, log: { level: ClickHouseLogLevel.OFF } });
    await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await admin.close();
  });

  const call = (credential: string, method: 'GET' | 'POST' | 'DELETE', route: string, payload?: Record<string, unknown>) =>
    app.inject({ method, url: route, headers: { authorization: `Bearer ${credential}` }, ...(payload === undefined ? {} : { payload }) });

  it('records key and token callers, newest first, for their own organization only', async () => {
    const keyId = (await call(API_KEY, 'GET', '/v1/usage/summary')).json<{ key_id: string }>().key_id;
    const token = await signToken(signing, { issuer: provider.issuer, subject: 'alice' });
    expect((await call(API_KEY, 'POST', '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    expect((await call(token, 'POST', '/v1/baseline', { machine_id: 'pump-1', energies })).statusCode).toBe(200);
    expect((await call(token, 'DELETE', '/v1/machines/pump-1')).statusCode).toBe(200);

    const response = await call(API_KEY, 'GET', '/v1/audit');
    expect(response.statusCode).toBe(200);
    const { events, next_cursor } = response.json<AuditBody>();
    expect(next_cursor).toBeNull();
    expect(events.map((event) => [event.action, event.actor.kind, event.actor.id, event.target])).toEqual([
      ['baseline.deleted', 'jwt', 'alice', 'machine:pump-1'],
      ['baseline.updated', 'jwt', 'alice', 'machine:pump-1'],
      ['baseline.created', 'key', keyId, 'machine:pump-1'],
    ]);

    await app.store.createOrganization('org_other', 'Other');
    const otherKey = generateApiKey('live');
    await app.store.createApiKey('org_other', describeApiKey(otherKey));
    const theirs = await call(otherKey, 'GET', '/v1/audit');
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json<AuditBody>().events).toEqual([]);
    const otherToken = await signToken(signing, { issuer: provider.issuer, claims: { org_id: 'org_other' } });
    expect((await call(otherToken, 'GET', '/v1/audit')).json<AuditBody>().events).toEqual([]);
  });
});
