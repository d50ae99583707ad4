// The embedded bus: Kafka's semantics that the worker relies on, in one process and without a
// server. Topics have partitions; a keyed message goes to murmur2(key) % partitions as in Kafka;
// consumer groups share a topic's partitions among their members (reassigned whenever a member
// joins or leaves); a batch's offsets are committed only after the handler resolves, and a
// rejected handler gets the same batch again after `retryDelayMs`. A new group starts at the
// earliest retained message. Messages every known group has committed are dropped from memory,
// and a partition keeps at most `retainMessages` uncommitted ones (the oldest go first, like a
// size-based retention), so a long-running `npm start` does not grow without bound.
import type {
  Bus,
  BusConsumer,
  BusConsumerOptions,
  BusProducer,
  IncomingBatch,
  IncomingMessage,
  OutgoingMessage,
} from './contracts.js';
import { StreamingError } from './errors.js';
import { partitionForKey } from './partitioner.js';

export interface InProcessBusOptions {
  /** Most messages handed to one handler call. Default 1000. */
  readonly maxBatchMessages?: number;
  /** Wait before a rejected batch is delivered again, milliseconds. Default 200. */
  readonly retryDelayMs?: number;
  /** Most messages kept per partition; older ones are dropped even if uncommitted. Default 1,000,000. */
  readonly retainMessages?: number;
  /** Told about every rejected handler call (the batch is redelivered). */
  readonly onHandlerError?: (error: unknown, batch: IncomingBatch) => void;
}

interface PartitionLog {
  /** Offset of messages[0]. */
  base: number;
  messages: IncomingMessage[];
}

interface TopicLog {
  readonly name: string;
  readonly partitions: PartitionLog[];
  roundRobin: number;
}

type Handler = (batch: IncomingBatch) => Promise<void>;

interface Member {
  readonly id: number;
  handler: Handler | null;
}

interface PartitionCursor {
  /** Next offset to deliver (the committed offset). */
  committed: number;
  owner: Member | null;
  /** The delivery in progress, if any. */
  inFlight: Promise<void> | null;
  /** Whether a pump loop is running for this cursor. */
  pumping: boolean;
}

interface Group {
  readonly id: string;
  readonly topics: Set<string>;
  readonly members: Member[];
  readonly cursors: Map<string, PartitionCursor>;
}

const cursorKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;

