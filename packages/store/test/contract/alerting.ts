// The behaviour every AlertingStore adapter must have (part of describeStoreContracts, so both
// backends run it): webhook targets, their delivery log and machine feedback, per organization.
import { describe, expect, it } from 'vitest';
import { StoreError, type AlertingStore, type MachineAlert, type MachineFeedback, type WebhookDelivery, type WebhookTarget } from '@adp/store';
import { useBackend, type StoreBackend } from './backend.js';

const T0 = Date.UTC(2026, 2, 3, 4, 5, 6, 789);

function target(overrides: Partial<WebhookTarget> = {}): WebhookTarget {
  return {
    webhookId: 'wh_1',
    orgId: 'org_a',
    url: 'https://hooks.example.com/adp',
    events: ['episode.opened', 'episode.closed'],
    machineIds: null,
    minSeverity: 0,
    description: '',
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', expiresAt: null }],
    disabledAt: null,
    disabledReason: null,
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    ...overrides,
  };
}

function delivery(overrides: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    deliveryId: 'msg_1',
    orgId: 'org_a',
    webhookId: 'wh_1',
    eventId: 'evt_1',
    event: 'episode.opened',
    payload: '{"type":"episode.opened","data":{"quote":"it\'s \\\\ here"}}',
    status: 'pending',
    attempts: [],
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    ...overrides,
  };
}

function feedback(overrides: Partial<MachineFeedback> = {}): MachineFeedback {
  return {
    feedbackId: 'fb_1',
    orgId: 'org_a',
    machineId: 'pump-7',
    fromMs: T0,
    toMs: T0 + 3_600_000,
    label: 'not_anomaly',
    pattern: { low: 70.5, high: 81.25, direction: 'up', points: 12 },
    createdAt: new Date(T0),
    ...overrides,
  };
}

function alert(overrides: Partial<MachineAlert> = {}): MachineAlert {
  return {
    eventId: 'org_a/pump-7/1000/opened',
    orgId: 'org_a',
    machineId: 'pump-7',
    seriesId: 'pump-7',
    event: 'episode.opened',
    startedAt: new Date(T0),
    payload: '{"type":"episode.opened","data":{"machine_id":"pump-7"}}',
    deliveryIds: ['msg_1'],
    raisedAt: new Date(T0 + 5),
    ...overrides,
  };
}

