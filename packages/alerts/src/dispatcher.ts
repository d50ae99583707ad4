// The webhook dispatcher: consumes the alerts topic, records each alert (the machine's log of its
// episodes, which the dashboard shows) and one pending delivery per alert and matching target in
// the store (the same id whenever the alert comes again, so a replay does not
// deliver twice), lets the bus commit, and delivers in the background: retries with exponential
// backoff and jitter (p-retry), at most `concurrencyPerTarget` requests in flight per target, each
// within `timeoutMs`. A delivery that exhausts its attempts disables its target, with the reason.
// Detection never waits for a receiver: the workers only publish to the topic. A restart loses
// nothing: what was pending is in the store and resumes at start.
import { createHash, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import pLimit, { type LimitFunction } from 'p-limit';
import pRetry, { AbortError } from 'p-retry';
import type { AlertingStore, DeliveryAttempt, MachineAlert, WebhookDelivery, WebhookTarget } from '@adp/store';
import { loadStreamingCodecs, type Bus, type BusConsumer, type IncomingBatch, type IncomingMessage, type StreamingCodecs } from '@adp/streaming';
import type { Lookup } from './address-guard.js';
import type { AttemptOutcome } from './deliver.js';
import { ALERT_EVENT_TYPES, alertPayload, targetWants } from './payload.js';
import { inlineSender, threadSender, type AttemptSender } from './sender.js';
import { signingSecrets } from './signing.js';

export interface DispatcherLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface RetrySchedule {
  /** Attempts after the first. */
  readonly retries: number;
  /** Wait before the first retry, ms; each next one `factor` times longer (with jitter), at most maxDelayMs. */
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
}

/**
 * The default schedule: 5 s doubling to at most 2 h, 20 retries, each wait up to twice as long
 * (jitter): about 21 to 23 hours from the first attempt to the last before a target is disabled.
 */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = { retries: 20, minDelayMs: 5_000, maxDelayMs: 2 * 3_600_000, factor: 2 };

export interface DispatcherConfig {
  readonly topic: string;
  readonly groupId: string;
  /** Private, loopback and link-local targets allowed (WEBHOOK_ALLOW_PRIVATE). */
  readonly allowPrivate: boolean;
  /** One attempt's limit, ms. */
  readonly timeoutMs: number;
  readonly concurrencyPerTarget: number;
  readonly retry: RetrySchedule;
  /** Base URL of the dashboard for the alerts' links; null: a path only. */
  readonly publicUrl: string | null;
  /**
   * Attempts (signing and HTTP) in a delivery thread of their own (sender.ts) instead of this
   * thread. Default false. Ignored with a `lookup` (tests): a function cannot go to another thread.
   */
  readonly deliveryThread?: boolean;
}

export interface DispatcherDeps {
  /** Where alerts come from; absent: this dispatcher only sends tests and redeliveries. */
  readonly bus?: Bus;
  readonly store: AlertingStore;
  readonly config: DispatcherConfig;
  readonly codecs?: StreamingCodecs;
  readonly logger?: DispatcherLogger;
  readonly now?: () => Date;
  /** Name resolution (tests); default the system's. */
  readonly lookup?: Lookup;
}

const noop: DispatcherLogger = { info() {}, warn() {}, error() {} };
const PENDING_RESUMED = 10_000;
/**
 * How long an organization's targets are reused between alerts and attempts, ms: a burst of alerts
 * reads them once. Changes made through this process apply at once (`targetsChanged`); another
 * replica's within this long.
 */
const TARGETS_TTL_MS = 1_000;
/** Delivery ids this dispatcher recorded, remembered so a new alert need not ask the store whether it was. */
const KNOWN_DELIVERIES = 100_000;
/**
 * How long attempts wait to be written to the delivery log together, ms. A delivery is recorded
 * pending before the bus commits (that is what makes it survive a restart); its attempts and its
 * end are written behind, in batches: each write costs the embedded store about 7 ms of CPU
 * whatever its size, CPU that detection in the same process would otherwise have, so at most one
 * a second while deliveries go on. The log shows an attempt up to this late. A crash before such a
 * write leaves the delivery pending: it is delivered again after the restart (at least once;
 * receivers dedupe by webhook-id).
 */
const LOG_LINGER_MS = 1_000;
/**
 * How long a connection to a target stays open without a delivery, ms: shorter than the 5 s a
 * Node.js server keeps an idle connection by default, so the dispatcher is the side that closes it.
 */
const CONNECTION_IDLE_MS = 4_000;

/** The delivery id of an alert to a target: the same every time the alert is consumed. */
export function deliveryIdOf(eventId: string, webhookId: string): string {
  return `msg_${createHash('sha256').update(`${eventId}\n${webhookId}`).digest('hex').slice(0, 32)}`;
}

export class WebhookDispatcher {
  private consumer: BusConsumer | null = null;
  private readonly limits = new Map<string, LimitFunction>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private readonly codecs: StreamingCodecs;
  private readonly logger: DispatcherLogger;
  private readonly now: () => Date;
  private stopped = false;
  private readonly targets = new Map<string, { readonly at: number; readonly list: Promise<readonly WebhookTarget[]> }>();
  private readonly known = new Set<string>();
  /** The delivery log's writes not yet made, by delivery id (the newest state of each). */
  private readonly unwritten = new Map<string, WebhookDelivery>();
  private flushing: Promise<void> | null = null;
  /** Partition batches waiting for the handling in progress to end; handled together next. */
  private queued: { readonly messages: readonly IncomingMessage[]; readonly settle: (error?: unknown) => void }[] = [];
  private handling = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly sender: AttemptSender;

  constructor(private readonly deps: DispatcherDeps) {
    const pools = { maxSocketsPerAddress: deps.config.concurrencyPerTarget, idleMs: CONNECTION_IDLE_MS };
    this.sender =
      deps.config.deliveryThread === true && deps.lookup === undefined
        ? threadSender(pools)
        : inlineSender({ ...pools, ...(deps.lookup ? { lookup: deps.lookup } : {}) });
    // Every delivery in flight (and its attempt) listens for the stop: thousands at once is normal.
    setMaxListeners(0, this.abort.signal);
    this.codecs = deps.codecs ?? loadStreamingCodecs();
    this.logger = deps.logger ?? noop;
    this.now = deps.now ?? (() => new Date());
  }

  /** Resumes the pending deliveries, then consumes the alerts topic. */
  async start(): Promise<void> {
    const { bus, config } = this.deps;
    if (!bus) throw new Error('WebhookDispatcher.start needs a bus');
    await bus.ensureTopics([{ name: config.topic, partitions: 12 }]);
    this.sender.start();
    for (const delivery of await this.deps.store.pendingDeliveries(PENDING_RESUMED)) this.schedule(delivery);
    const consumer = await bus.consumer({ groupId: config.groupId, topics: [config.topic] });
    try {
      await consumer.run((batch) => this.handle(batch));
    } catch (err) {
      await consumer.close().catch(() => undefined);
      throw err;
    }
    this.consumer = consumer;
    this.logger.info({ topic: config.topic, groupId: config.groupId, resumed: this.inFlight.size }, 'webhook dispatcher consuming');
  }

  /** Stops consuming and abandons the waits between attempts (those deliveries stay pending in the store). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.consumer?.close();
    this.abort.abort();
    // The attempts in flight answer as abandoned, and their deliveries end pending.
    await this.sender.close();
    await Promise.allSettled([...this.inFlight.values()]);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    // What cannot be written now stays pending in the store: delivered again after the restart.
    await this.flush().catch(() => undefined);
  }

  /** Resolves once no delivery is in flight (tests, draining). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
    await this.flush();
  }

  /** Queues the delivery's newest state for the log; `now`: written before this resolves. */
  private async log(delivery: WebhookDelivery, now = false): Promise<void> {
    this.unwritten.set(delivery.deliveryId, delivery);
    if (now) {
      await this.flush();
      return;
    }
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      // A failed write is logged in flush and its rows queued again for the next.
      this.flush().catch(() => this.scheduleFlush());
    }, LOG_LINGER_MS);
    this.flushTimer.unref();
  }

  /** Writes what the log has queued (one write at a time); a failed write is retried with the next. */
  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.unwritten.size === 0) return;
    const batch = [...this.unwritten.values()];
    this.unwritten.clear();
    this.flushing = this.deps.store
      .putDeliveries(batch)
      .catch((err: unknown) => {
        for (const delivery of batch) if (!this.unwritten.has(delivery.deliveryId)) this.unwritten.set(delivery.deliveryId, delivery);
        this.logger.error({ err, deliveries: batch.length }, 'could not write the delivery log; retried with the next write');
        throw err;
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
  }

  /**
   * Batches of the alerts topic arrive one per partition, a few alerts each. Those that come while
   * one is being handled wait and are then handled together (group commit): one read of the
   * existing deliveries and one write of alerts and deliveries for all of them, instead of one of
   * each per partition batch (each store call costs the embedded DuckDB milliseconds of CPU, which
   * detection in the same process would otherwise have). Each batch's promise settles with the
   * group's write, so no batch is committed before its alerts are recorded.
   */
  private handle(batch: IncomingBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ messages: batch.messages, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      void this.handleQueued();
    });
  }

  private async handleQueued(): Promise<void> {
    if (this.handling) return;
    this.handling = true;
    try {
      while (this.queued.length > 0) {
        const group = this.queued.splice(0);
        try {
          await this.handleMessages(group.flatMap((one) => one.messages));
          for (const one of group) one.settle();
        } catch (error) {
          for (const one of group) one.settle(error ?? new Error('alert batch failed'));
        }
      }
    } finally {
      this.handling = false;
    }
  }

  private async handleMessages(messages: readonly IncomingMessage[]): Promise<void> {
    // Per organization, the deliveries the batch's alerts call for (one per alert and wanting target).
    const candidates = new Map<string, Map<string, WebhookDelivery>>();
    const alerts: MachineAlert[] = [];
    for (const message of messages) {
      let alert;
      try {
        alert = this.codecs.alert.decode(message.value);
      } catch (err) {
        // Only workers write this topic; an undecodable message is logged and skipped, never retried forever.
        this.logger.error({ err, topic: message.topic, partition: message.partition, offset: message.offset }, 'undecodable alert skipped');
        continue;
      }
      const targets = await this.targetsOf(alert.organization);
      const payload = alertPayload(alert, this.deps.config.publicUrl);
      const deliveryIds: string[] = [];
      alerts.push({
        eventId: alert.event_id,
        orgId: alert.organization,
        machineId: alert.machine_id,
        seriesId: alert.series_id,
        event: alertPayloadType(alert.event),
        startedAt: new Date(alert.started_at),
        payload,
        deliveryIds,
        raisedAt: new Date(alert.raised_at),
      });
      for (const target of targets) {
        if (!targetWants(target, alert)) continue;
        const deliveryId = deliveryIdOf(alert.event_id, target.webhookId);
        deliveryIds.push(deliveryId);
        if (this.known.has(deliveryId)) continue; // recorded by this dispatcher: delivered, or on its way
        let ofOrg = candidates.get(alert.organization);
        if (!ofOrg) candidates.set(alert.organization, (ofOrg = new Map()));
        const now = this.now();
        ofOrg.set(deliveryId, {
          deliveryId,
          orgId: alert.organization,
          webhookId: target.webhookId,
          eventId: alert.event_id,
          event: alertPayloadType(alert.event),
          payload,
          status: 'pending',
          attempts: [],
          createdAt: now,
          updatedAt: now,
        });
      }
    }
    const created: WebhookDelivery[] = [];
    const resumed: WebhookDelivery[] = [];
    for (const [orgId, ofOrg] of candidates) {
      // A replayed alert's deliveries exist already: one read for the batch tells which.
      for (const existing of await this.deps.store.getDeliveries(orgId, [...ofOrg.keys()])) {
        ofOrg.delete(existing.deliveryId);
        if (existing.status === 'pending') resumed.push(existing);
        else this.remember(existing.deliveryId);
      }
      created.push(...ofOrg.values());
    }
    // The alerts and their new deliveries (pending) in one write, before the bus may commit the batch.
    if (alerts.length > 0) await this.deps.store.recordAlerts(alerts, created);
    for (const delivery of [...resumed, ...created]) {
      this.remember(delivery.deliveryId);
      this.schedule(delivery);
    }
  }

  private remember(deliveryId: string): void {
    this.known.add(deliveryId);
    if (this.known.size > KNOWN_DELIVERIES) this.known.delete(this.known.values().next().value!);
  }

  /** The organization's targets, read at most once per TARGETS_TTL_MS. */
  private targetsOf(orgId: string): Promise<readonly WebhookTarget[]> {
    const cached = this.targets.get(orgId);
    const nowMs = Date.now();
    if (cached && nowMs - cached.at < TARGETS_TTL_MS) return cached.list;
    const list = this.deps.store.listWebhooks(orgId);
    this.targets.set(orgId, { at: nowMs, list });
    list.catch(() => this.targets.delete(orgId));
    return list;
  }

  private async targetOf(orgId: string, webhookId: string): Promise<WebhookTarget | null> {
    return (await this.targetsOf(orgId)).find((t) => t.webhookId === webhookId) ?? null;
  }

  /** The organization's targets changed (created, changed, disabled, deleted): read them again. */
  targetsChanged(orgId: string): void {
    this.targets.delete(orgId);
  }

  /** Starts delivering (once per delivery id at a time). */
  private schedule(delivery: WebhookDelivery): void {
    if (this.stopped || this.inFlight.has(delivery.deliveryId)) return;
    const run = this.deliver(delivery)
      .catch((err: unknown) => this.logger.error({ err, deliveryId: delivery.deliveryId }, 'delivery failed unexpectedly; it stays pending'))
      .finally(() => this.inFlight.delete(delivery.deliveryId));
    this.inFlight.set(delivery.deliveryId, run);
  }

  private limitOf(webhookId: string): LimitFunction {
    let limit = this.limits.get(webhookId);
    if (!limit) {
      limit = pLimit(this.deps.config.concurrencyPerTarget);
      this.limits.set(webhookId, limit);
    }
    return limit;
  }

  private async deliver(initial: WebhookDelivery): Promise<void> {
    const { config } = this.deps;
    let delivery = initial;
    const record = async (attempt: DeliveryAttempt, status: WebhookDelivery['status']): Promise<void> => {
      delivery = { ...delivery, attempts: [...delivery.attempts, attempt], status, updatedAt: this.now() };
      await this.log(delivery);
    };
    const give = async (reason: string): Promise<void> => {
      delivery = { ...delivery, status: 'failed', updatedAt: this.now() };
      // Written at once: the target may be disabled next, and its log should say why already.
      await this.log(delivery, true);
      this.logger.warn({ deliveryId: delivery.deliveryId, webhookId: delivery.webhookId, reason }, 'delivery abandoned');
    };
    try {
      await pRetry(
        async () => {
          const target = await this.targetOf(delivery.orgId, delivery.webhookId);
          if (target === null) throw new AbortError('the target was deleted');
          if (target.disabledAt !== null) throw new AbortError(`the target is disabled (${target.disabledReason ?? 'no reason'})`);
          const at = this.now();
          const outcome = await this.limitOf(target.webhookId)(() => this.attempt(target, delivery, at));
          if (this.abort.signal.aborted) throw new AbortError('the dispatcher stopped');
          await record({ at, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs, error: outcome.error }, outcome.ok ? 'delivered' : 'pending');
          if (!outcome.ok) throw new Error(outcome.error ?? 'failed');
        },
        {
          retries: config.retry.retries,
          factor: config.retry.factor,
          minTimeout: config.retry.minDelayMs,
          maxTimeout: config.retry.maxDelayMs,
          randomize: true,
          signal: this.abort.signal,
        },
      );
    } catch (err) {
      if (this.abort.signal.aborted) return; // stopping: the delivery stays pending for the next start
      if (err instanceof AbortError) {
        await give(err.message);
        return;
      }
      await give('attempts exhausted');
      await this.disableTarget(delivery, err instanceof Error ? err.message : String(err));
    }
  }

  private attempt(target: WebhookTarget, delivery: WebhookDelivery, at: Date): Promise<AttemptOutcome> {
    return this.sender.send({
      url: target.url,
      body: delivery.payload,
      secrets: signingSecrets(target.secrets, at),
      messageId: delivery.deliveryId,
      atMs: at.getTime(),
      timeoutMs: this.deps.config.timeoutMs,
      allowPrivate: this.deps.config.allowPrivate,
    });
  }

  private async disableTarget(delivery: WebhookDelivery, lastError: string): Promise<void> {
    const target = await this.deps.store.getWebhook(delivery.orgId, delivery.webhookId);
    if (target === null || target.disabledAt !== null) return;
    const now = this.now();
    const reason = `delivery ${delivery.deliveryId} failed ${delivery.attempts.length} attempts; last: ${lastError}`.slice(0, 1000);
    await this.deps.store.putWebhook({ ...target, disabledAt: now, disabledReason: reason, updatedAt: now });
    this.targetsChanged(target.orgId);
    this.logger.warn({ webhookId: target.webhookId, orgId: target.orgId, reason }, 'webhook target disabled');
  }

  /** Delivers a `webhook.test` event to the target now, once, and logs it; resolves with the delivery. */
  async sendTest(target: WebhookTarget): Promise<WebhookDelivery> {
    const at = this.now();
    const eventId = `evt_test_${randomUUID()}`;
    const payload = JSON.stringify({
      type: 'webhook.test',
      timestamp: at.toISOString(),
      data: { webhook_id: target.webhookId, message: 'A test delivery: the signature verifies with your signing secret.' },
    });
    let delivery: WebhookDelivery = {
      deliveryId: deliveryIdOf(eventId, target.webhookId),
      orgId: target.orgId,
      webhookId: target.webhookId,
      eventId,
      event: 'webhook.test',
      payload,
      status: 'pending',
      attempts: [],
      createdAt: at,
      updatedAt: at,
    };
    const outcome = await this.limitOf(target.webhookId)(() => this.attempt(target, delivery, at));
    delivery = {
      ...delivery,
      status: outcome.ok ? 'delivered' : 'failed',
      attempts: [{ at, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs, error: outcome.error }],
      updatedAt: this.now(),
    };
    await this.log(delivery, true);
    return delivery;
  }

  /** Delivers a logged delivery again (same id and body), with a fresh retry schedule. */
  async redeliver(delivery: WebhookDelivery): Promise<WebhookDelivery> {
    const again: WebhookDelivery = { ...delivery, status: 'pending', updatedAt: this.now() };
    await this.log(again, true);
    this.schedule(again);
    return again;
  }
}

function alertPayloadType(event: keyof typeof ALERT_EVENT_TYPES): string {
  return ALERT_EVENT_TYPES[event];
}
