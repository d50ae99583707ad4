// The durable in-process bus and its files: what send() accepted is on disk and comes back after a
// reopen, committed offsets survive a reopen (delivery resumes after them), uncommitted batches
// are delivered again, a torn last record is cut off (never a crash), damage before the tail is
// refused, committed segments are deleted, and a partition whose consumers lag refuses sends
// instead of dropping what they have not read.
import { appendFile, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDurableInProcessBus, type Bus, type DurableInProcessBusOptions, type IncomingMessage, type StreamingError } from '../src/index.js';
import { decodeRecords, encodeRecord } from '../src/in-process/bus-log-records.js';
import { partitionForKey } from '../src/in-process/partitioner.js';

const dirs: string[] = [];
const buses: Bus[] = [];

afterEach(async () => {
  await Promise.all(buses.splice(0).map((bus) => bus.close().catch(() => undefined)));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'adp-bus-'));
  dirs.push(dir);
  return dir;
}

async function open(dir: string, options: Partial<DurableInProcessBusOptions> = {}): Promise<Bus> {
  const bus = await openDurableInProcessBus({ dir, retryDelayMs: 10, ...options });
  buses.push(bus);
  return bus;
}

async function closeBus(bus: Bus): Promise<void> {
  await bus.close();
  buses.splice(buses.indexOf(bus), 1);
}

function values(count: number, from = 0, key = 'o/m'): { key: string; value: Buffer; headers: Record<string, string> }[] {
  return Array.from({ length: count }, (_, i) => ({ key, value: Buffer.from(`v${from + i}`), headers: { n: String(from + i) } }));
}

