// The alerting port: an organization's webhook targets, the log of their deliveries, and the
// feedback people give on a machine's episodes. Each record is kept whole, as one document per
// (kind, organization, id): the adapters (embedded/duckdb-alerting.ts, clickhouse/clickhouse-
// alerting.ts) store the JSON this module writes and read it back through it, so both refuse and
// return exactly the same things. A delivery is two documents: its state (status, attempts),
// replaced at each attempt, and its body, written once under the SHA-256 of the payload (so the
// deliveries of one alert to many targets share one) and never rewritten; a delivery document
// written before bodies were apart holds its payload itself and is read as it is. Targets keep their signing secrets in the clear: the platform
// must sign with them (unlike API keys, which are only ever compared by hash).
import { createHash } from 'node:crypto';
import { StoreError } from './errors.js';

export const WEBHOOK_EVENTS = ['episode.opened', 'episode.closed', 'regime.changed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookSecret {
  /** `whsec_` and the base64 of the key, as the Standard Webhooks libraries take it. */
  readonly secret: string;
  /** When a rotated-out secret stops signing; null for the current one. */
  readonly expiresAt: Date | null;
}

export interface WebhookTarget {
  readonly webhookId: string;
  readonly orgId: string;
  readonly url: string;
  readonly events: readonly WebhookEvent[];
  /** Only these machines' alerts; null: every machine's. */
  readonly machineIds: readonly string[] | null;
  /** Only alerts whose peak severity is at least this (0..1). */
  readonly minSeverity: number;
  readonly description: string;
  /** The current secret first; older ones sign too until they expire (a rotation's grace period). */
  readonly secrets: readonly WebhookSecret[];
  /** When deliveries stopped because they kept failing (or null while enabled). */
  readonly disabledAt: Date | null;
  readonly disabledReason: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryAttempt {
  readonly at: Date;
  /** The receiver's HTTP status; null when there was no answer (refused, timed out, reset). */
  readonly statusCode: number | null;
  readonly latencyMs: number;
  /** Why the attempt failed (null when the receiver answered 2xx). */
  readonly error: string | null;
}

export interface WebhookDelivery {
  /** Also the `webhook-id` header: the same on every attempt, so a receiver dedupes by it. */
  readonly deliveryId: string;
  readonly orgId: string;
  readonly webhookId: string;
  /** The alert's event id (`test` deliveries have their own). */
  readonly eventId: string;
  /** `episode.opened`, `episode.closed`, `regime.changed` or `webhook.test`. */
  readonly event: string;
  /** The exact body sent (JSON), signed anew with each attempt's timestamp. */
  readonly payload: string;
  readonly status: DeliveryStatus;
  /** Oldest first. */
  readonly attempts: readonly DeliveryAttempt[];
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export const FEEDBACK_LABELS = ['not_anomaly', 'anomaly'] as const;
export type FeedbackLabel = (typeof FEEDBACK_LABELS)[number];

/** What the marked span looked like, for alerting to recognise it later (see @adp/alerts feedback.ts). */
export interface FeedbackPattern {
  /** Lowest and highest value of the span's points that drove the label (its flagged points, else all). */
  readonly low: number;
  readonly high: number;
  /** Whether those points lay above (`up`), below (`down`) or on both sides of the expected value. */
  readonly direction: 'up' | 'down' | 'both';
  /** Points of the span the pattern was taken from. */
  readonly points: number;
}

export interface MachineFeedback {
  readonly feedbackId: string;
  readonly orgId: string;
  readonly machineId: string;
  /** The span, inclusive start, exclusive end, epoch ms. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly label: FeedbackLabel;
  /** Null when the span held no stored points (it then changes nothing). */
  readonly pattern: FeedbackPattern | null;
  readonly createdAt: Date;
}

/**
 * An alert a worker raised, as the dispatcher recorded it: the machine's log of its episodes and
 * regime changes, and which deliveries each alert gave rise to (one per target that wanted it).
 */
export interface MachineAlert {
  /** The alert's event id: the same each time a replayed batch raises it again. */
  readonly eventId: string;
  readonly orgId: string;
  readonly machineId: string;
  /** The machine itself, or one of its channel series (`<machine>:<channel>`). */
  readonly seriesId: string;
  /** `episode.opened`, `episode.closed` or `regime.changed`. */
  readonly event: string;
  /** When what it reports began (the episode's first flagged point, the regime's first point): the log's order. */
  readonly startedAt: Date;
  /** The body its deliveries carry (JSON, the webhook wire shape). */
  readonly payload: string;
  readonly deliveryIds: readonly string[];
  readonly raisedAt: Date;
}

export interface AlertingStore {
  /** Creates or replaces the target (by organization and id). */
  putWebhook(target: WebhookTarget): Promise<void>;
  getWebhook(orgId: string, webhookId: string): Promise<WebhookTarget | null>;
  /** The organization's targets, oldest first. */
  listWebhooks(orgId: string): Promise<readonly WebhookTarget[]>;
  /** Removes the target (its deliveries stay in the log); false when there was none. */
  deleteWebhook(orgId: string, webhookId: string): Promise<boolean>;
  /** Creates or replaces the delivery (by organization and id). */
  putDelivery(delivery: WebhookDelivery): Promise<void>;
  /** Creates or replaces several deliveries in one write (a dispatcher's batch). */
  putDeliveries(deliveries: readonly WebhookDelivery[]): Promise<void>;
  getDelivery(orgId: string, deliveryId: string): Promise<WebhookDelivery | null>;
  /** Those of the deliveries named that exist (in no particular order): one read for a batch. */
  getDeliveries(orgId: string, deliveryIds: readonly string[]): Promise<readonly WebhookDelivery[]>;
  /** The target's deliveries, newest first, at most `limit`. */
  listDeliveries(orgId: string, webhookId: string, limit: number): Promise<readonly WebhookDelivery[]>;
  /** Deliveries of any organization still pending (a dispatcher resumes them after a restart), oldest first. */
  pendingDeliveries(limit: number): Promise<readonly WebhookDelivery[]>;
  putFeedback(feedback: MachineFeedback): Promise<void>;
  /** The organization's feedback (on one machine, or all), oldest first. */
  listFeedback(orgId: string, machineId?: string): Promise<readonly MachineFeedback[]>;
  deleteFeedback(orgId: string, feedbackId: string): Promise<boolean>;
  /**
   * Removes the feedback on the machine's own series and, with `channelPrefix`, on every series
   * whose id starts with it (its channels, `<machine>:<channel>`); how many.
   */
  deleteMachineFeedback(orgId: string, machineId: string, channelPrefix: string | null): Promise<number>;
  /** Records the alerts (replacing any with the same event id) and creates or replaces the deliveries, in one write. */
  recordAlerts(alerts: readonly MachineAlert[], deliveries: readonly WebhookDelivery[]): Promise<void>;
  /** The machine's alerts, latest start first (ties: by event id, descending), at most `limit`. */
  listAlerts(orgId: string, machineId: string, limit: number): Promise<readonly MachineAlert[]>;
  /** Removes every alert of the machine (its deliveries stay in the targets' logs); how many. */
  deleteAlerts(orgId: string, machineId: string): Promise<number>;
}

/** The document kinds, as the adapters' `kind` column names them. */
export const ALERTING_KINDS = { webhook: 'webhook', delivery: 'delivery', body: 'body', feedback: 'feedback', alert: 'alert' } as const;
export type AlertingKind = (typeof ALERTING_KINDS)[keyof typeof ALERTING_KINDS];

/** One stored document: the columns both adapters keep. */
export interface AlertingRow {
  readonly kind: AlertingKind;
  readonly orgId: string;
  readonly id: string;
  /** The target of a delivery, the series of a feedback, the machine of an alert; empty for a target or a body. */
  readonly parent: string;
  /** A delivery's status; empty for the others. */
  readonly status: string;
  /** For ordering: creation time, epoch ms. */
  readonly createdMs: number;
  readonly doc: string;
}

const MAX_ID = 256;
const MAX_TEXT = 4096;
const MAX_PAYLOAD = 1024 * 1024;

function invalid(operation: string, problem: string): never {
  throw new StoreError('STORE_INVALID_ARGUMENT', operation, problem);
}

export function validateId(operation: string, name: string, value: unknown): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID) invalid(operation, `${name} must be 1 to ${MAX_ID} characters`);
}

