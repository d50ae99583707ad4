// The Bus contract (packages/streaming/test/bus-contract.ts) on the real broker from
// infra/kafka.sh: the Kafka bus keeps the promises the in-process buses keep in the unit tier.
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, it } from 'vitest';
import { createKafkaBus } from '@adp/streaming';
import { busContract } from '../../packages/streaming/test/bus-contract.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('kafka');
const brokers = gate.address.value.split(',').map((broker) => broker.trim());
const topics: string[] = [];

if (gate.run) {
  busContract('Kafka', {
    open: async () =>
      createKafkaBus({ brokers, clientId: 'adp-it-bus-contract', logLevel: 'nothing', retryDelayMs: 50, sessionTimeoutMs: 6_000, rebalanceTimeoutMs: 6_000 }),
    name: (stem) => {
      const name = isolatedName(stem);
      if (!stem.endsWith('_group')) topics.push(name);
      return name;
    },
  });
  afterAll(async () => {
    const admin = new Kafka({ clientId: 'adp-it-bus-contract-cleanup', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      const ours = topics.filter((topic) => existing.has(topic));
      if (ours.length > 0) await admin.deleteTopics({ topics: ours });
    } finally {
      await admin.disconnect();
    }
  });
} else {
  describe.skip(gateTitle('Bus contract: Kafka', gate), () => {
    it('runs on the broker from infra/kafka.sh', () => undefined);
  });
}