/** Consumes with `groupId` until `count` messages arrived (or `until` says stop), committing each batch. */
async function consume(bus: Bus, groupId: string, topic: string, count: number): Promise<IncomingMessage[]> {
  const seen: IncomingMessage[] = [];
  const consumer = await bus.consumer({ groupId, topics: [topic] });
  await consumer.run(async (batch) => {
    seen.push(...batch.messages);
  });
  await expect.poll(() => seen.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(count);
  await consumer.close();
  return seen;
}

const segmentsOf = async (dir: string, topic: string, partition: number) =>
  (await readdir(path.join(dir, 'topics', topic, String(partition)))).filter((name) => name.endsWith('.log')).sort();

describe('record framing', () => {
  const record = { offset: 7, timestampMs: 1_700_000_000_123, key: Buffer.from('o/m'), headers: { traceparent: 'x' }, value: Buffer.from([1, 2, 3]) };

  it('reads back what it wrote, and stops at a short, mislabelled or impossible record', () => {
    const one = encodeRecord(record);
    const two = encodeRecord({ ...record, offset: 8, key: null, headers: {}, value: Buffer.alloc(0) });
    const whole = Buffer.concat([one, two]);
    expect(decodeRecords(whole)).toEqual({
      records: [record, { ...record, offset: 8, key: null, headers: {}, value: Buffer.alloc(0) }],
      validBytes: whole.length,
      damage: null,
    });
    for (let cut = one.length + 1; cut < whole.length; cut++) {
      const decoded = decodeRecords(whole.subarray(0, cut));
      expect(decoded.records).toHaveLength(1);
      expect(decoded.validBytes).toBe(one.length);
      expect(decoded.damage).toMatch(/cut short/);
    }
    const flipped = Buffer.from(whole);
    flipped[whole.length - 1]! ^= 0xff;
    expect(decodeRecords(flipped)).toMatchObject({ validBytes: one.length, damage: 'a record does not match its checksum' });
    const huge = Buffer.from(whole);
    huge.writeUInt32BE(0xffffffff, one.length);
    expect(decodeRecords(huge).damage).toMatch(/impossible/);
    expect(decodeRecords(Buffer.concat([one, Buffer.alloc(64)])).damage).toMatch(/impossible/);
  });
});

describe('openDurableInProcessBus', () => {
  it('keeps what send() accepted across a reopen: same partitions, offsets, keys, headers and values', async () => {
    const dir = await tempDir();
    const first = await open(dir);
    await first.ensureTopics([{ name: 't', partitions: 3 }]);
    const producer = await first.producer();
    const keys = ['o/a', 'o/b', 'o/c', 'o/d'];
    // Concurrent sends share the partitions' writes; each resolves once its messages are synced.
    await Promise.all(keys.map((key, k) => producer.send('t', values(50, k * 100, key))));
    await closeBus(first);

    const second = await open(dir);
    // An existing topic keeps its partitions (as on Kafka).
    await second.ensureTopics([{ name: 't', partitions: 8 }]);
    const seen = await consume(second, 'g', 't', 200);
    expect(seen).toHaveLength(200);
    for (const key of keys) {
      const mine = seen.filter((message) => message.key!.toString() === key);
      expect(mine).toHaveLength(50);
      expect(new Set(mine.map((message) => message.partition))).toEqual(new Set([partitionForKey(key, 3)]));
      const k = keys.indexOf(key);
      expect(mine.map((message) => message.value.toString())).toEqual(values(50, k * 100).map((v) => v.value.toString()));
      expect(mine.map((message) => message.headers)).toEqual(values(50, k * 100).map((v) => v.headers));
    }
    for (let partition = 0; partition < 3; partition++) {
      const offsets = seen.filter((message) => message.partition === partition).map((message) => Number(message.offset));
      expect(offsets).toEqual(offsets.map((_, i) => i));
    }
  });

  it('resumes each group after its committed offsets, and delivers again what was not committed', async () => {
    const dir = await tempDir();
    const first = await open(dir, { maxBatchMessages: 10 });
    await first.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await first.producer();
    await producer.send('t', values(100));
    // Group g stores 30 and then fails (its later batches are not committed).
    const seen: string[] = [];
    const consumer = await first.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      if (Number(batch.messages[0]!.offset) >= 30) throw new Error('store down');
      seen.push(...batch.messages.map((message) => message.value.toString()));
    });
    await expect.poll(() => seen.length).toBe(30);
    await consumer.close();
    await closeBus(first);

    const second = await open(dir, { maxBatchMessages: 10 });
    await second.ensureTopics([{ name: 't', partitions: 1 }]);
    await (await second.producer()).send('t', values(5, 100));
    const rest = await consume(second, 'g', 't', 75);
    expect(rest.map((message) => message.value.toString())).toEqual(values(75, 30).map((v) => v.value.toString()));
    expect(rest[0]!.offset).toBe('30');
    await closeBus(second);

    // g committed everything: a third open delivers nothing old, and new messages only.
    const third = await open(dir);
    await third.ensureTopics([{ name: 't', partitions: 1 }]);
    await (await third.producer()).send('t', values(1, 200));
    const fresh = await consume(third, 'g', 't', 1);
    expect(fresh.map((message) => [message.offset, message.value.toString()])).toEqual([['105', 'v200']]);
  });

  it('cuts off a torn last record when it reopens, and goes on appending after the last whole one', async () => {
    const dir = await tempDir();
    const warnings: [string, Record<string, unknown>][] = [];
    const first = await open(dir);
    await first.ensureTopics([{ name: 't', partitions: 1 }]);
    await (await first.producer()).send('t', values(10));
    await closeBus(first);
    const [segment] = await segmentsOf(dir, 't', 0);
    const file = path.join(dir, 'topics', 't', '0', segment!);
    const whole = (await stat(file)).size;
    // A crash in the middle of an append: half of a record, then (another time) garbage.
    const last = encodeRecord({ offset: 10, timestampMs: 1, key: null, headers: {}, value: Buffer.alloc(100, 7) });
    await appendFile(file, last.subarray(0, 60));

    const second = await open(dir, { onWarning: (message, detail) => warnings.push([message, detail]) });
    expect(warnings).toEqual([
      [
        'truncated a torn record at the end of the bus log',
        expect.objectContaining({ topic: 't', partition: 0, atByte: whole, droppedBytes: 60 }),
      ],
    ]);
    expect((await stat(file)).size).toBe(whole);
    await second.ensureTopics([{ name: 't', partitions: 1 }]);
    await (await second.producer()).send('t', values(2, 10));
    await closeBus(second);

    await appendFile(file, Buffer.from('not a record at all'));
    const third = await open(dir, { onWarning: () => undefined });
    await third.ensureTopics([{ name: 't', partitions: 1 }]);
    const seen = await consume(third, 'g', 't', 12);
    expect(seen.map((message) => [message.offset, message.value.toString()])).toEqual(
      values(12).map((v, i) => [String(i), v.value.toString()]),
    );
  });

  it('refuses to open when a record before the last segment is damaged, rather than skip it', async () => {
    const dir = await tempDir();
    const first = await open(dir, { segmentBytes: 200 });
    await first.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await first.producer();
    for (let i = 0; i < 20; i++) await producer.send('t', values(1, i));
    await closeBus(first);
    const segments = await segmentsOf(dir, 't', 0);
    expect(segments.length).toBeGreaterThan(2);
    const firstSegment = path.join(dir, 'topics', 't', '0', segments[0]!);
    const bytes = await readFile(firstSegment);
    bytes[bytes.length - 1]! ^= 0xff;
    await writeFile(firstSegment, bytes);
    await expect(openDurableInProcessBus({ dir })).rejects.toMatchObject({ code: 'BUS_LOG_CORRUPT' } satisfies Partial<StreamingError>);
    // A missing segment in the middle is refused too.
    await truncate(firstSegment, 0);
    await rm(path.join(dir, 'topics', 't', '0', segments[1]!));
    await expect(openDurableInProcessBus({ dir })).rejects.toMatchObject({ code: 'BUS_LOG_CORRUPT' });
  });

  it('deletes segments every group has committed, so disk use follows the backlog, not the history', async () => {
    const dir = await tempDir();
    const bus = await open(dir, { segmentBytes: 4096, compactBytes: 1024, maxBatchMessages: 50 });
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    const consumed: string[] = [];
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      consumed.push(...batch.messages.map((message) => message.offset));
    });
    for (let i = 0; i < 40; i++) await producer.send('t', values(50, i * 50));
    await expect.poll(() => consumed.length).toBe(2000);
    // About 50 KB went through; what is left is the (rolled, empty or small) active segment.
    await expect
      .poll(async () => {
        const files = await segmentsOf(dir, 't', 0);
        const sizes = await Promise.all(files.map(async (name) => (await stat(path.join(dir, 'topics', 't', '0', name))).size));
        return { files: files.length, bytes: sizes.reduce((a, b) => a + b, 0) };
      })
      .toEqual({ files: 1, bytes: expect.any(Number) as number });
    const [left] = await segmentsOf(dir, 't', 0);
    // A segment rolls once it passes segmentBytes, so it holds at most that plus one append (one
    // send of 50 messages here, about 1.2 KB; how sends group into appends depends on timing).
    expect((await stat(path.join(dir, 'topics', 't', '0', left!))).size).toBeLessThan(4096 + 2048);
    await consumer.close();
    await closeBus(bus);

    // The log still knows its next offset, and the group its place.
    const again = await open(dir);
    await again.ensureTopics([{ name: 't', partitions: 1 }]);
    await (await again.producer()).send('t', values(1, 9999));
    const seen = await consume(again, 'g', 't', 1);
    expect(seen.map((message) => message.offset)).toEqual(['2000']);
  });

  it('refuses sends to a partition whose consumers lag too far (BUS_FULL) instead of dropping unread messages', async () => {
    const dir = await tempDir();
    const bus = await open(dir, { retainMessages: 10, maxBatchMessages: 5 });
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      await blocked;
      seen.push(...batch.messages.map((message) => message.value.toString()));
    });
    await producer.send('t', values(10));
    await expect(producer.send('t', values(1, 10))).rejects.toMatchObject({ code: 'BUS_FULL', retriable: true });
    release();
    await expect.poll(() => seen.length).toBe(10);
    await producer.send('t', values(1, 10));
    await expect.poll(() => seen).toEqual(values(11).map((v) => v.value.toString()));
    await consumer.close();
  });

  it('is one process per directory', async () => {
    const dir = await tempDir();
    await open(dir);
    await expect(openDurableInProcessBus({ dir })).rejects.toMatchObject({ code: 'BUS_LOG_UNAVAILABLE' });
  });
});
