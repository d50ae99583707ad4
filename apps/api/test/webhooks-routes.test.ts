// /v1/webhooks through inject: targets per organization, the secret shown once, rotation with a
// grace period, coded errors for every bad input, the private-address guard, the test delivery
// (verified with the Standard Webhooks library) and the delivery log; and the audit trail.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { API_KEY, OTHER_KEY, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const PUBLIC_LOOKUP = () => Promise.resolve([{ address: '93.184.216.34', family: 4 }]);

function send(app: FastifyInstance, method: 'PATCH' | 'DELETE', url: string, body?: unknown, key = API_KEY): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { 'x-service-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

describe('/v1/webhooks', () => {
  let env: StreamingEnvironment;
  let app: FastifyInstance;
  const receivers: http.Server[] = [];

  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
    await Promise.all(receivers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  async function receiver(status: number): Promise<{ url: string; requests: { headers: http.IncomingHttpHeaders; body: string }[] }> {
    const requests: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ headers: req.headers, body });
        res.writeHead(status).end();
      });
    });
    receivers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, requests };
  }

  it('creates a target with its secret shown once, lists, reads, changes and deletes it, per organization, audited', async () => {
    app = await env.start({}, { webhookLookup: PUBLIC_LOOKUP });
    await env.addOtherOrganization();
    const created = await post(app, '/v1/webhooks', {
      url: 'https://hooks.example.com/adp',
      events: ['episode.opened', 'episode.closed', 'episode.opened'],
      machine_ids: ['pump-7'],
      min_severity: 0.5,
      description: 'on call',
    });
    expect(created.statusCode).toBe(201);
    const body = created.json<Record<string, unknown>>();
    expect(body).toEqual({
      webhook_id: expect.stringMatching(/^wh_[0-9a-f]{24}$/),
      url: 'https://hooks.example.com/adp',
      events: ['episode.opened', 'episode.closed'],
      machine_ids: ['pump-7'],
      min_severity: 0.5,
      description: 'on call',
      enabled: true,
      disabled_at: null,
      disabled_reason: null,
      previous_secret_expires_at: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const id = body['webhook_id'] as string;
    const { secret: _secret, ...view } = body;
    expect((await get(app, '/v1/webhooks')).json()).toEqual({ webhooks: [view] });
    expect((await get(app, `/v1/webhooks/${id}`)).json()).toEqual(view);
    expect((await get(app, '/v1/webhooks', OTHER_KEY)).json()).toEqual({ webhooks: [] });
    expect((await get(app, `/v1/webhooks/${id}`, OTHER_KEY)).json()).toMatchObject({ error: { code: 'WebhookNotFound' } });

    const patched = await send(app, 'PATCH', `/v1/webhooks/${id}`, { machine_ids: null, min_severity: 0, enabled: false });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ machine_ids: null, min_severity: 0, enabled: false, disabled_reason: 'disabled by request' });
    expect((await send(app, 'PATCH', `/v1/webhooks/${id}`, { enabled: true })).json()).toMatchObject({ enabled: true, disabled_at: null, disabled_reason: null });

    const deleted = await send(app, 'DELETE', `/v1/webhooks/${id}`);
    expect(deleted.statusCode).toBe(200);
    expect((await get(app, `/v1/webhooks/${id}`)).statusCode).toBe(404);
    const actions = (await get(app, '/v1/audit')).json<{ events: { action: string; target: string }[] }>().events.map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['webhook.created', 'webhook.updated', 'webhook.deleted']));
  });

  it('answers a coded 400 for each bad input, 404 for unknown ids', async () => {
    app = await env.start({}, { webhookLookup: PUBLIC_LOOKUP });
    const cases: [unknown, string][] = [
      [{ url: 'https://hooks.example.com/x', events: ['episode.exploded'] }, 'UnknownWebhookEvent'],
      [{ url: 'https://hooks.example.com/x', events: [] }, 'UnknownWebhookEvent'],
      [{ url: 'ftp://hooks.example.com/x', events: ['episode.opened'] }, 'WebhookUrlInvalid'],
      [{ url: 'not a url', events: ['episode.opened'] }, 'WebhookUrlInvalid'],
      [{ url: 'https://user:pw@hooks.example.com/x', events: ['episode.opened'] }, 'WebhookUrlInvalid'],
      [{ url: 'http://127.0.0.1:8080/x', events: ['episode.opened'] }, 'WebhookUrlForbidden'],
      [{ url: 'http://169.254.169.254/latest', events: ['episode.opened'] }, 'WebhookUrlForbidden'],
      [{ url: 'https://hooks.example.com/x', events: ['episode.opened'], machine_ids: ['bad id!'] }, 'InvalidMachineId'],
      [{ url: 'https://hooks.example.com/x', events: ['episode.opened'], min_severity: 2 }, 'BadRequest'],
      [{ events: ['episode.opened'] }, 'BadRequest'],
    ];
    for (const [body, code] of cases) {
      const response = await post(app, '/v1/webhooks', body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json(), JSON.stringify(body)).toMatchObject({ error: { code } });
    }
    // Unknown body fields are dropped, not stored.
    const extra = await post(app, '/v1/webhooks', { url: 'https://hooks.example.com/x', events: ['episode.opened'], extra: 1 });
    expect(extra.statusCode).toBe(201);
    expect(extra.json()).not.toHaveProperty('extra');
    expect((await get(app, '/v1/webhooks/wh_missing')).json()).toMatchObject({ error: { code: 'WebhookNotFound' } });
    expect((await send(app, 'DELETE', '/v1/webhooks/wh_missing')).statusCode).toBe(404);
    expect((await post(app, '/v1/webhooks/wh_missing/test', {})).statusCode).toBe(404);
  });

  it('refuses a host that resolves to a private address; a name that does not resolve is WebhookUrlUnresolvable', async () => {
    app = await env.start({}, { webhookLookup: (host) => (host === 'internal.example.com' ? Promise.resolve([{ address: '10.0.0.8', family: 4 }]) : Promise.reject(new Error('ENOTFOUND'))) });
    expect((await post(app, '/v1/webhooks', { url: 'https://internal.example.com/x', events: ['episode.opened'] })).json()).toMatchObject({
      error: { code: 'WebhookUrlForbidden' },
    });
    expect((await post(app, '/v1/webhooks', { url: 'https://nowhere.example.com/x', events: ['episode.opened'] })).json()).toMatchObject({
      error: { code: 'WebhookUrlUnresolvable' },
    });
  });

  it('sends a signed test delivery that the Standard Webhooks library verifies, logs it, and rotates the secret with a grace period', async () => {
    app = await env.start({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    const target = await receiver(204);
    const created = (await post(app, '/v1/webhooks', { url: target.url, events: ['episode.opened'] })).json<{ webhook_id: string; secret: string }>();
    const tested = await post(app, `/v1/webhooks/${created.webhook_id}/test`, {});
    expect(tested.statusCode).toBe(200);
    expect(tested.json()).toMatchObject({
      webhook_id: created.webhook_id,
      event: 'webhook.test',
      status: 'delivered',
      attempts: [{ status_code: 204, error: null, at: expect.stringMatching(ISO), latency_ms: expect.any(Number) }],
      payload: { type: 'webhook.test', data: { webhook_id: created.webhook_id } },
    });
    const [request] = target.requests;
    expect(new Webhook(created.secret).verify(request!.body, request!.headers as Record<string, string>)).toMatchObject({ type: 'webhook.test' });
    expect(request!.headers['webhook-id']).toBe(tested.json<{ delivery_id: string }>().delivery_id);

    const rotated = await post(app, `/v1/webhooks/${created.webhook_id}/rotate-secret`, { grace_seconds: 600 });
    expect(rotated.statusCode).toBe(201);
    const { secret: fresh, previous_secret_expires_at } = rotated.json<{ secret: string; previous_secret_expires_at: string }>();
    expect(fresh).not.toBe(created.secret);
    expect(previous_secret_expires_at).toMatch(ISO);
    await post(app, `/v1/webhooks/${created.webhook_id}/test`, {});
    const second = target.requests[1]!;
    for (const secret of [created.secret, fresh]) expect(() => new Webhook(secret).verify(second.body, second.headers as Record<string, string>)).not.toThrow();
    expect((await get(app, `/v1/webhooks/${created.webhook_id}`)).json()).toMatchObject({ previous_secret_expires_at });

    const log = (await get(app, `/v1/webhooks/${created.webhook_id}/deliveries`)).json<{ deliveries: { event: string; status: string }[] }>();
    expect(log.deliveries.map((d) => [d.event, d.status])).toEqual([
      ['webhook.test', 'delivered'],
      ['webhook.test', 'delivered'],
    ]);
    expect((await post(app, `/v1/webhooks/${created.webhook_id}/deliveries/msg_missing/redeliver`, {})).json()).toMatchObject({ error: { code: 'DeliveryNotFound' } });
  });

  it('a test delivery to a receiver that fails is logged failed with its status code', async () => {
    app = await env.start({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    const target = await receiver(500);
    const created = (await post(app, '/v1/webhooks', { url: target.url, events: ['episode.closed'] })).json<{ webhook_id: string }>();
    expect((await post(app, `/v1/webhooks/${created.webhook_id}/test`, {})).json()).toMatchObject({
      status: 'failed',
      attempts: [{ status_code: 500, error: 'HTTP 500' }],
    });
  });
});
