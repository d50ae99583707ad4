// Deliveries verify with the Standard Webhooks reference library, also during a rotation.
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signDelivery, signingSecrets } from '../src/index.js';

describe('Standard Webhooks signing', () => {
  const body = '{"type":"episode.opened","timestamp":"2026-01-01T00:00:00.000Z","data":{}}';

  it('signs id.timestamp.body so that the library verifies it, and refuses a changed body', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const at = new Date();
    const headers = signDelivery([secret], 'msg_1', at, body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('opened', 'closed'), { ...headers })).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, { ...headers })).toThrow();
  });

  it('signs with the old secret too until its grace period ends', () => {
    const old = newWebhookSecret();
    const current = newWebhookSecret();
    const now = new Date();
    const secrets = [
      { secret: current, expiresAt: null },
      { secret: old, expiresAt: new Date(now.getTime() + 60_000) },
    ];
    const headers = signDelivery(signingSecrets(secrets, now), 'msg_2', now, body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(old).verify(body, { ...headers })).not.toThrow();
    expect(() => new Webhook(current).verify(body, { ...headers })).not.toThrow();
    const later = new Date(now.getTime() + 120_000);
    expect(signingSecrets(secrets, later)).toEqual([current]);
  });
});
