// Signing per the Standard Webhooks specification, with its reference library: `webhook-id`,
// `webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
// id.timestamp.body>`, one per secret in force, space-separated, so a receiver holding either
// the new or the old secret during a rotation verifies the delivery).
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookSecret } from '@adp/store';

/** A new signing secret: `whsec_` and 32 random bytes in base64, as the libraries read it. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The secrets that sign at `now`: the current one and those whose grace period has not ended. */
export function signingSecrets(secrets: readonly WebhookSecret[], now: Date): string[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt.getTime() > now.getTime()).map((s) => s.secret);
}

export interface SignedHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

export function signDelivery(secrets: readonly string[], messageId: string, at: Date, body: string): SignedHeaders {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(messageId, at, body));
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
