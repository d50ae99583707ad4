// The alerting port over a table of documents (alerting.ts writes and reads each document): the
// two adapters supply the primitives and share every method.
import {
  alertOf,
  alertRow,
  bodyId,
  deliveryOf,
  deliveryRows,
  feedbackOf,
  feedbackRow,
  validateId,
  validateLimit,
  validateRef,
  webhookOf,
  webhookRow,
  type AlertingKind,
  type AlertingRow,
  type AlertingStore,
  type DeliveryDoc,
  type MachineAlert,
  type MachineFeedback,
  type WebhookDelivery,
  type WebhookTarget,
} from './alerting.js';
import { StoreError } from './errors.js';

/**
 * The port over any table of AlertingRow documents: an adapter supplies the four primitives and
 * gets every method, so the two backends differ only in SQL.
 */
export interface AlertingDocuments {
  /** Writes the rows in one statement (one or more). */
  put(operation: string, rows: readonly AlertingRow[]): Promise<void>;
  /** Writes those of the rows whose (kind, organization, id) is not stored yet; the others are left as they are. */
  putOnce(operation: string, rows: readonly AlertingRow[]): Promise<void>;
  get(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<string | null>;
  /** The documents of those ids that exist. */
  getMany(operation: string, kind: AlertingKind, orgId: string, ids: readonly string[]): Promise<string[]>;
  /** Documents of one kind, ordered by createdMs then id (ascending or descending). */
  list(
    operation: string,
    query: { kind: AlertingKind; orgId?: string; parent?: string; status?: string; limit: number; newestFirst: boolean },
  ): Promise<string[]>;
  remove(operation: string, kind: AlertingKind, orgId: string, id: string): Promise<boolean>;
  /**
   * Removes every document of the kind whose parent is `parent` or starts with `parentPrefix`, in a
   * number of statements that does not grow with how many there are; how many were removed.
   */
  removeChildren(operation: string, kind: AlertingKind, orgId: string, parent: string, parentPrefix: string | null): Promise<number>;
}

/** Body ids a store remembers as written (bodies are never removed), the oldest forgotten first. */
const KNOWN_BODIES = 10_000;

export class DocumentAlertingStore implements AlertingStore {
  /** `<org>/<body id>` of bodies known to be stored: a delivery's later states do not send its body again. */
  private readonly knownBodies = new Set<string>();

  constructor(private readonly docs: AlertingDocuments) {}

  private knowBody(key: string): void {
    this.knownBodies.delete(key);
    this.knownBodies.add(key);
    if (this.knownBodies.size > KNOWN_BODIES) this.knownBodies.delete(this.knownBodies.values().next().value!);
  }

  private static guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      return run();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  putWebhook(target: WebhookTarget): Promise<void> {
    return DocumentAlertingStore.guard(() => this.docs.put('putWebhook', [webhookRow(target)]));
  }

  getWebhook(orgId: string, webhookId: string): Promise<WebhookTarget | null> {
    return DocumentAlertingStore.guard(async () => {
      validateRef('getWebhook', orgId, webhookId);
      const doc = await this.docs.get('getWebhook', 'webhook', orgId, webhookId);
      return doc === null ? null : webhookOf(doc);
    });
  }

  listWebhooks(orgId: string): Promise<readonly WebhookTarget[]> {
    return DocumentAlertingStore.guard(async () => {
      validateId('listWebhooks', 'orgId', orgId);
      const docs = await this.docs.list('listWebhooks', { kind: 'webhook', orgId, limit: 10_000, newestFirst: false });
      return docs.map(webhookOf);
    });
  }

  deleteWebhook(orgId: string, webhookId: string): Promise<boolean> {
    return DocumentAlertingStore.guard(() => {
      validateRef('deleteWebhook', orgId, webhookId);
      return this.docs.remove('deleteWebhook', 'webhook', orgId, webhookId);
    });
  }

  /**
   * The deliveries' bodies not stored yet, then their states with `rows` (one row per record: the
   * last of the lists wins for an id given twice). The bodies go first, so that a state is never
   * stored without its body; a body whose state write then failed is written again as it was.
   */
  private async writeDeliveries(operation: string, deliveries: readonly WebhookDelivery[], rows: readonly AlertingRow[] = []): Promise<void> {
    const states = new Map<string, AlertingRow>();
    const bodies = new Map<string, AlertingRow>();
    for (const row of rows) states.set(`${row.kind}/${row.orgId}/${row.id}`, row);
    for (const delivery of deliveries) {
      const { state, body } = deliveryRows(delivery);
      states.set(`${state.kind}/${state.orgId}/${state.id}`, state);
      const key = `${body.orgId}/${body.id}`;
      if (!this.knownBodies.has(key)) bodies.set(key, body);
    }
    if (bodies.size > 0) {
      await this.docs.putOnce(operation, [...bodies.values()]);
      for (const key of bodies.keys()) this.knowBody(key);
    }
    if (states.size > 0) await this.docs.put(operation, [...states.values()]);
  }

