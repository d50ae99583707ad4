// `npm run admin`: the command line parsed into admin API requests, then the real process spawned
// against a listening app: org create/list/get/disable, key create/list/revoke, and its failures.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parseAdminCommand } from '../src/admin/cli.js';
import { ADMIN_TOKEN, tenancyEnvironment, type TenancyEnvironment } from './tenancy-helpers.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mainTs = join(repoRoot, 'apps/api/src/admin/cli-main.ts');

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function admin(args: string[], env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', mainTs, ...args], {
      cwd: repoRoot,
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('admin CLI: the command line', () => {
  it('turns each command into its admin API request', () => {
    expect(parseAdminCommand(['org', 'create', '--name', 'Acme', '--plan', 'free', '--external-id', 'e1'])).toEqual({
      method: 'POST',
      path: '/admin/v1/organizations',
      body: { name: 'Acme', plan: 'free', external_id: 'e1' },
    });
    expect(parseAdminCommand(['org', 'list'])).toEqual({ method: 'GET', path: '/admin/v1/organizations' });
    expect(parseAdminCommand(['org', 'disable', 'org/1'])).toEqual({ method: 'POST', path: '/admin/v1/organizations/org%2F1/disable' });
    expect(parseAdminCommand(['key', 'create', '--org', 'o', '--kind', 'test', '--name', 'ci'])).toEqual({
      method: 'POST',
      path: '/admin/v1/organizations/o/keys',
      body: { kind: 'test', name: 'ci' },
    });
    expect(parseAdminCommand(['key', 'list', '--org', 'o'])).toEqual({ method: 'GET', path: '/admin/v1/organizations/o/keys' });
    expect(parseAdminCommand(['key', 'revoke', '--org', 'o', 'key_1'])).toEqual({ method: 'DELETE', path: '/admin/v1/organizations/o/keys/key_1' });
  });

  it('refuses what it does not understand', () => {
    for (const argv of [
      [],
      ['org'],
      ['org', 'create', '--name', 'x'],
      ['org', 'create', '--name', 'x', '--plan', 'gold'],
      ['key', 'create', '--org', 'o', '--kind', 'prod'],
      ['key', 'revoke', '--org', 'o'],
      ['key', 'list'],
      ['org', 'list', 'extra'],
      ['org', 'list', '--bogus'],
    ]) {
      expect(() => parseAdminCommand(argv), argv.join(' ')).toThrow(expect.objectContaining({ name: 'UsageError' }));
    }
  });
});

// Each spawn starts tsx, seconds on a loaded machine: a generous runner timeout, not a bound under test.
describe('admin CLI: the process against a running app', { timeout: 120_000 }, () => {
  let env: TenancyEnvironment;
  let app: FastifyInstance;
  let processEnv: Record<string, string>;

  beforeAll(async () => {
    env = await tenancyEnvironment();
    app = await env.start();
    await app.listen({ port: 0, host: '127.0.0.1' });
    processEnv = { ADP_URL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, ADMIN_TOKEN };
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it('creates and lists an organization, issues, lists and revokes its keys', async () => {
    const created = await admin(['org', 'create', '--name', 'Acme', '--plan', 'free'], processEnv);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const organization = JSON.parse(created.stdout) as { org_id: string; plan: string; keys: { kind: string }[] };
    expect(organization).toMatchObject({ name: 'Acme', plan: 'free' });
    expect(organization.keys.map((key) => key.kind)).toEqual(['live', 'test']);

    const listed = await admin(['org', 'list'], processEnv);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { organizations: { org_id: string }[] }).organizations.map((org) => org.org_id)).toContain(
      organization.org_id,
    );

    const key = await admin(['key', 'create', '--org', organization.org_id, '--kind', 'test', '--name', 'ci'], processEnv);
    expect(key.code).toBe(0);
    const issued = JSON.parse(key.stdout) as { key_id: string; key: string; name: string };
    expect(issued.name).toBe('ci');
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'x-service-key': issued.key } })).statusCode).toBe(200);

    const keys = await admin(['key', 'list', '--org', organization.org_id], processEnv);
    expect((JSON.parse(keys.stdout) as { keys: unknown[] }).keys).toHaveLength(3);

    const revoked = await admin(['key', 'revoke', '--org', organization.org_id, issued.key_id], processEnv);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ key_id: issued.key_id, revoked_at: expect.any(String) });
    expect((await app.inject({ method: 'GET', url: '/v1/usage', headers: { 'x-service-key': issued.key } })).statusCode).toBe(401);
  });

  it('reports refusals, a wrong token, a missing token and a bad command on stderr with their exit status', async () => {
    const unknown = await admin(['org', 'get', 'org_nope'], processEnv);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe('error: HTTP 404 OrganizationNotFound: No organization "org_nope".\n');

    const wrong = await admin(['org', 'list'], { ...processEnv, ADMIN_TOKEN: `${ADMIN_TOKEN}x` });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('HTTP 401 AdminUnauthorized');

    const missing = await admin(['org', 'list'], { ADP_URL: processEnv['ADP_URL'] ?? '' });
    expect(missing).toMatchObject({ code: 2, stderr: 'error: ADMIN_TOKEN is not set\n' });

    const bad = await admin(['org', 'launch'], processEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: unknown command "org launch"\n\nUsage: npm run admin/);
  });
});
