// An organization's webhook targets: /v1/webhooks. Creating one answers its signing secret once;
// a rotation issues a new one while the old one signs too for a grace period; a target that kept
// failing is disabled with the reason and re-enabled by PATCH {"enabled": true}. Deliveries are
// the dispatcher's (@adp/alerts): the log, a test delivery and a redelivery on request.
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { TARGET_REFUSALS, TargetRefused, newWebhookSecret, resolveTarget, type Lookup, type WebhookDispatcher } from '@adp/alerts';
import { WEBHOOK_EVENTS, type AlertingStore, type WebhookDelivery, type WebhookEvent, type WebhookTarget } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { MACHINE_ID_PATTERN, MACHINE_ID_RULE } from '../native/request.js';
import { audit } from '../tenancy/audit.js';
import {
  CreateWebhookBody,
  CreatedWebhook,
  DEFAULT_GRACE_SECONDS,
  DeliveriesQuery,
  DeliveryList,
  DeliveryParams,
  DeliveryView,
  ErrorBody,
  RotateSecretBody,
  RotatedSecret,
  UpdateWebhookBody,
  WebhookIdParams,
  WebhookList,
  WebhookView,
} from './schemas.js';

export interface WebhookRoutesOptions {
  /** Null without the alerting store (every route then answers 503). */
  readonly dispatcher: WebhookDispatcher | null;
  readonly allowPrivate: boolean;
  readonly nowMs?: () => number;
  /** Name resolution for the address check (tests); default the system's. */
  readonly lookup?: Lookup;
}

const TAGS = ['webhooks'];
const iso = (date: Date): string => date.toISOString();

function alertingOf(request: FastifyRequest): AlertingStore {
  const alerting = request.server.store.alerting;
  if (!alerting) throw new AppError(ERRORS.ServiceUnavailable, 'Webhooks need the platform store, which this server runs without.');
  return alerting;
}

export function webhookView(target: WebhookTarget, now: Date) {
  const previous = target.secrets.slice(1).find((s) => s.expiresAt !== null && s.expiresAt.getTime() > now.getTime());
  return {
    webhook_id: target.webhookId,
    url: target.url,
    events: [...target.events],
    machine_ids: target.machineIds === null ? null : [...target.machineIds],
    min_severity: target.minSeverity,
    description: target.description,
    enabled: target.disabledAt === null,
    disabled_at: target.disabledAt === null ? null : iso(target.disabledAt),
    disabled_reason: target.disabledReason,
    previous_secret_expires_at: previous?.expiresAt ? iso(previous.expiresAt) : null,
    created_at: iso(target.createdAt),
    updated_at: iso(target.updatedAt),
  };
}

export function deliveryView(delivery: WebhookDelivery) {
  let payload: unknown;
  try {
    payload = JSON.parse(delivery.payload);
  } catch {
    payload = delivery.payload;
  }
  return {
    delivery_id: delivery.deliveryId,
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event: delivery.event,
    status: delivery.status,
    attempts: delivery.attempts.map((a) => ({ at: iso(a.at), status_code: a.statusCode, latency_ms: a.latencyMs, error: a.error })),
    payload,
    created_at: iso(delivery.createdAt),
    updated_at: iso(delivery.updatedAt),
  };
}

function parseEvents(events: readonly string[]): WebhookEvent[] {
  if (events.length === 0) throw new AppError(ERRORS.UnknownWebhookEvent, `events must name at least one of ${WEBHOOK_EVENTS.join(', ')}.`);
  const unknown = events.find((event) => !(WEBHOOK_EVENTS as readonly string[]).includes(event));
  if (unknown !== undefined) {
    throw new AppError(ERRORS.UnknownWebhookEvent, `Unknown event '${unknown.slice(0, 64)}': events are ${WEBHOOK_EVENTS.join(', ')}.`);
  }
  return [...new Set(events)] as WebhookEvent[];
}

function parseMachineIds(ids: readonly string[] | null | undefined): string[] | null {
  if (ids === undefined || ids === null) return null;
  const bad = ids.find((id) => !MACHINE_ID_PATTERN.test(id));
  if (bad !== undefined) throw new AppError(ERRORS.InvalidMachineId, `Each machine_ids entry must be ${MACHINE_ID_RULE}.`);
  return [...new Set(ids)];
}

