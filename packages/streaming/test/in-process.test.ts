import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { createInProcessBus, createMemoryNotifier, type IncomingBatch, type StreamingError } from '../src/index.js';
import { partitionForKey } from '../src/in-process/partitioner.js';

const require = createRequire(import.meta.url);

function messages(count: number, keys: readonly string[]) {
  return Array.from({ length: count }, (_, i) => ({
    key: keys[i % keys.length]!,
    value: Buffer.from(String(i)),
  }));
}

describe('partitionForKey', () => {
  it('matches kafkajs default partitioner (so both buses put a machine on the same partition)', () => {
    const murmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: string | Buffer) => number;
    for (const key of ['', 'a', 'ab', 'abc', 'abcd', 'org-1/machine-17', 'ünïcødé/m', 'x'.repeat(101)]) {
      const expected = (murmur2(key) & 0x7fffffff) % 7;
      expect(partitionForKey(key, 7), key).toBe(expected);
    }
  });
});

describe('createInProcessBus', () => {
  it('refuses an unknown topic, and keyed messages keep their order on one partition', async () => {
    const bus = createInProcessBus();
    const producer = await bus.producer();
    await expect(producer.send('nope', [{ key: 'a', value: Buffer.from('x') }])).rejects.toMatchObject({
      code: 'TOPIC_UNKNOWN',
    } satisfies Partial<StreamingError>);
    await bus.ensureTopics([{ name: 't', partitions: 4 }]);
    await producer.send('t', messages(100, ['o/m1', 'o/m2', 'o/m3']));
    const seen = new Map<string, { partition: number; values: number[] }>();
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      for (const message of batch.messages) {
        const key = message.key!.toString();
        const entry = seen.get(key) ?? { partition: batch.partition, values: [] };
        expect(entry.partition).toBe(batch.partition);
        entry.values.push(Number(message.value.toString()));
        seen.set(key, entry);
      }
    });
    await expect.poll(() => [...seen.values()].reduce((n, e) => n + e.values.length, 0)).toBe(100);
    for (const [key, entry] of seen) {
      expect(entry.partition).toBe(partitionForKey(key, 4));
      expect(entry.values).toEqual([...entry.values].sort((a, b) => a - b));
    }
    await consumer.close();
    await bus.close();
  });

  it('redelivers a batch whose handler rejected, and commits only after success', async () => {
    const bus = createInProcessBus({ retryDelayMs: 5 });
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    await producer.send('t', messages(10, ['k']));
    const deliveries: string[][] = [];
    let failures = 0;
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      deliveries.push(batch.messages.map((m) => m.offset));
      if (failures < 2) {
        failures++;
        throw new Error('transient');
      }
    });
    await expect.poll(() => deliveries.length).toBe(3);
    expect(deliveries[0]).toEqual(deliveries[2]);
    // A new member of the same group after close resumes after the committed offset.
    await consumer.close();
    await producer.send('t', messages(2, ['k']));
    const later: string[] = [];
    const again = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await again.run(async (batch) => {
      later.push(...batch.messages.map((m) => m.offset));
    });
    await expect.poll(() => later).toEqual(['10', '11']);
    await again.close();
    await bus.close();
  });

  it('shares partitions among a group, moves them on leave, and delivers each message once', async () => {
    const bus = createInProcessBus({ maxBatchMessages: 7 });
    await bus.ensureTopics([{ name: 't', partitions: 6 }]);
    const producer = await bus.producer();
    const keys = Array.from({ length: 24 }, (_, i) => `o/m${i}`);
    const counts = new Map<string, number>();
    const byMember = [new Set<number>(), new Set<number>()];
    const handler = (member: number) => async (batch: IncomingBatch) => {
      byMember[member]!.add(batch.partition);
      for (const m of batch.messages) counts.set(`${batch.partition}:${m.offset}`, (counts.get(`${batch.partition}:${m.offset}`) ?? 0) + 1);
    };
    const a = await bus.consumer({ groupId: 'g', topics: ['t'] });
    const b = await bus.consumer({ groupId: 'g', topics: ['t'] });
    // Joined before anything is produced, so its messages are retained until it commits them.
    const c = await bus.consumer({ groupId: 'other', topics: ['t'] });
    await a.run(handler(0));
    await b.run(handler(1));
    await producer.send('t', messages(300, keys));
    await expect.poll(() => counts.size).toBe(300);
    expect(byMember[0]!.size).toBeGreaterThan(0);
    expect(byMember[1]!.size).toBeGreaterThan(0);
    expect([...byMember[0]!].some((p) => byMember[1]!.has(p))).toBe(false);
    await b.close();
    byMember[0]!.clear();
    await producer.send('t', messages(300, keys));
    await expect.poll(() => counts.size).toBe(600);
    expect(byMember[0]!.size).toBe(6);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // Another group reads everything from the start, independently.
    let other = 0;
    await c.run(async (batch) => {
      other += batch.messages.length;
    });
    await expect.poll(() => other).toBe(600);
    await Promise.all([a.close(), c.close()]);
    await bus.close();
  });

  it('lets a leaving member finish its batch before another member gets the partition', async () => {
    const bus = createInProcessBus();
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    let active = 0;
    let maxActive = 0;
    let handled = 0;
    const handler = async (batch: IncomingBatch) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((resolve) => setTimeout(resolve, 20));
      handled += batch.messages.length;
      active--;
    };
    const a = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await a.run(handler);
    await producer.send('t', messages(5, ['k']));
    await expect.poll(() => active).toBe(1);
    const b = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await b.run(handler);
    const closing = a.close();
    await producer.send('t', messages(5, ['k']));
    await closing;
    await expect.poll(() => handled).toBe(10);
    expect(maxActive).toBe(1);
    await b.close();
    await bus.close();
  });
});

describe('createMemoryNotifier', () => {
  it('fans out notifications until unsubscribed', async () => {
    const notifier = createMemoryNotifier();
    const got: string[] = [];
    const off = await notifier.subscribe('c', (m) => got.push(m));
    await notifier.publish('c', 'x');
    await expect.poll(() => got).toEqual(['x']);
    await off();
    await notifier.publish('c', 'y');
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).toEqual(['x']);
    await notifier.close();
  });
});
