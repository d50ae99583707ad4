// What every Bus (ports.ts) promises its callers, as one suite: the in-process bus (memory and
// durable) runs it in test/bus-contract.test.ts, the Kafka bus on the real broker in
// test/integration/bus-contract-kafka.test.ts. Each test opens its own bus and names its own
// topics and groups, so a shared broker sees no test's messages in another.
import { afterEach, describe, expect, it } from 'vitest';
import { StreamingError, type Bus, type BusConsumer, type IncomingBatch, type IncomingMessage, type OutgoingMessage } from '../src/index.js';
import { partitionForKey } from '../src/in-process/partitioner.js';

export interface BusContractFixture {
  /** A new bus for one test (the suite closes it). */
  open(): Promise<Bus>;
  /** A topic or group name no other test or run uses. */
  name(stem: string): string;
}

/** Collects what a consumer is handed, batch by batch. */
function collector() {
  const batches: IncomingBatch[] = [];
  return {
    batches,
    messages: (): IncomingMessage[] => batches.flatMap((batch) => batch.messages),
    values: (): string[] => batches.flatMap((batch) => batch.messages.map((message) => message.value.toString())),
  };
}

const text = (values: readonly string[], key: string | null = 'org/m1'): OutgoingMessage[] =>
  values.map((value) => ({ key, value: Buffer.from(value) }));

