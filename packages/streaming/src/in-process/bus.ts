// The embedded bus: Kafka's semantics that the worker relies on, in one process and without a
// server. Topics have partitions; a keyed message goes to murmur2(key) % partitions as in Kafka;
// consumer groups share a topic's partitions among their members (reassigned whenever a member
// joins or leaves); a batch's offsets are committed only after the handler resolves, and a
// rejected handler gets the same batch again after a backoff (../retry.ts). A new group starts at the
// earliest retained message. Messages every known group has committed are dropped from memory,
// and a partition keeps at most `retainMessages` uncommitted ones (the oldest go first, like a
// size-based retention), so a long-running `npm start` does not grow without bound.
//
// openDurableInProcessBus adds files (./bus-log.ts): each append is on disk, fsync'd, before it is
// visible and before send() resolves; committed offsets are on disk before a batch counts as
// committed; a reopened bus hands every group what it had not committed (at least once). Its
// retention never drops a message of a topic that a group consumes: a partition holding
// `retainMessages` messages or `retainBytes` bytes not yet consumed refuses sends (BUS_FULL)
// until the consumers catch up. Topics no group consumes (the dead-letter topic) keep the
// drop-oldest retention.
import path from 'node:path';
import { openBusLog, type BusLog, type BusLogOptions } from './bus-log.js';
import type { Bus, BusConsumer, BusConsumerOptions, BusProducer, IncomingBatch, IncomingMessage, OutgoingMessage } from '../ports.js';
import { StreamingError } from '../errors.js';
import { handlerRetryPolicy, retrying } from '../retry.js';
import { partitionForKey } from './partitioner.js';

export interface InProcessBusOptions {
  /** Most messages handed to one handler call. Default 1000. */
  readonly maxBatchMessages?: number;
  /** First wait before a rejected batch is delivered again, ms; later waits double up to ten times it (../retry.ts). Default 200. */
  readonly retryDelayMs?: number;
  /** Most messages kept per partition; older ones are dropped even if uncommitted. Default 1,000,000. */
  readonly retainMessages?: number;
  /** Told about every rejected handler call (the batch is redelivered). */
  readonly onHandlerError?: (error: unknown, batch: IncomingBatch) => void;
}

export interface DurableInProcessBusOptions extends InProcessBusOptions, BusLogOptions {
  /** Directory of the log files (`<DATA_DIR>/bus` for `npm start`); created when absent. One process at a time. */
  readonly dir: string;
  /** Most bytes of message values a consumed partition holds before sends to it are refused. Default 64 MiB. */
  readonly retainBytes?: number;
  /** Told when a commit could not be recorded (the batch is then delivered again). */
  readonly onCommitError?: (error: unknown, batch: IncomingBatch) => void;
}