  /** Delivery documents with their bodies: one read of bodies per organization. */
  private async readDeliveries(operation: string, docs: readonly string[]): Promise<WebhookDelivery[]> {
    const parsed = docs.map((doc) => JSON.parse(doc) as DeliveryDoc);
    const wanted = new Map<string, Set<string>>();
    for (const d of parsed) {
      if (d.body_id === undefined) continue;
      let ids = wanted.get(d.org_id);
      if (!ids) wanted.set(d.org_id, (ids = new Set()));
      ids.add(d.body_id);
    }
    const bodies = new Map<string, string>();
    for (const [orgId, ids] of wanted) {
      for (const payload of await this.docs.getMany(operation, 'body', orgId, [...ids])) {
        const key = `${orgId}/${bodyId(payload)}`;
        bodies.set(key, payload);
        this.knowBody(key);
      }
    }
    return parsed.map((d) => {
      const payload = d.body_id === undefined ? d.payload : bodies.get(`${d.org_id}/${d.body_id}`);
      if (payload === undefined) throw new StoreError('STORE_QUERY_FAILED', operation, `the body of delivery ${d.delivery_id} is missing`);
      return deliveryOf(d, payload);
    });
  }

  putDelivery(delivery: WebhookDelivery): Promise<void> {
    return DocumentAlertingStore.guard(() => this.writeDeliveries('putDelivery', [delivery]));
  }

  putDeliveries(deliveries: readonly WebhookDelivery[]): Promise<void> {
    return DocumentAlertingStore.guard(() => this.writeDeliveries('putDeliveries', deliveries));
  }

  getDelivery(orgId: string, deliveryId: string): Promise<WebhookDelivery | null> {
    return DocumentAlertingStore.guard(async () => {
      validateRef('getDelivery', orgId, deliveryId);
      const doc = await this.docs.get('getDelivery', 'delivery', orgId, deliveryId);
      return doc === null ? null : ((await this.readDeliveries('getDelivery', [doc]))[0] ?? null);
    });
  }

  getDeliveries(orgId: string, deliveryIds: readonly string[]): Promise<readonly WebhookDelivery[]> {
    return DocumentAlertingStore.guard(async () => {
      validateId('getDeliveries', 'orgId', orgId);
      for (const deliveryId of deliveryIds) validateId('getDeliveries', 'deliveryId', deliveryId);
      if (deliveryIds.length === 0) return [];
      return this.readDeliveries('getDeliveries', await this.docs.getMany('getDeliveries', 'delivery', orgId, [...new Set(deliveryIds)]));
    });
  }

  listDeliveries(orgId: string, webhookId: string, limit: number): Promise<readonly WebhookDelivery[]> {
    return DocumentAlertingStore.guard(async () => {
      validateRef('listDeliveries', orgId, webhookId);
      validateLimit('listDeliveries', limit);
      const docs = await this.docs.list('listDeliveries', { kind: 'delivery', orgId, parent: webhookId, limit, newestFirst: true });
      return this.readDeliveries('listDeliveries', docs);
    });
  }

  pendingDeliveries(limit: number): Promise<readonly WebhookDelivery[]> {
    return DocumentAlertingStore.guard(async () => {
      validateLimit('pendingDeliveries', limit);
      const docs = await this.docs.list('pendingDeliveries', { kind: 'delivery', status: 'pending', limit, newestFirst: false });
      return this.readDeliveries('pendingDeliveries', docs);
    });
  }

  putFeedback(feedback: MachineFeedback): Promise<void> {
    return DocumentAlertingStore.guard(() => this.docs.put('putFeedback', [feedbackRow(feedback)]));
  }

  listFeedback(orgId: string, machineId?: string): Promise<readonly MachineFeedback[]> {
    return DocumentAlertingStore.guard(async () => {
      validateId('listFeedback', 'orgId', orgId);
      if (machineId !== undefined) validateId('listFeedback', 'machineId', machineId);
      const docs = await this.docs.list('listFeedback', {
        kind: 'feedback',
        orgId,
        ...(machineId !== undefined ? { parent: machineId } : {}),
        limit: 10_000,
        newestFirst: false,
      });
      return docs.map(feedbackOf);
    });
  }

  deleteFeedback(orgId: string, feedbackId: string): Promise<boolean> {
    return DocumentAlertingStore.guard(() => {
      validateRef('deleteFeedback', orgId, feedbackId);
      return this.docs.remove('deleteFeedback', 'feedback', orgId, feedbackId);
    });
  }

  recordAlerts(alerts: readonly MachineAlert[], deliveries: readonly WebhookDelivery[]): Promise<void> {
    // The alerts and the deliveries' states in one write, after the bodies not stored yet.
    return DocumentAlertingStore.guard(() => this.writeDeliveries('recordAlerts', deliveries, alerts.map(alertRow)));
  }

  listAlerts(orgId: string, machineId: string, limit: number): Promise<readonly MachineAlert[]> {
    return DocumentAlertingStore.guard(async () => {
      validateId('listAlerts', 'orgId', orgId);
      validateId('listAlerts', 'machineId', machineId);
      validateLimit('listAlerts', limit);
      return (await this.docs.list('listAlerts', { kind: 'alert', orgId, parent: machineId, limit, newestFirst: true })).map(alertOf);
    });
  }

  deleteAlerts(orgId: string, machineId: string): Promise<number> {
    return DocumentAlertingStore.guard(() => {
      validateId('deleteAlerts', 'orgId', orgId);
      validateId('deleteAlerts', 'machineId', machineId);
      return this.docs.removeChildren('deleteAlerts', 'alert', orgId, machineId, null);
    });
  }

  deleteMachineFeedback(orgId: string, machineId: string, channelPrefix: string | null): Promise<number> {
    return DocumentAlertingStore.guard(() => {
      validateId('deleteMachineFeedback', 'orgId', orgId);
      validateId('deleteMachineFeedback', 'machineId', machineId);
      if (channelPrefix !== null) validateId('deleteMachineFeedback', 'channelPrefix', channelPrefix);
      return this.docs.removeChildren('deleteMachineFeedback', 'feedback', orgId, machineId, channelPrefix);
    });
  }
}