const REFUSAL_ERRORS = {
  [TARGET_REFUSALS.invalid]: ERRORS.WebhookUrlInvalid,
  [TARGET_REFUSALS.private]: ERRORS.WebhookUrlForbidden,
  [TARGET_REFUSALS.unresolvable]: ERRORS.WebhookUrlUnresolvable,
} as const;

export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, options) => {
  const now = (): Date => new Date(options.nowMs ? options.nowMs() : Date.now());

  function dispatcherOf(): WebhookDispatcher {
    if (!options.dispatcher) throw new AppError(ERRORS.ServiceUnavailable, 'Webhooks need the platform store, which this server runs without.');
    return options.dispatcher;
  }

  async function checkUrl(url: string): Promise<string> {
    try {
      await resolveTarget(url, { allowPrivate: options.allowPrivate, ...(options.lookup ? { lookup: options.lookup } : {}) });
    } catch (err) {
      if (err instanceof TargetRefused) throw new AppError(REFUSAL_ERRORS[err.code], err.message);
      throw err;
    }
    return url;
  }

  async function targetOf(request: FastifyRequest, webhookId: string): Promise<WebhookTarget> {
    const target = await alertingOf(request).getWebhook(request.auth.orgId, webhookId);
    if (target === null) throw new AppError(ERRORS.WebhookNotFound, `Your organization has no webhook ${webhookId.slice(0, 128)}.`);
    return target;
  }

  app.post(
    '/v1/webhooks',
    {
      schema: {
        summary: 'Create a webhook target (its signing secret is shown once)',
        tags: TAGS,
        body: CreateWebhookBody,
        response: { 201: CreatedWebhook, 400: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      const alerting = alertingOf(request);
      const events = parseEvents(request.body.events);
      const machineIds = parseMachineIds(request.body.machine_ids);
      const url = await checkUrl(request.body.url);
      const at = now();
      const secret = newWebhookSecret();
      const target: WebhookTarget = {
        webhookId: `wh_${randomBytes(12).toString('hex')}`,
        orgId: request.auth.orgId,
        url,
        events,
        machineIds,
        minSeverity: request.body.min_severity ?? 0,
        description: request.body.description ?? '',
        secrets: [{ secret, expiresAt: null }],
        disabledAt: null,
        disabledReason: null,
        createdAt: at,
        updatedAt: at,
      };
      await alerting.putWebhook(target);
      options.dispatcher?.targetsChanged(target.orgId);
      await audit(request, 'webhook.created', `webhook:${target.webhookId}`);
      return reply.code(201).send({ ...webhookView(target, at), secret });
    },
  );

  app.get(
    '/v1/webhooks',
    { schema: { summary: "Your organization's webhook targets (never their secrets)", tags: TAGS, response: { 200: WebhookList, 503: ErrorBody } } },
    async (request) => {
      const at = now();
      return { webhooks: (await alertingOf(request).listWebhooks(request.auth.orgId)).map((t) => webhookView(t, at)) };
    },
  );

  app.get(
    '/v1/webhooks/:webhook_id',
    { schema: { summary: 'One webhook target', tags: TAGS, params: WebhookIdParams, response: { 200: WebhookView, 404: ErrorBody, 503: ErrorBody } } },
    async (request) => webhookView(await targetOf(request, request.params.webhook_id), now()),
  );

  app.patch(
    '/v1/webhooks/:webhook_id',
    {
      schema: {
        summary: 'Change a webhook target; {"enabled": true} re-enables a disabled one',
        tags: TAGS,
        params: WebhookIdParams,
        body: UpdateWebhookBody,
        response: { 200: WebhookView, 400: ErrorBody, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const target = await targetOf(request, request.params.webhook_id);
      const body = request.body;
      const at = now();
      const enabled = body.enabled;
      const updated: WebhookTarget = {
        ...target,
        ...(body.url !== undefined ? { url: await checkUrl(body.url) } : {}),
        ...(body.events !== undefined ? { events: parseEvents(body.events) } : {}),
        ...(body.machine_ids !== undefined ? { machineIds: parseMachineIds(body.machine_ids) } : {}),
        ...(body.min_severity !== undefined ? { minSeverity: body.min_severity } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(enabled === true ? { disabledAt: null, disabledReason: null } : {}),
        ...(enabled === false && target.disabledAt === null ? { disabledAt: at, disabledReason: 'disabled by request' } : {}),
        updatedAt: at,
      };
      await alertingOf(request).putWebhook(updated);
      options.dispatcher?.targetsChanged(target.orgId);
      await audit(request, 'webhook.updated', `webhook:${target.webhookId}`);
      return webhookView(updated, at);
    },
  );

  app.delete(
    '/v1/webhooks/:webhook_id',
    {
      schema: {
        summary: 'Delete a webhook target (its delivery log stays readable until then only)',
        tags: TAGS,
        params: WebhookIdParams,
        response: { 200: WebhookView, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const target = await targetOf(request, request.params.webhook_id);
      await alertingOf(request).deleteWebhook(target.orgId, target.webhookId);
      options.dispatcher?.targetsChanged(target.orgId);
      await audit(request, 'webhook.deleted', `webhook:${target.webhookId}`);
      return webhookView(target, now());
    },
  );

  app.post(
    '/v1/webhooks/:webhook_id/rotate-secret',
    {
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) (request as { body: unknown }).body = {};
      },
      schema: {
        summary: 'Issue a new signing secret; the old one signs too for grace_seconds',
        tags: TAGS,
        params: WebhookIdParams,
        body: RotateSecretBody,
        response: { 201: RotatedSecret, 400: ErrorBody, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      const target = await targetOf(request, request.params.webhook_id);
      const at = now();
      const graceSeconds = request.body.grace_seconds ?? DEFAULT_GRACE_SECONDS;
      const secret = newWebhookSecret();
      const previous = target.secrets[0]!;
      const expiresAt = graceSeconds === 0 ? null : new Date(at.getTime() + graceSeconds * 1000);
      const updated: WebhookTarget = {
        ...target,
        // Only the secret just replaced keeps signing; one rotated out before it stops now.
        secrets: expiresAt === null ? [{ secret, expiresAt: null }] : [{ secret, expiresAt: null }, { secret: previous.secret, expiresAt }],
        updatedAt: at,
      };
      await alertingOf(request).putWebhook(updated);
      options.dispatcher?.targetsChanged(target.orgId);
      await audit(request, 'webhook.secret_rotated', `webhook:${target.webhookId}`);
      return reply.code(201).send({ webhook_id: target.webhookId, secret, previous_secret_expires_at: expiresAt === null ? null : iso(expiresAt) });
    },
  );

  app.post(
    '/v1/webhooks/:webhook_id/test',
    {
      schema: {
        summary: 'Send a signed webhook.test event to the target now, once; answers the delivery',
        tags: TAGS,
        params: WebhookIdParams,
        response: { 200: DeliveryView, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const target = await targetOf(request, request.params.webhook_id);
      return deliveryView(await dispatcherOf().sendTest(target));
    },
  );

  app.get(
    '/v1/webhooks/:webhook_id/deliveries',
    {
      schema: {
        summary: "The target's delivery log, newest first: attempts, status, latency, response code",
        tags: TAGS,
        params: WebhookIdParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveryList, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const target = await targetOf(request, request.params.webhook_id);
      const deliveries = await alertingOf(request).listDeliveries(target.orgId, target.webhookId, request.query.limit ?? 100);
      return { deliveries: deliveries.map(deliveryView) };
    },
  );

  app.post(
    '/v1/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
    {
      schema: {
        summary: 'Deliver a logged delivery again (same webhook-id and body) with a fresh retry schedule',
        tags: TAGS,
        params: DeliveryParams,
        response: { 202: DeliveryView, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      const target = await targetOf(request, request.params.webhook_id);
      const delivery = await alertingOf(request).getDelivery(target.orgId, request.params.delivery_id);
      if (delivery === null || delivery.webhookId !== target.webhookId) {
        throw new AppError(ERRORS.DeliveryNotFound, `Webhook ${target.webhookId} has no delivery ${request.params.delivery_id.slice(0, 128)}.`);
      }
      return reply.code(202).send(deliveryView(await dispatcherOf().redeliver(delivery)));
    },
  );
};