interface PartitionLog {
  /** Offset of messages[0]. */
  base: number;
  messages: IncomingMessage[];
  /** Bytes of the values in `messages`. */
  bytes: number;
  /** Messages handed to the log's append and not yet visible (durable bus). */
  appending: number;
  appendingBytes: number;
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

/** The in-process bus, and how much its running consumers have still to consume. */
export interface InProcessBus extends Bus {
  /** Messages not yet committed by the groups that have a running consumer, over all their partitions. */
  backlog(): number;
}

export function createInProcessBus(options: InProcessBusOptions = {}): InProcessBus {
  return createBus(options, null, null);
}

/**
 * The in-process bus backed by files under `options.dir`: what send() accepted survives a crash
 * and is delivered (again) to every group from its last committed offset after a reopen.
 */
export async function openDurableInProcessBus(options: DurableInProcessBusOptions): Promise<InProcessBus> {
  const openedDir = path.resolve(options.dir);
  if (openDirs.has(openedDir)) {
    throw new StreamingError('BUS_LOG_UNAVAILABLE', `the bus log under ${openedDir} is already open in this process`);
  }
  openDirs.add(openedDir);
  try {
    const log = await openBusLog(openedDir, options);
    return createBus(options, log, () => openDirs.delete(openedDir));
  } catch (error) {
    openDirs.delete(openedDir);
    throw error;
  }
}

const openDirs = new Set<string>();

function createBus(
  options: InProcessBusOptions & Partial<Pick<DurableInProcessBusOptions, 'retainBytes' | 'onCommitError'>>,
  log: BusLog | null,
  onClosed: (() => void) | null,
): InProcessBus {
  const maxBatch = options.maxBatchMessages ?? 1000;
  const handlerRetry = handlerRetryPolicy(options.retryDelayMs ?? 200);
  /** Aborted by close(): stops the waits between redeliveries. */
  const closing = new AbortController();
  const retain = options.retainMessages ?? 1_000_000;
  const retainBytes = options.retainBytes ?? 64 * 1024 * 1024;
  const topics = new Map<string, TopicLog>();
  const groups = new Map<string, Group>();
  // What the files hold: topics with their retained messages, groups with their committed offsets.
  for (const restored of log?.topics ?? []) {
    topics.set(restored.name, {
      name: restored.name,
      partitions: restored.partitions.map((partition) => ({
        base: partition.base,
        messages: partition.messages,
        bytes: partition.messages.reduce((sum, message) => sum + message.value.length, 0),
        appending: 0,
        appendingBytes: 0,
      })),
      roundRobin: 0,
    });
  }
  for (const restored of log?.groups ?? []) {
    const group: Group = { id: restored.id, topics: new Set(), members: [], cursors: new Map() };
    for (const [topic, offsets] of restored.offsets) {
      const known = topics.get(topic);
      if (!known) continue;
      group.topics.add(topic);
      for (const [partition, committed] of offsets) {
        const partitionLog = known.partitions[partition];
        if (!partitionLog) continue;
        // Never past the end of the log: what is appended next must be delivered.
        const end = partitionLog.base + partitionLog.messages.length;
        group.cursors.set(cursorKey(topic, partition), { committed: Math.min(committed, end), owner: null, inFlight: null, pumping: false });
      }
    }
    groups.set(group.id, group);
  }
  // Drop from memory (and from disk, in the background) what every group had already committed.
  for (const topic of topics.values()) for (let partition = 0; partition < topic.partitions.length; partition++) trim(topic, partition);
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
    const log_ = topic.partitions[partition]!;
    // With no group subscribed yet, everything is kept (up to `retain`) for the first one.
    let keepFrom = log_.base;
    let subscribed = false;
    for (const group of groups.values()) {
      if (!group.topics.has(topic.name)) continue;
      const cursor = group.cursors.get(cursorKey(topic.name, partition));
      const committed = cursor ? cursor.committed : log_.base;
      keepFrom = subscribed ? Math.min(keepFrom, committed) : committed;
      subscribed = true;
    }
    // The durable bus never drops what a group has still to consume: its sends are refused instead.
    if (!log || !subscribed) keepFrom = Math.max(keepFrom, log_.base + log_.messages.length - retain);
    if (keepFrom > log_.base) {
      const dropped = log_.messages.splice(0, keepFrom - log_.base);
      for (const message of dropped) log_.bytes -= message.value.length;
      log_.base = keepFrom;
      for (const group of groups.values()) {
        const cursor = group.cursors.get(cursorKey(topic.name, partition));
        if (cursor && cursor.committed < log_.base) cursor.committed = log_.base;
      }
      log?.compact(topic.name, partition, log_.base);
    }
  }

  /** Whether some group consumes (or has consumed) the topic. */
  function consumed(topicName: string): boolean {
    for (const group of groups.values()) if (group.topics.has(topicName)) return true;
    return false;
  }

  async function pump(group: Group, topic: TopicLog, partition: number, cursor: PartitionCursor): Promise<void> {
    cursor.pumping = true;
    try {
      while (!closed && cursor.owner) {
        const partitionLog = topic.partitions[partition]!;
        const owner = cursor.owner;
        if (cursor.committed < partitionLog.base) cursor.committed = partitionLog.base;
        const start = cursor.committed - partitionLog.base;
        if (start >= partitionLog.messages.length || !owner.handler) {
          await changed();
          continue;
        }
        const messages = partitionLog.messages.slice(start, start + maxBatch);
        const batch: IncomingBatch = { topic: topic.name, partition, messages };
        const handler = owner.handler;
        const next = cursor.committed + messages.length;
        /** Resolves once the batch is handled and, on the durable bus, its commit written; rejects with why not. */
        const deliver = async (): Promise<void> => {
          try {
            await handler(batch);
          } catch (error) {
            options.onHandlerError?.(error, batch);
            throw error;
          }
          if (!log) return;
          try {
            await log.commit(group.id, topic.name, partition, next);
          } catch (error) {
            // Not recorded: the batch counts as not committed and comes again (at least once).
            options.onCommitError?.(error, batch);
            throw error;
          }
        };
        // The same batch again until it is taken, the partition moves to another member or the bus
        // closes; every failure is retried, since a rejected batch must not be lost.
        const ok = await retrying(
          async () => {
            if (closed || cursor.owner !== owner || owner.handler !== handler) return false;
            // close() waits for the delivery in flight (the handler, then the commit's write).
            const delivery = deliver();
            cursor.inFlight = delivery.catch(() => undefined);
            try {
              await delivery;
            } finally {
              cursor.inFlight = null;
            }
            return true;
          },
          { policy: handlerRetry, isRetriable: () => true, signal: closing.signal },
        ).catch(() => false);
        if (ok) {
          cursor.committed = Math.max(cursor.committed, next);
          trim(topic, partition);
        }
      }
    } finally {
      cursor.pumping = false;
    }
  }