function date(operation: string, name: string, value: unknown): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) invalid(operation, `${name} must be a valid Date`);
}

export function validateLimit(operation: string, limit: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) invalid(operation, 'limit must be an integer from 1 to 10000');
}

export function validateRef(operation: string, orgId: string, recordId: string): void {
  validateId(operation, 'orgId', orgId);
  validateId(operation, 'id', recordId);
}

export function webhookRow(target: WebhookTarget): AlertingRow {
  const operation = 'putWebhook';
  validateRef(operation, target.orgId, target.webhookId);
  if (typeof target.url !== 'string' || target.url.length > MAX_TEXT) invalid(operation, 'url must be a string');
  if (!Array.isArray(target.events) || target.events.some((event) => !(WEBHOOK_EVENTS as readonly string[]).includes(event))) {
    invalid(operation, `events must be some of ${WEBHOOK_EVENTS.join(', ')}`);
  }
  if (!(typeof target.minSeverity === 'number' && target.minSeverity >= 0 && target.minSeverity <= 1)) invalid(operation, 'minSeverity must be 0..1');
  if (target.secrets.length === 0) invalid(operation, 'a target needs a secret');
  date(operation, 'createdAt', target.createdAt);
  date(operation, 'updatedAt', target.updatedAt);
  const doc = {
    webhook_id: target.webhookId,
    org_id: target.orgId,
    url: target.url,
    events: target.events,
    machine_ids: target.machineIds,
    min_severity: target.minSeverity,
    description: target.description,
    secrets: target.secrets.map((s) => ({ secret: s.secret, expires_ms: s.expiresAt?.getTime() ?? null })),
    disabled_ms: target.disabledAt?.getTime() ?? null,
    disabled_reason: target.disabledReason,
    created_ms: target.createdAt.getTime(),
    updated_ms: target.updatedAt.getTime(),
  };
  return { kind: 'webhook', orgId: target.orgId, id: target.webhookId, parent: '', status: '', createdMs: doc.created_ms, doc: JSON.stringify(doc) };
}

