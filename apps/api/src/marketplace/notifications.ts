// The marketplace's subscription notifications (`POST /marketplace/notifications`), an Amazon SNS
// HTTP(S) subscription of MARKETPLACE_SNS_TOPIC_ARN. Every message is verified (sns.ts) before
// anything is done; a message of another topic, unsigned or forged, is refused and ignored.
//
// - SubscriptionConfirmation: confirmed by fetching its SubscribeURL, only on the topic region's
//   SNS host.
// - subscribe-success, subscribe-fail, entitlement-updated: logged (the landing page provisions).
// - unsubscribe-pending: the customer's final metering now: every finished hour still open in
//   the acceptance window, and the current hour with the calls counted so far (the marketplace
//   takes records for about an hour after this message; calls later in that hour are not billed).
// - unsubscribe-success: the same final metering (idempotent), then every key of the
//   organization is revoked on every replica. A later landing of the customer issues a new key.
// A failure of the final metering answers 503 and revokes nothing, so that SNS delivers again.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HOUR_MS, type Organization } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { ApiKeyAuthenticator } from '../tenancy/authentication.js';
import { exportHour, type MeteringExportOptions } from './export.js';
import { withinWindow } from './scheduler.js';
import { parseSnsMessage, trustedSnsUrl, type SnsMessage, type SnsVerifier } from './sns.js';

/** Largest SNS message body (SNS's own limit is 256 KiB of message). */
export const MAX_NOTIFICATION_BYTES = 300 * 1024;

export const SUBSCRIPTION_ACTIONS = ['subscribe-success', 'subscribe-fail', 'unsubscribe-pending', 'unsubscribe-success', 'entitlement-updated'] as const;
export type SubscriptionAction = (typeof SUBSCRIPTION_ACTIONS)[number];

export interface NotificationOptions {
  readonly topicArn: string;
  readonly productCode: string;
  readonly verifier: SnsVerifier;
  readonly hostPattern: RegExp | undefined;
  readonly timeoutMs: number;
  /** Null when the store keeps no metering: then no final metering runs. */
  readonly metering: Omit<MeteringExportOptions, 'log'> | null;
  readonly authenticator: ApiKeyAuthenticator;
}

interface SubscriptionEvent {
  readonly action: SubscriptionAction;
  readonly customerIdentifier: string | null;
  readonly awsAccountId: string | null;
  readonly productCode: string | null;
}

function field(message: Record<string, unknown>, ...names: string[]): string | null {
  for (const name of names) {
    const value = message[name];
    if (typeof value === 'string' && value !== '') return value;
  }
  return null;
}