export function describeAlertingContract(name: string, backend: StoreBackend): void {
  describe(`${name}: AlertingStore contract`, () => {
    const openStore = useBackend(backend);
    const open = async (): Promise<AlertingStore> => {
      const store = await openStore();
      if (!store.alerting) throw new Error('the store has no alerting port');
      return store.alerting;
    };

    it('keeps a webhook target whole, replaces it, lists an organization\'s own oldest first, and deletes it', async () => {
      const alerting = await open();
      const first = target({ machineIds: ['pump-7', 'fan-2'], minSeverity: 0.5, description: 'on call' });
      await alerting.putWebhook(first);
      await alerting.putWebhook(target({ webhookId: 'wh_2', createdAt: new Date(T0 + 1000), updatedAt: new Date(T0 + 1000) }));
      await alerting.putWebhook(target({ webhookId: 'wh_other', orgId: 'org_b' }));
      expect(await alerting.getWebhook('org_a', 'wh_1')).toEqual(first);
      expect(await alerting.getWebhook('org_b', 'wh_1')).toBeNull();

      const rotated = target({
        ...first,
        secrets: [
          { secret: 'whsec_bmV3IHNlY3JldCBieXRlcyBoZXJlIQ==', expiresAt: null },
          { secret: first.secrets[0]!.secret, expiresAt: new Date(T0 + 86_400_000) },
        ],
        disabledAt: new Date(T0 + 5),
        disabledReason: 'delivery msg_1 failed 3 attempts; last: HTTP 500',
        updatedAt: new Date(T0 + 10),
      });
      await alerting.putWebhook(rotated);
      expect(await alerting.getWebhook('org_a', 'wh_1')).toEqual(rotated);
      expect((await alerting.listWebhooks('org_a')).map((t) => t.webhookId)).toEqual(['wh_1', 'wh_2']);

      expect(await alerting.deleteWebhook('org_a', 'wh_1')).toBe(true);
      expect(await alerting.deleteWebhook('org_a', 'wh_1')).toBe(false);
      expect(await alerting.getWebhook('org_a', 'wh_1')).toBeNull();
      expect((await alerting.listWebhooks('org_a')).map((t) => t.webhookId)).toEqual(['wh_2']);
      // A target put again after its deletion exists again.
      await alerting.putWebhook(first);
      expect(await alerting.getWebhook('org_a', 'wh_1')).toEqual(first);
    });

    it('logs deliveries per target newest first, updates them in place, and finds the pending ones of every organization', async () => {
      const alerting = await open();
      await alerting.putDelivery(delivery());
      await alerting.putDelivery(delivery({ deliveryId: 'msg_2', createdAt: new Date(T0 + 1) }));
      await alerting.putDelivery(delivery({ deliveryId: 'msg_3', orgId: 'org_b', createdAt: new Date(T0 + 2) }));
      await alerting.putDelivery(delivery({ deliveryId: 'msg_4', webhookId: 'wh_2', createdAt: new Date(T0 + 3) }));
      const done = delivery({
        status: 'delivered',
        attempts: [
          { at: new Date(T0 + 10), statusCode: null, latencyMs: 5000, error: 'timed out after 5000 ms' },
          { at: new Date(T0 + 20), statusCode: 204, latencyMs: 12.5, error: null },
        ],
        updatedAt: new Date(T0 + 20),
      });
      await alerting.putDelivery(done);
      expect(await alerting.getDelivery('org_a', 'msg_1')).toEqual(done);
      expect(await alerting.getDelivery('org_b', 'msg_1')).toBeNull();
      expect((await alerting.listDeliveries('org_a', 'wh_1', 10)).map((d) => d.deliveryId)).toEqual(['msg_2', 'msg_1']);
      expect((await alerting.listDeliveries('org_a', 'wh_1', 1)).map((d) => d.deliveryId)).toEqual(['msg_2']);
      expect((await alerting.pendingDeliveries(10)).map((d) => d.deliveryId)).toEqual(['msg_2', 'msg_3', 'msg_4']);
      const some = await alerting.getDeliveries('org_a', ['msg_1', 'msg_2', 'msg_3', 'msg_none', 'msg_1']);
      expect(some.map((d) => d.deliveryId).sort()).toEqual(['msg_1', 'msg_2']);
      expect(some.find((d) => d.deliveryId === 'msg_1')).toEqual(done);
      expect(await alerting.getDeliveries('org_a', [])).toEqual([]);
      await expect(alerting.listDeliveries('org_a', 'wh_1', 0)).rejects.toBeInstanceOf(StoreError);
    });

    it('writes several deliveries at once, the last of an id given twice winning', async () => {
      const alerting = await open();
      await alerting.putDeliveries([
        delivery({ deliveryId: 'msg_a' }),
        delivery({ deliveryId: 'msg_b', createdAt: new Date(T0 + 1) }),
        delivery({ deliveryId: 'msg_a', status: 'delivered', updatedAt: new Date(T0 + 5) }),
      ]);
      await alerting.putDeliveries([]);
      expect((await alerting.listDeliveries('org_a', 'wh_1', 10)).map((d) => [d.deliveryId, d.status])).toEqual([
        ['msg_b', 'pending'],
        ['msg_a', 'delivered'],
      ]);
      await expect(alerting.putDeliveries([delivery({ deliveryId: 'msg_c' }), delivery({ status: 'lost' as never })])).rejects.toMatchObject({
        code: 'STORE_INVALID_ARGUMENT',
      });
      expect(await alerting.getDelivery('org_a', 'msg_c')).toBeNull();
    });

    it('keeps each delivery with its own body: deliveries of one alert share it, another body replaces it', async () => {
      const alerting = await open();
      const other = '{"type":"episode.closed","data":{}}';
      await alerting.recordAlerts([alert()], [delivery({ deliveryId: 'msg_x' }), delivery({ deliveryId: 'msg_y', webhookId: 'wh_2' })]);
      await alerting.putDeliveries([delivery({ deliveryId: 'msg_z', payload: other, orgId: 'org_b' })]);
      await alerting.putDelivery(delivery({ deliveryId: 'msg_y', webhookId: 'wh_2', status: 'failed', updatedAt: new Date(T0 + 9) }));
      expect((await alerting.getDeliveries('org_a', ['msg_x', 'msg_y'])).map((d) => [d.deliveryId, d.status, d.payload]).sort()).toEqual([
        ['msg_x', 'pending', delivery().payload],
        ['msg_y', 'failed', delivery().payload],
      ]);
      expect((await alerting.getDelivery('org_b', 'msg_z'))?.payload).toBe(other);
      // The same delivery put again with another body reads with that body.
      await alerting.putDelivery(delivery({ deliveryId: 'msg_x', payload: other }));
      expect((await alerting.getDelivery('org_a', 'msg_x'))?.payload).toBe(other);
      expect((await alerting.getDelivery('org_a', 'msg_y'))?.payload).toBe(delivery().payload);
      expect((await alerting.pendingDeliveries(10)).map((d) => [d.deliveryId, d.payload])).toEqual([
        ['msg_x', other],
        ['msg_z', other],
      ]);
    });

    it('keeps feedback per machine, lists and deletes it', async () => {
      const alerting = await open();
      const first = feedback();
      await alerting.putFeedback(first);
      await alerting.putFeedback(feedback({ feedbackId: 'fb_2', machineId: 'fan-2', label: 'anomaly', pattern: null, createdAt: new Date(T0 + 1) }));
      await alerting.putFeedback(feedback({ feedbackId: 'fb_3', orgId: 'org_b' }));
      expect(await alerting.listFeedback('org_a', 'pump-7')).toEqual([first]);
      expect((await alerting.listFeedback('org_a')).map((f) => f.feedbackId)).toEqual(['fb_1', 'fb_2']);
      expect(await alerting.deleteFeedback('org_a', 'fb_1')).toBe(true);
      expect(await alerting.deleteFeedback('org_a', 'fb_1')).toBe(false);
      expect(await alerting.listFeedback('org_a', 'pump-7')).toEqual([]);
    });

    it("deletes a machine's feedback, its channels' included, and no other machine's", async () => {
      const alerting = await open();
      await alerting.putFeedback(feedback());
      await alerting.putFeedback(feedback({ feedbackId: 'fb_temp', machineId: 'pump-7:temp', createdAt: new Date(T0 + 1) }));
      await alerting.putFeedback(feedback({ feedbackId: 'fb_gone', machineId: 'pump-7:rpm', createdAt: new Date(T0 + 2) }));
      expect(await alerting.deleteFeedback('org_a', 'fb_gone')).toBe(true);
      await alerting.putFeedback(feedback({ feedbackId: 'fb_longer', machineId: 'pump-70', createdAt: new Date(T0 + 3) }));
      await alerting.putFeedback(feedback({ feedbackId: 'fb_other_org', orgId: 'org_b' }));
      expect(await alerting.deleteMachineFeedback('org_a', 'pump-7', 'pump-7:')).toBe(2);
      expect(await alerting.deleteMachineFeedback('org_a', 'pump-7', 'pump-7:')).toBe(0);
      expect((await alerting.listFeedback('org_a')).map((f) => f.feedbackId)).toEqual(['fb_longer']);
      expect((await alerting.listFeedback('org_b')).map((f) => f.feedbackId)).toEqual(['fb_other_org']);
      // Without a prefix (a series id that names a channel itself): that series only.
      await alerting.putFeedback(feedback({ feedbackId: 'fb_ch', machineId: 'old:a', createdAt: new Date(T0 + 4) }));
      await alerting.putFeedback(feedback({ feedbackId: 'fb_ch_sub', machineId: 'old:a:b', createdAt: new Date(T0 + 5) }));
      expect(await alerting.deleteMachineFeedback('org_a', 'old:a', null)).toBe(1);
      expect((await alerting.listFeedback('org_a')).map((f) => f.feedbackId)).toEqual(['fb_longer', 'fb_ch_sub']);
      await expect(alerting.deleteMachineFeedback('', 'pump-7', null)).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
    });

    it("records alerts with their deliveries in one write, lists a machine's latest start first, and deletes a machine's alerts only", async () => {
      const alerting = await open();
      const opened = alert();
      const closed = alert({ eventId: 'org_a/pump-7/1000/closed', event: 'episode.closed', deliveryIds: [], raisedAt: new Date(T0 + 9) });
      const later = alert({ eventId: 'org_a/pump-7:temp/2000/opened', seriesId: 'pump-7:temp', startedAt: new Date(T0 + 60_000), deliveryIds: ['msg_2', 'msg_3'] });
      const otherMachine = alert({ eventId: 'org_a/fan-2/1000/opened', machineId: 'fan-2', seriesId: 'fan-2' });
      const otherOrg = alert({ orgId: 'org_b' });
      await alerting.recordAlerts([opened, closed, later, otherMachine, otherOrg], [delivery({ deliveryId: 'msg_1' }), delivery({ deliveryId: 'msg_2' })]);
      expect(await alerting.listAlerts('org_a', 'pump-7', 10)).toEqual([later, opened, closed]);
      expect(await alerting.listAlerts('org_a', 'pump-7', 1)).toEqual([later]);
      expect(await alerting.listAlerts('org_b', 'pump-7', 10)).toEqual([otherOrg]);
      expect((await alerting.getDeliveries('org_a', ['msg_1', 'msg_2'])).map((d) => d.deliveryId).sort()).toEqual(['msg_1', 'msg_2']);

      // Raised again (a replayed batch): replaced, not doubled.
      const again = { ...opened, deliveryIds: ['msg_1', 'msg_4'], raisedAt: new Date(T0 + 100) };
      await alerting.recordAlerts([again], []);
      expect(await alerting.listAlerts('org_a', 'pump-7', 10)).toEqual([later, again, closed]);

      expect(await alerting.deleteAlerts('org_a', 'pump-7')).toBe(3);
      expect(await alerting.deleteAlerts('org_a', 'pump-7')).toBe(0);
      expect(await alerting.listAlerts('org_a', 'pump-7', 10)).toEqual([]);
      expect(await alerting.listAlerts('org_a', 'fan-2', 10)).toEqual([otherMachine]);
      expect(await alerting.listAlerts('org_b', 'pump-7', 10)).toEqual([otherOrg]);
      expect((await alerting.getDeliveries('org_a', ['msg_1', 'msg_2'])).length).toBe(2);
      await expect(alerting.listAlerts('org_a', 'pump-7', 0)).rejects.toBeInstanceOf(StoreError);
    });

    it('refuses what it cannot store faithfully, as STORE_INVALID_ARGUMENT', async () => {
      const alerting = await open();
      const refusals = [
        alerting.putWebhook(target({ events: ['episode.exploded' as never] })),
        alerting.putWebhook(target({ minSeverity: 2 })),
        alerting.putWebhook(target({ secrets: [] })),
        alerting.putWebhook(target({ webhookId: '' })),
        alerting.putDelivery(delivery({ status: 'lost' as never })),
        alerting.putFeedback(feedback({ toMs: T0 })),
        alerting.putFeedback(feedback({ label: 'maybe' as never })),
        alerting.getWebhook('', 'wh_1'),
        alerting.recordAlerts([alert({ eventId: '' })], []),
        alerting.recordAlerts([alert({ eventId: 'x'.repeat(1025) })], []),
        alerting.recordAlerts([alert({ startedAt: new Date(Number.NaN) })], []),
        alerting.recordAlerts([alert()], [delivery({ status: 'lost' as never })]),
        alerting.listAlerts('org_a', '', 10),
        alerting.deleteAlerts('', 'pump-7'),
      ];
      for (const refusal of refusals) {
        await expect(refusal).rejects.toMatchObject({ code: 'STORE_INVALID_ARGUMENT' });
      }
    });
  });
}