const at = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

export function webhookOf(doc: string): WebhookTarget {
  const d = JSON.parse(doc) as {
    webhook_id: string;
    org_id: string;
    url: string;
    events: WebhookEvent[];
    machine_ids: string[] | null;
    min_severity: number;
    description: string;
    secrets: { secret: string; expires_ms: number | null }[];
    disabled_ms: number | null;
    disabled_reason: string | null;
    created_ms: number;
    updated_ms: number;
  };
  return {
    webhookId: d.webhook_id,
    orgId: d.org_id,
    url: d.url,
    events: d.events,
    machineIds: d.machine_ids,
    minSeverity: d.min_severity,
    description: d.description,
    secrets: d.secrets.map((s) => ({ secret: s.secret, expiresAt: at(s.expires_ms) })),
    disabledAt: at(d.disabled_ms),
    disabledReason: d.disabled_reason,
    createdAt: new Date(d.created_ms),
    updatedAt: new Date(d.updated_ms),
  };
}

/** A delivery body's id: the SHA-256 of its payload, in hex. */
export function bodyId(payload: string): string {
  return createHash('sha256').update(payload).digest('hex');
}

/** A delivery as stored: its state document, and its body, written once. */
export function deliveryRows(delivery: WebhookDelivery): { readonly state: AlertingRow; readonly body: AlertingRow } {
  const operation = 'putDelivery';
  validateRef(operation, delivery.orgId, delivery.deliveryId);
  validateId(operation, 'webhookId', delivery.webhookId);
  validateId(operation, 'eventId', delivery.eventId);
  if (!(DELIVERY_STATUSES as readonly string[]).includes(delivery.status)) invalid(operation, `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
  if (typeof delivery.payload !== 'string' || delivery.payload.length > MAX_PAYLOAD) invalid(operation, 'payload must be a string of at most 1 MiB');
  date(operation, 'createdAt', delivery.createdAt);
  const body = bodyId(delivery.payload);
  const doc = {
    delivery_id: delivery.deliveryId,
    org_id: delivery.orgId,
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event: delivery.event,
    body_id: body,
    status: delivery.status,
    attempts: delivery.attempts.map((a) => ({ at_ms: a.at.getTime(), status_code: a.statusCode, latency_ms: a.latencyMs, error: a.error })),
    created_ms: delivery.createdAt.getTime(),
    updated_ms: delivery.updatedAt.getTime(),
  };
  return {
    state: {
      kind: 'delivery',
      orgId: delivery.orgId,
      id: delivery.deliveryId,
      parent: delivery.webhookId,
      status: delivery.status,
      createdMs: doc.created_ms,
      doc: JSON.stringify(doc),
    },
    body: { kind: 'body', orgId: delivery.orgId, id: body, parent: '', status: '', createdMs: doc.created_ms, doc: delivery.payload },
  };
}

export interface DeliveryDoc {
  delivery_id: string;
  org_id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  /** The body's id; absent in documents written before bodies were apart, which hold `payload`. */
  body_id?: string;
  payload?: string;
  status: DeliveryStatus;
  attempts: { at_ms: number; status_code: number | null; latency_ms: number; error: string | null }[];
  created_ms: number;
  updated_ms: number;
}

export function deliveryOf(d: DeliveryDoc, payload: string): WebhookDelivery {
  return {
    deliveryId: d.delivery_id,
    orgId: d.org_id,
    webhookId: d.webhook_id,
    eventId: d.event_id,
    event: d.event,
    payload,
    status: d.status,
    attempts: d.attempts.map((a) => ({ at: new Date(a.at_ms), statusCode: a.status_code, latencyMs: a.latency_ms, error: a.error })),
    createdAt: new Date(d.created_ms),
    updatedAt: new Date(d.updated_ms),
  };
}

export function feedbackRow(feedback: MachineFeedback): AlertingRow {
  const operation = 'putFeedback';
  validateRef(operation, feedback.orgId, feedback.feedbackId);
  validateId(operation, 'machineId', feedback.machineId);
  if (!(FEEDBACK_LABELS as readonly string[]).includes(feedback.label)) invalid(operation, `label must be one of ${FEEDBACK_LABELS.join(', ')}`);
  if (!Number.isFinite(feedback.fromMs) || !Number.isFinite(feedback.toMs) || feedback.toMs <= feedback.fromMs) invalid(operation, 'toMs must be after fromMs');
  date(operation, 'createdAt', feedback.createdAt);
  const doc = {
    feedback_id: feedback.feedbackId,
    org_id: feedback.orgId,
    machine_id: feedback.machineId,
    from_ms: feedback.fromMs,
    to_ms: feedback.toMs,
    label: feedback.label,
    pattern: feedback.pattern,
    created_ms: feedback.createdAt.getTime(),
  };
  return {
    kind: 'feedback',
    orgId: feedback.orgId,
    id: feedback.feedbackId,
    parent: feedback.machineId,
    status: '',
    createdMs: doc.created_ms,
    doc: JSON.stringify(doc),
  };
}

export function feedbackOf(doc: string): MachineFeedback {
  const d = JSON.parse(doc) as {
    feedback_id: string;
    org_id: string;
    machine_id: string;
    from_ms: number;
    to_ms: number;
    label: FeedbackLabel;
    pattern: FeedbackPattern | null;
    created_ms: number;
  };
  return {
    feedbackId: d.feedback_id,
    orgId: d.org_id,
    machineId: d.machine_id,
    fromMs: d.from_ms,
    toMs: d.to_ms,
    label: d.label,
    pattern: d.pattern,
    createdAt: new Date(d.created_ms),
  };
}

/** An alert's event id names its series, so it may be longer than other ids. */
const MAX_EVENT_ID = 1024;

export function alertRow(alert: MachineAlert): AlertingRow {
  const operation = 'recordAlerts';
  validateId(operation, 'orgId', alert.orgId);
  if (typeof alert.eventId !== 'string' || alert.eventId.length === 0 || alert.eventId.length > MAX_EVENT_ID) {
    invalid(operation, `eventId must be 1 to ${MAX_EVENT_ID} characters`);
  }
  validateId(operation, 'machineId', alert.machineId);
  validateId(operation, 'seriesId', alert.seriesId);
  validateId(operation, 'event', alert.event);
  if (typeof alert.payload !== 'string' || alert.payload.length > MAX_PAYLOAD) invalid(operation, 'payload must be a string of at most 1 MiB');
  for (const deliveryId of alert.deliveryIds) validateId(operation, 'deliveryIds[]', deliveryId);
  date(operation, 'startedAt', alert.startedAt);
  date(operation, 'raisedAt', alert.raisedAt);
  const doc = {
    event_id: alert.eventId,
    org_id: alert.orgId,
    machine_id: alert.machineId,
    series_id: alert.seriesId,
    event: alert.event,
    started_ms: alert.startedAt.getTime(),
    payload: alert.payload,
    delivery_ids: alert.deliveryIds,
    raised_ms: alert.raisedAt.getTime(),
  };
  return { kind: 'alert', orgId: alert.orgId, id: alert.eventId, parent: alert.machineId, status: '', createdMs: doc.started_ms, doc: JSON.stringify(doc) };
}

export function alertOf(doc: string): MachineAlert {
  const d = JSON.parse(doc) as {
    event_id: string;
    org_id: string;
    machine_id: string;
    series_id: string;
    event: string;
    started_ms: number;
    payload: string;
    delivery_ids: string[];
    raised_ms: number;
  };
  return {
    eventId: d.event_id,
    orgId: d.org_id,
    machineId: d.machine_id,
    seriesId: d.series_id,
    event: d.event,
    startedAt: new Date(d.started_ms),
    payload: d.payload,
    deliveryIds: d.delivery_ids,
    raisedAt: new Date(d.raised_ms),
  };
}