function subscriptionEvent(message: SnsMessage): SubscriptionEvent {
  let body: unknown;
  try {
    body = JSON.parse(message.Message);
  } catch {
    throw new AppError(ERRORS.SnsMessageInvalid, 'The notification\'s Message is not JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new AppError(ERRORS.SnsMessageInvalid, 'The notification\'s Message is not a JSON object.');
  const fields = body as Record<string, unknown>;
  const action = field(fields, 'action');
  if (action === null || !SUBSCRIPTION_ACTIONS.includes(action as SubscriptionAction)) {
    throw new AppError(ERRORS.SnsMessageInvalid, `The notification's action ${JSON.stringify(action)} is not handled.`);
  }
  return {
    action: action as SubscriptionAction,
    customerIdentifier: field(fields, 'customer-identifier', 'CustomerIdentifier'),
    awsAccountId: field(fields, 'customer-aws-account-id', 'CustomerAWSAccountId'),
    productCode: field(fields, 'product-code', 'ProductCode'),
  };
}

async function findOrganization(options: NotificationOptions, store: MeteringExportOptions['store'], event: SubscriptionEvent): Promise<Organization | null> {
  if (event.customerIdentifier !== null) {
    const found = await store.findOrganizationByExternalId(`aws:${event.customerIdentifier}`);
    if (found) return found;
  }
  if (event.awsAccountId === null) return null;
  const byAccount = await store.findOrganizationByExternalId(`aws:${event.awsAccountId}`);
  if (byAccount) return byAccount;
  const record = (await options.metering?.metering.customers())?.find((customer) => customer.awsAccountId === event.awsAccountId);
  return record === undefined ? null : store.getOrganization(record.orgId);
}

/** Exports the organization's open finished hours in the window and its current hour so far. */
async function finalMetering(metering: Omit<MeteringExportOptions, 'log'>, request: FastifyRequest, orgId: string): Promise<void> {
  const options = { ...metering, log: request.log };
  const nowMs = metering.nowMs();
  const current = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  for (let hourMs = current - 24 * HOUR_MS; hourMs <= current; hourMs += HOUR_MS) {
    if (withinWindow(hourMs, nowMs)) await exportHour(options, hourMs, orgId);
  }
}

export async function notificationRoutes(app: FastifyInstance, options: NotificationOptions): Promise<void> {
  // SNS posts its JSON as text/plain; only this plugin's routes read that content type.
  app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: MAX_NOTIFICATION_BYTES }, (_request, body, done) => done(null, body));

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const message = parseSnsMessage(request.body);
    if (message.TopicArn !== options.topicArn) {
      throw new AppError(ERRORS.SnsSignatureInvalid, 'The SNS message is not from the marketplace topic this service subscribes to.');
    }
    await options.verifier.verify(message);
    const log = request.log.child({ snsMessageId: message.MessageId, snsType: message.Type });

    if (message.Type === 'SubscriptionConfirmation') {
      const url = trustedSnsUrl(message.SubscribeURL ?? '', message.TopicArn, options.hostPattern);
      if (url === null) throw new AppError(ERRORS.SnsSignatureInvalid, 'The SubscribeURL is not an SNS host of the topic\'s region.');
      try {
        const response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(options.timeoutMs) });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`status ${response.status}`);
      } catch (cause) {
        throw new AppError(ERRORS.MarketplaceUnavailable, 'The SNS subscription could not be confirmed.', { cause });
      }
      log.info({ topicArn: message.TopicArn }, 'marketplace notifications: SNS subscription confirmed');
      return reply.code(200).send({ status: 'confirmed' });
    }
    if (message.Type === 'UnsubscribeConfirmation') {
      log.warn({ topicArn: message.TopicArn }, 'marketplace notifications: SNS says this endpoint was unsubscribed from the topic');
      return reply.code(200).send({ status: 'ignored' });
    }

    const event = subscriptionEvent(message);
    if (event.productCode !== null && event.productCode !== options.productCode) {
      log.warn({ action: event.action, productCode: event.productCode }, 'marketplace notification for another product ignored');
      return reply.code(200).send({ status: 'ignored' });
    }
    const store = options.metering?.store;
    const organization = store ? await findOrganization(options, store, event) : null;
    const context = { action: event.action, customerIdentifier: event.customerIdentifier, awsAccountId: event.awsAccountId, orgId: organization?.id ?? null };

    if (event.action === 'unsubscribe-pending' || event.action === 'unsubscribe-success') {
      if (organization !== null && options.metering !== null) await finalMetering(options.metering, request, organization.id);
      if (event.action === 'unsubscribe-success' && organization !== null && store) {
        let revoked = 0;
        for (const key of await store.listApiKeys(organization.id)) {
          if (key.revokedAt === null && (await options.authenticator.revoke(organization.id, key.id))) revoked += 1;
        }
        log.info({ ...context, revokedKeys: revoked }, 'marketplace subscription ended: final metering sent, keys revoked');
        return reply.code(200).send({ status: 'processed' });
      }
      log.info(context, organization === null ? 'marketplace notification for an unknown customer' : 'marketplace unsubscribe pending: final metering sent');
      return reply.code(200).send({ status: 'processed' });
    }
    const level = event.action === 'subscribe-fail' ? 'warn' : 'info';
    log[level](context, `marketplace notification: ${event.action}`);
    return reply.code(200).send({ status: 'processed' });
  };

  app.post(
    '/marketplace/notifications',
    {
      config: { public: true },
      schema: {
        summary: "The marketplace's subscription notifications (Amazon SNS HTTP(S) endpoint; signature verified)",
        tags: ['marketplace'],
        security: [],
      },
    },
    handle,
  );
}