  /**
   * The durable send: each partition's messages are appended (written and synced) by the log, and
   * made visible by it in offset order. A send that spans partitions is not atomic (as on Kafka):
   * when one partition's append fails, the others' may have succeeded.
   */
  async function sendDurably(topic: TopicLog, routed: readonly (readonly [number, OutgoingMessage])[], now: number): Promise<void> {
    const byPartition = new Map<number, OutgoingMessage[]>();
    for (const [partition, message] of routed) {
      let list = byPartition.get(partition);
      if (!list) byPartition.set(partition, (list = []));
      list.push(message);
    }
    const full = consumed(topic.name);
    for (const [partition, list] of byPartition) {
      const partitionLog = topic.partitions[partition]!;
      const bytes = list.reduce((sum, message) => sum + message.value.length, 0);
      const held = partitionLog.messages.length + partitionLog.appending;
      const heldBytes = partitionLog.bytes + partitionLog.appendingBytes;
      if (full && held > 0 && (held + list.length > retain || heldBytes + bytes > retainBytes)) {
        throw new StreamingError(
          'BUS_FULL',
          `${topic.name}/${partition} holds ${held} messages (${heldBytes} bytes) not yet consumed; retry once the consumers catch up`,
          { topic: topic.name, partition },
        );
      }
    }
    await Promise.all(
      [...byPartition].map(async ([partition, list]) => {
        const partitionLog = topic.partitions[partition]!;
        const bytes = list.reduce((sum, message) => sum + message.value.length, 0);
        partitionLog.appending += list.length;
        partitionLog.appendingBytes += bytes;
        try {
          await log!.append(topic.name, partition, list, now, (appended) => {
            for (const message of appended) {
              partitionLog.messages.push(message);
              partitionLog.bytes += message.value.length;
            }
            trim(topic, partition);
            wake();
          });
        } finally {
          partitionLog.appending -= list.length;
          partitionLog.appendingBytes -= bytes;
        }
      }),
    );
  }

  // ensureTopics calls in turn: a topic's files are created once.
  let topicsTurn: Promise<void> = Promise.resolve();

  const bus: InProcessBus = {
    backlog(): number {
      let pending = 0;
      for (const group of groups.values()) {
        if (!group.members.some((member) => member.handler !== null)) continue;
        for (const name of group.topics) {
          const topic = topics.get(name);
          if (!topic) continue;
          topic.partitions.forEach((partitionLog, partition) => {
            const cursor = group.cursors.get(cursorKey(name, partition));
            const end = partitionLog.base + partitionLog.messages.length;
            pending += end - Math.max(cursor ? cursor.committed : partitionLog.base, partitionLog.base);
          });
        }
      }
      return pending;
    },

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
          const partitionOf = (message: OutgoingMessage): number =>
            message.key === null
              ? topic.roundRobin++ % topic.partitions.length
              : partitionForKey(message.key, topic.partitions.length);
          if (log) {
            await sendDurably(topic, messages.map((message) => [partitionOf(message), message] as const), now);
            return;
          }
          const touched = new Set<number>();
          for (const message of messages) {
            const partition = partitionOf(message);
            const partitionLog = topic.partitions[partition]!;
            partitionLog.messages.push({
              topic: topicName,
              partition,
              offset: String(partitionLog.base + partitionLog.messages.length),
              key: message.key === null ? null : Buffer.from(message.key, 'utf8'),
              value: message.value,
              headers: { ...message.headers },
              timestampMs: now,
            });
            partitionLog.bytes += message.value.length;
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
      const turn = topicsTurn.then(async () => {
        for (const { name, partitions } of wanted) {
          if (topics.has(name)) continue;
          if (!Number.isInteger(partitions) || partitions < 1) {
            throw new StreamingError('VALUE_INVALID', `topic ${name}: partitions must be a positive integer`, {
              topic: name,
            });
          }
          if (log && (name === '' || name === '.' || name === '..')) {
            throw new StreamingError('VALUE_INVALID', `topic ${JSON.stringify(name)} cannot name a directory`, { topic: name });
          }
          // An existing topic is never changed (as on Kafka): a reopened bus keeps its partition count.
          await log?.createTopic(name, partitions);
          topics.set(name, {
            name,
            partitions: Array.from({ length: partitions }, () => ({
              base: 0,
              messages: [],
              bytes: 0,
              appending: 0,
              appendingBytes: 0,
            })),
            roundRobin: 0,
          });
        }
        for (const group of groups.values()) rebalance(group);
      });
      topicsTurn = turn.catch(() => undefined);
      await turn;
    },

    // In this process: nothing to reach.
    async ping(): Promise<void> {},

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      closing.abort(new StreamingError('STREAMING_CLOSED', 'the bus is closed'));
      const inFlight: Promise<void>[] = [];
      for (const group of groups.values()) {
        for (const cursor of group.cursors.values()) if (cursor.inFlight) inFlight.push(cursor.inFlight);
      }
      wake();
      await Promise.all(inFlight);
      try {
        await log?.close();
      } finally {
        onClosed?.();
      }
    },
  };
  return bus;
}