export function createInProcessBus(options: InProcessBusOptions = {}): Bus {
  const maxBatch = options.maxBatchMessages ?? 1000;
  const retryDelayMs = options.retryDelayMs ?? 200;
  const retain = options.retainMessages ?? 1_000_000;
  const topics = new Map<string, TopicLog>();
  const groups = new Map<string, Group>();
  let nextMemberId = 1;
  let closed = false;
  // Pumps waiting for new messages or a change of owner.
  let waiters: (() => void)[] = [];

  function wake(): void {
    const woken = waiters;
    waiters = [];
    for (const resolve of woken) resolve();
  }

  function changed(): Promise<void> {
    return new Promise((resolve) => waiters.push(resolve));
  }

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the in-process bus is closed');
  }

  function cursorFor(group: Group, topic: TopicLog, partition: number): PartitionCursor {
    const key = cursorKey(topic.name, partition);
    let cursor = group.cursors.get(key);
    if (!cursor) {
      cursor = { committed: topic.partitions[partition]!.base, owner: null, inFlight: null, pumping: false };
      group.cursors.set(key, cursor);
    }
    return cursor;
  }

  /** Round-robin assignment of every subscribed partition to the group's running members. */
  function rebalance(group: Group): void {
    const running = group.members.filter((member) => member.handler !== null);
    let index = 0;
    for (const name of [...group.topics].sort()) {
      const topic = topics.get(name);
      if (!topic) continue;
      for (let partition = 0; partition < topic.partitions.length; partition++) {
        const cursor = cursorFor(group, topic, partition);
        cursor.owner = running.length === 0 ? null : running[index % running.length]!;
        index++;
        if (cursor.owner && !cursor.pumping) void pump(group, topic, partition, cursor);
      }
    }
    wake();
  }

  function trim(topic: TopicLog, partition: number): void {
    const log = topic.partitions[partition]!;
    // With no group subscribed yet, everything is kept (up to `retain`) for the first one.
    let keepFrom = log.base;
    let subscribed = false;
    for (const group of groups.values()) {
      if (!group.topics.has(topic.name)) continue;
      const cursor = group.cursors.get(cursorKey(topic.name, partition));
      const committed = cursor ? cursor.committed : log.base;
      keepFrom = subscribed ? Math.min(keepFrom, committed) : committed;
      subscribed = true;
    }
    keepFrom = Math.max(keepFrom, log.base + log.messages.length - retain);
    if (keepFrom > log.base) {
      log.messages.splice(0, keepFrom - log.base);
      log.base = keepFrom;
      for (const group of groups.values()) {
        const cursor = group.cursors.get(cursorKey(topic.name, partition));
        if (cursor && cursor.committed < log.base) cursor.committed = log.base;
      }
    }
  }

  async function pump(group: Group, topic: TopicLog, partition: number, cursor: PartitionCursor): Promise<void> {
    cursor.pumping = true;
    try {
      while (!closed && cursor.owner) {
        const log = topic.partitions[partition]!;
        const owner = cursor.owner;
        if (cursor.committed < log.base) cursor.committed = log.base;
        const start = cursor.committed - log.base;
        if (start >= log.messages.length || !owner.handler) {
          await changed();
          continue;
        }
        const messages = log.messages.slice(start, start + maxBatch);
        const batch: IncomingBatch = { topic: topic.name, partition, messages };
        const handler = owner.handler;
        let ok = false;
        const delivery = (async () => {
          try {
            await handler(batch);
            ok = true;
          } catch (error) {
            options.onHandlerError?.(error, batch);
          }
        })();
        cursor.inFlight = delivery;
        await delivery;
        cursor.inFlight = null;
        if (ok) {
          cursor.committed += messages.length;
          trim(topic, partition);
        } else if (!closed) {
          await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
        }
      }
    } finally {
      cursor.pumping = false;
    }
  }

  const bus: Bus = {
    async producer(): Promise<BusProducer> {
      assertOpen();
      let producerClosed = false;
      return {
        async send(topicName: string, messages: readonly OutgoingMessage[]): Promise<void> {
          assertOpen();
          if (producerClosed) throw new StreamingError('STREAMING_CLOSED', 'this producer is closed');
          const topic = topics.get(topicName);
          if (!topic) {
            throw new StreamingError('TOPIC_UNKNOWN', `topic ${JSON.stringify(topicName)} does not exist`, {
              topic: topicName,
            });
          }
          const now = Date.now();
          const touched = new Set<number>();
          for (const message of messages) {
            const partition =
              message.key === null
                ? topic.roundRobin++ % topic.partitions.length
                : partitionForKey(message.key, topic.partitions.length);
            const log = topic.partitions[partition]!;
            log.messages.push({
              topic: topicName,
              partition,
              offset: String(log.base + log.messages.length),
              key: message.key === null ? null : Buffer.from(message.key, 'utf8'),
              value: message.value,
              headers: { ...message.headers },
              timestampMs: now,
            });
            touched.add(partition);
          }
          for (const partition of touched) trim(topic, partition);
          wake();
        },
        async close(): Promise<void> {
          producerClosed = true;
        },
      };
    },

    async consumer(consumerOptions: BusConsumerOptions): Promise<BusConsumer> {
      assertOpen();
      let group = groups.get(consumerOptions.groupId);
      if (!group) {
        group = { id: consumerOptions.groupId, topics: new Set(), members: [], cursors: new Map() };
        groups.set(group.id, group);
      }
      const theGroup = group;
      for (const topic of consumerOptions.topics) theGroup.topics.add(topic);
      const member: Member = { id: nextMemberId++, handler: null };
      theGroup.members.push(member);
      let consumerClosed = false;
      return {
        async run(handler: Handler): Promise<void> {
          assertOpen();
          if (consumerClosed) throw new StreamingError('STREAMING_CLOSED', 'this consumer is closed');
          member.handler = handler;
          rebalance(theGroup);
        },
        async close(): Promise<void> {
          if (consumerClosed) return;
          consumerClosed = true;
          const index = theGroup.members.indexOf(member);
          if (index >= 0) theGroup.members.splice(index, 1);
          // Let this member's batches in flight finish (and commit) before others take its partitions.
          const inFlight = [...theGroup.cursors.values()]
            .filter((cursor) => cursor.owner === member && cursor.inFlight)
            .map((cursor) => cursor.inFlight);
          member.handler = null;
          await Promise.all(inFlight);
          rebalance(theGroup);
        },
      };
    },

    async ensureTopics(wanted): Promise<void> {
      assertOpen();
      for (const { name, partitions } of wanted) {
        if (topics.has(name)) continue;
        if (!Number.isInteger(partitions) || partitions < 1) {
          throw new StreamingError('VALUE_INVALID', `topic ${name}: partitions must be a positive integer`, {
            topic: name,
          });
        }
        topics.set(name, {
          name,
          partitions: Array.from({ length: partitions }, () => ({ base: 0, messages: [] })),
          roundRobin: 0,
        });
      }
      for (const group of groups.values()) rebalance(group);
    },

    // In this process: nothing to reach.
    async ping(): Promise<void> {},

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const inFlight: Promise<void>[] = [];
      for (const group of groups.values()) {
        for (const cursor of group.cursors.values()) if (cursor.inFlight) inFlight.push(cursor.inFlight);
      }
      wake();
      await Promise.all(inFlight);
    },
  };
  return bus;
}