export function busContract(label: string, fixture: BusContractFixture): void {
  describe(`Bus contract: ${label}`, () => {
    const closing: Array<{ close(): Promise<void> }> = [];
    afterEach(async () => {
      for (const item of closing.splice(0).reverse()) await item.close().catch(() => undefined);
    });

    async function openBus(): Promise<Bus> {
      const bus = await fixture.open();
      closing.push(bus);
      return bus;
    }

    async function consume(bus: Bus, groupId: string, topic: string, handler: (batch: IncomingBatch) => Promise<void>): Promise<BusConsumer> {
      const consumer = await bus.consumer({ groupId, topics: [topic] });
      closing.push(consumer);
      await consumer.run(handler);
      return consumer;
    }

    it('answers ping, refuses a topic it does not have, and creates topics idempotently', async () => {
      const bus = await openBus();
      await expect(bus.ping?.()).resolves.toBeUndefined();
      const topic = fixture.name('contract_topics');
      const producer = await bus.producer();
      closing.push(producer);
      const refused = await producer.send(topic, text(['x'])).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(StreamingError);
      expect(refused).toMatchObject({ code: 'TOPIC_UNKNOWN', retriable: false, context: { topic } });
      await bus.ensureTopics([{ name: topic, partitions: 2 }]);
      await bus.ensureTopics([{ name: topic, partitions: 2 }]);
      await expect(producer.send(topic, text(['x']))).resolves.toBeUndefined();
    });

    it("hands over key, value, headers, offset and time as sent, each key's messages in order on Kafka's partition for it", async () => {
      const bus = await openBus();
      const topic = fixture.name('contract_order');
      const partitions = 3;
      await bus.ensureTopics([{ name: topic, partitions }]);
      const producer = await bus.producer();
      closing.push(producer);
      const keys = ['org/m1', 'org/m2', 'org/m3', 'org/m4'];
      const sent: OutgoingMessage[] = Array.from({ length: 40 }, (_, i) => ({
        key: keys[i % keys.length]!,
        value: Buffer.from(`${i}`),
        headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, seq: String(i) },
      }));
      const beforeMs = Date.now();
      await producer.send(topic, sent.slice(0, 20));
      await producer.send(topic, sent.slice(20));
      const afterMs = Date.now();
      // A message without a key, and one without headers, come through too.
      await producer.send(topic, [{ key: null, value: Buffer.from('no key') }]);

      const seen = collector();
      await consume(bus, fixture.name('contract_order_group'), topic, async (batch) => {
        seen.batches.push(batch);
      });
      await expect.poll(() => seen.messages().length, { timeout: 30_000 }).toBe(41);

      for (const batch of seen.batches) {
        expect(batch.topic).toBe(topic);
        for (const message of batch.messages) {
          expect(message.topic).toBe(topic);
          expect(message.partition).toBe(batch.partition);
        }
      }
      const keyed = seen.messages().filter((message) => message.key !== null);
      for (const key of keys) {
        const ofKey = keyed.filter((message) => message.key!.toString() === key);
        expect(ofKey.map((message) => message.partition)).toEqual(ofKey.map(() => partitionForKey(key, partitions)));
        const offsets = ofKey.map((message) => BigInt(message.offset));
        expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(ofKey.map((message) => Number(message.value.toString()))).toEqual(
          sent.map((_, i) => i).filter((i) => keys[i % keys.length] === key),
        );
      }
      for (const message of keyed) {
        const i = Number(message.value.toString());
        expect(message.offset).toMatch(/^\d+$/);
        expect(message.headers).toEqual(sent[i]!.headers);
        expect(message.timestampMs).toBeGreaterThanOrEqual(beforeMs);
        expect(message.timestampMs).toBeLessThanOrEqual(afterMs);
      }
      const unkeyed = seen.messages().filter((message) => message.key === null);
      expect(unkeyed.map((message) => [message.value.toString(), message.headers])).toEqual([['no key', {}]]);
    });

    it('hands a rejected batch over again with the same messages, and commits only what a handler took', async () => {
      const bus = await openBus();
      const topic = fixture.name('contract_redelivery');
      const groupId = fixture.name('contract_redelivery_group');
      await bus.ensureTopics([{ name: topic, partitions: 1 }]);
      const producer = await bus.producer();
      closing.push(producer);
      await producer.send(topic, text(['a', 'b', 'c']));

      const calls: string[][] = [];
      let rejected = 0;
      const taken: string[] = [];
      const first = await consume(bus, groupId, topic, async (batch) => {
        const values = batch.messages.map((message) => message.value.toString());
        calls.push(values);
        if (rejected < 2) {
          rejected++;
          throw new Error('not now');
        }
        taken.push(...values);
      });
      await expect.poll(() => taken.length, { timeout: 30_000 }).toBe(3);
      expect(calls.length).toBeGreaterThanOrEqual(3);
      // The first calls were refused: the next one got the same messages, from the same offset.
      expect(calls[1]).toEqual(calls[0]);
      expect(calls[2]).toEqual(calls[0]);
      expect(taken).toEqual(['a', 'b', 'c']);
      await first.close();

      // The group's next member starts after what was committed: nothing twice.
      await producer.send(topic, text(['d', 'e']));
      const next = collector();
      await consume(bus, groupId, topic, async (batch) => {
        next.batches.push(batch);
      });
      await expect.poll(() => next.values(), { timeout: 30_000 }).toEqual(['d', 'e']);
      expect(next.messages().map((message) => message.offset)).toEqual(['3', '4']);
    });

    // (A group that joins after every known group committed may find less: the in-memory bus
    // keeps only what some known group has not committed, Kafka what its retention keeps.)
    it('gives every group each message from the earliest one, whatever the other groups commit', async () => {
      const bus = await openBus();
      const topic = fixture.name('contract_groups');
      await bus.ensureTopics([{ name: topic, partitions: 1 }]);
      const producer = await bus.producer();
      closing.push(producer);
      await producer.send(topic, text(['1', '2']));

      const one = collector();
      const two = collector();
      await consume(bus, fixture.name('contract_group_one'), topic, async (batch) => {
        one.batches.push(batch);
      });
      await consume(bus, fixture.name('contract_group_two'), topic, async (batch) => {
        two.batches.push(batch);
      });
      await producer.send(topic, text(['3']));
      await expect.poll(() => one.values(), { timeout: 30_000 }).toEqual(['1', '2', '3']);
      await expect.poll(() => two.values(), { timeout: 30_000 }).toEqual(['1', '2', '3']);
    });

    it('refuses to be used after close (STREAMING_CLOSED)', async () => {
      const bus = await fixture.open();
      const topic = fixture.name('contract_closed');
      await bus.ensureTopics([{ name: topic, partitions: 1 }]);
      const producer = await bus.producer();
      await producer.close();
      await expect(producer.send(topic, text(['x']))).rejects.toMatchObject({ code: 'STREAMING_CLOSED' });
      await bus.close();
      await expect(bus.producer()).rejects.toMatchObject({ code: 'STREAMING_CLOSED' });
      await expect(bus.consumer({ groupId: fixture.name('contract_closed_group'), topics: [topic] })).rejects.toMatchObject({
        code: 'STREAMING_CLOSED',
      });
      await expect(bus.ensureTopics([{ name: topic, partitions: 1 }])).rejects.toMatchObject({ code: 'STREAMING_CLOSED' });
    });
  });
}
