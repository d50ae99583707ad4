// Smoke test of kafkajs against the real broker from infra/kafka.sh (Apache Kafka 4.x, KRaft, one
// node): create a topic of its own, produce 100 keyed messages, consume all of them in one consumer
// group of its own, check per-key order and the committed offsets, delete the topic.
import { Kafka, logLevel, Partitioners, type Admin, type Consumer, type Producer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('kafka');

const MESSAGES = 100;
const PARTITIONS = 3;
const MACHINES = ['m1', 'm2', 'm3', 'm4', 'm5'] as const;

describe.skipIf(!gate.run)(gateTitle('kafka', gate), () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function kafkaClient(): Kafka {
    return new Kafka({
      clientId: 'anomaly-platform-integration',
      brokers: gate.address.value.split(',').map((broker) => broker.trim()),
      logLevel: logLevel.ERROR,
      retry: { retries: 5, initialRetryTime: 100 },
    });
  }

  it(`produces ${MESSAGES} keyed messages and consumes each once in one group, in order per key`, async () => {
    const kafka = kafkaClient();
    const topic = isolatedName('it_telemetry');
    const groupId = isolatedName('it_group');

    const admin: Admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    const created = await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true });
    expect(created).toBe(true);
    let topicDeleted = false;
    cleanups.push(async () => topicDeleted || admin.deleteTopics({ topics: [topic] }));
    // Runs after the consumer has left (cleanups run in reverse): an empty group can be deleted.
    cleanups.push(() => admin.deleteGroups([groupId]));

    // Explicit partitioner: the default one hashes like the Java client, and naming it silences
    // kafkajs' v2 migration warning.
    const producer: Producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const sent = Array.from({ length: MESSAGES }, (_, seq) => ({
      key: MACHINES[seq % MACHINES.length] ?? 'm1',
      value: JSON.stringify({ seq, value: seq * 0.5 }),
    }));
    const acks = await producer.send({ topic, acks: -1, messages: sent });
    expect(acks.every((ack) => ack.errorCode === 0)).toBe(true);

    // A short fetch wait: disconnect() waits out the fetch in flight (5 s by default).
    const consumer: Consumer = kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: 250,
    });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: Array<{ key: string; seq: number; partition: number }> = [];
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const { seq } = JSON.parse(message.value?.toString() ?? 'null') as { seq: number };
        received.push({ key: message.key?.toString() ?? '', seq, partition });
      },
    });
    await expect.poll(() => received.length, { timeout: 30_000, interval: 50 }).toBe(MESSAGES);
    expect(new Set(received.map((message) => message.seq)).size).toBe(MESSAGES);
    for (const machine of MACHINES) {
      const ofMachine = received.filter((message) => message.key === machine);
      expect(ofMachine.map((message) => message.seq)).toEqual(
        [...ofMachine.map((message) => message.seq)].sort((a, b) => a - b),
      );
      expect(new Set(ofMachine.map((message) => message.partition)).size).toBe(1); // keyed: one partition
    }

    // The group commits what it processed: its committed offsets come to cover all 100 messages.
    const committed = async (): Promise<number> => {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return (offsets?.partitions ?? []).reduce((sum, { offset }) => sum + Math.max(0, Number(offset)), 0);
    };
    await expect.poll(committed, { timeout: 60_000, interval: 100 }).toBe(MESSAGES);
    await consumer.disconnect();

    await admin.deleteTopics({ topics: [topic], timeout: 10_000 });
    topicDeleted = true;
    const listed = async (): Promise<boolean> => (await admin.listTopics()).includes(topic);
    await expect.poll(listed, { timeout: 60_000, interval: 100 }).toBe(false);
  });
});
