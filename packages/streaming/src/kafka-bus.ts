// The scale-out bus on Kafka (kafkajs). Delivery is at least once: auto-commit is off, and a
// partition's offsets are committed only after the handler resolved for the messages before them.
// A rejected handler is called again with the same messages (after `retryDelayMs`, heartbeating
// in between so the group keeps the partition here) until it succeeds, the consumer stops, or a
// rebalance moves the partition; in the last two cases nothing was committed, so whoever owns the
// partition next gets the messages again. Poison messages are the handler's business (the worker
// dead-letters them and resolves), never a reason to reject.
import {
  Kafka,
  logLevel,
  Partitioners,
  type Admin,
  type Consumer,
  type EachBatchPayload,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type logCreator,
  type Producer,
} from 'kafkajs';
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
import { streamingMetrics } from './metrics.js';

export interface KafkaBusOptions {
  /** `host:port` of one or more brokers. */
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** Consumer session timeout, ms: how long a silent member keeps its partitions. Default 10000 (the broker's floor is 6000). */
  readonly sessionTimeoutMs?: number;
  /** Consumer heartbeat interval, ms. Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /** Rebalance timeout, ms: how long the group waits for members to rejoin. Default 10000. */
  readonly rebalanceTimeoutMs?: number;
  /** Longest a fetch waits for data, ms (also how long `close()` may wait for the fetch in flight). Default 250. */
  readonly maxWaitTimeMs?: number;
  /** Most messages handed to one handler call; a larger fetched batch is cut into pieces, each committed after its handler. Default 5000. */
  readonly maxBatchMessages?: number;
  /**
   * Most bytes fetched per partition per request. Default 1 MiB. kafkajs decodes a whole fetch
   * response in one go on the event loop, during which nothing heartbeats: keep a fetch small
   * enough to decode well within the session timeout.
   */
  readonly maxBytesPerPartition?: number;
  /** Most bytes of one fetch response over all partitions. Default 4 MiB. */
  readonly maxBytes?: number;
  /** Partitions handled concurrently by one consumer. Default 1. */
  readonly partitionsConsumedConcurrently?: number;
  /** Wait before a rejected handler is called again, ms. Default 500. */
  readonly retryDelayMs?: number;
  /** Told about every rejected handler call (the messages are handed over again). */
  readonly onHandlerError?: (error: unknown, batch: IncomingBatch) => void;
  /** kafkajs's own log level. Default ERROR. */
  readonly logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  /**
   * Where kafkajs's log entries go. Default: one JSON line on stderr each, debug dropped. A heartbeat answered
   * "rebalancing" is a normal step of a rebalance, which kafkajs logs as an error; it is passed on
   * as `debug`.
   */
  readonly log?: (entry: KafkaLogEntry) => void;
}

export interface KafkaLogEntry {
  readonly level: 'error' | 'warn' | 'info' | 'debug';
  readonly namespace: string;
  readonly message: string;
  readonly extra: Readonly<Record<string, unknown>>;
}

const LEVEL_NAMES: Readonly<Record<number, KafkaLogEntry['level']>> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

function defaultLog(entry: KafkaLogEntry): void {
  if (entry.level === 'debug') return;
  process.stderr.write(`${JSON.stringify({ level: entry.level, logger: 'kafkajs', namespace: entry.namespace, message: entry.message, ...entry.extra })}\n`);
}

function logCreator(log: (entry: KafkaLogEntry) => void): logCreator {
  return () =>
    ({ namespace, level, log: { message, timestamp: _timestamp, logger: _logger, ...extra } }: LogEntry) => {
      const text = String(message);
      const demoted = text.startsWith('[Connection] Response Heartbeat');
      log({ level: demoted ? 'debug' : (LEVEL_NAMES[level] ?? 'info'), namespace, message: text, extra });
    };
}

const LOG_LEVELS = {
  nothing: logLevel.NOTHING,
  error: logLevel.ERROR,
  warn: logLevel.WARN,
  info: logLevel.INFO,
  debug: logLevel.DEBUG,
} as const;

function unavailable(message: string, cause: unknown, context: { topic?: string } = {}): StreamingError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new StreamingError('KAFKA_UNAVAILABLE', `${message}${detail}`, context, { cause });
}

function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = Buffer.isBuffer(first) ? first.toString('utf8') : String(first);
  }
  return out;
}

function incoming(topic: string, partition: number, message: KafkaMessage): IncomingMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key,
    value: message.value ?? Buffer.alloc(0),
    headers: headersOf(message.headers),
    timestampMs: Number(message.timestamp),
  };
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createKafkaBus(options: KafkaBusOptions): Bus {
  if (options.brokers.length === 0) throw new StreamingError('VALUE_INVALID', 'createKafkaBus: no brokers');
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: LOG_LEVELS[options.logLevel ?? 'error'],
    logCreator: logCreator(options.log ?? defaultLog),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5_000 },
  });
  const maxBatch = options.maxBatchMessages ?? 5_000;
  const retryDelayMs = options.retryDelayMs ?? 500;
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 1_000;
  const open = new Set<{ close(): Promise<void> }>();
  let admin: Admin | undefined;
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the Kafka bus is closed');
  }

  async function adminClient(): Promise<Admin> {
    if (!admin) {
      const created = kafka.admin();
      try {
        await created.connect();
      } catch (cause) {
        throw unavailable('cannot connect the Kafka admin client', cause);
      }
      admin = created;
    }
    return admin;
  }

  async function handleBatch(
    handler: (batch: IncomingBatch) => Promise<void>,
    payload: EachBatchPayload,
  ): Promise<void> {
    const { batch, heartbeat, isRunning, isStale, resolveOffset, commitOffsetsIfNecessary } = payload;
    const { topic, partition } = batch;
    for (let start = 0; start < batch.messages.length; start += maxBatch) {
      const slice = batch.messages.slice(start, start + maxBatch);
      const last = slice[slice.length - 1];
      if (!last) return;
      const piece: IncomingBatch = { topic, partition, messages: slice.map((m) => incoming(topic, partition, m)) };
      for (;;) {
        if (!isRunning() || isStale()) return;
        // kafkajs heartbeats only when asked: keep the membership alive while a long batch runs
        // (the timer fires whenever the handler yields the thread).
        const beat = setInterval(() => void heartbeat().catch(() => undefined), heartbeatIntervalMs);
        try {
          await handler(piece);
          break;
        } catch (error) {
          options.onHandlerError?.(error, piece);
          await delay(retryDelayMs);
          // Throws while the group rebalances: kafkajs then rejoins, and the uncommitted messages
          // go to whoever gets the partition.
          await heartbeat();
        } finally {
          clearInterval(beat);
        }
      }
      resolveOffset(last.offset);
      const next = (BigInt(last.offset) + 1n).toString();
      // Explicit offsets: with auto-commit off, commitOffsetsIfNecessary() without them commits nothing.
      await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next }] }] });
      const lagMessages = Number(BigInt(batch.highWatermark) - BigInt(next));
      if (Number.isFinite(lagMessages)) streamingMetrics.setConsumerLag(topic, partition, Math.max(0, lagMessages));
      await heartbeat();
    }
  }

  return {
    async producer(): Promise<BusProducer> {
      assertOpen();
      const producer: Producer = kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
      });
      try {
        await producer.connect();
      } catch (cause) {
        throw unavailable('cannot connect the Kafka producer', cause);
      }
      const handle = {
        async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
          assertOpen();
          if (messages.length === 0) return;
          try {
            await producer.send({
              topic,
              acks: -1,
              messages: messages.map((message) => ({
                key: message.key,
                value: message.value,
                ...(message.headers ? { headers: { ...message.headers } } : {}),
              })),
            });
          } catch (cause) {
            const type = (cause as { type?: unknown }).type;
            if (type === 'UNKNOWN_TOPIC_OR_PARTITION') {
              throw new StreamingError('TOPIC_UNKNOWN', `topic ${JSON.stringify(topic)} does not exist`, { topic }, { cause });
            }
            throw unavailable(`producing to ${topic} failed`, cause, { topic });
          }
        },
        async close(): Promise<void> {
          open.delete(handle);
          await producer.disconnect();
        },
      };
      open.add(handle);
      return handle;
    },

    async consumer(consumerOptions: BusConsumerOptions): Promise<BusConsumer> {
      assertOpen();
      const consumer: Consumer = kafka.consumer({
        groupId: consumerOptions.groupId,
        sessionTimeout: options.sessionTimeoutMs ?? 10_000,
        rebalanceTimeout: options.rebalanceTimeoutMs ?? 10_000,
        heartbeatInterval: heartbeatIntervalMs,
        maxWaitTimeInMs: options.maxWaitTimeMs ?? 250,
        maxBytesPerPartition: options.maxBytesPerPartition ?? 1024 * 1024,
        maxBytes: options.maxBytes ?? 4 * 1024 * 1024,
        allowAutoTopicCreation: false,
      });
      let consumerClosed = false;
      const handle = {
        async run(handler: (batch: IncomingBatch) => Promise<void>): Promise<void> {
          assertOpen();
          if (consumerClosed) throw new StreamingError('STREAMING_CLOSED', 'this consumer is closed');
          try {
            await consumer.connect();
            // A new group starts at the earliest retained message: points produced before the
            // first worker started are judged too.
            await consumer.subscribe({ topics: [...consumerOptions.topics], fromBeginning: true });
          } catch (cause) {
            throw unavailable(`cannot join consumer group ${consumerOptions.groupId}`, cause);
          }
          await consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
            eachBatch: (payload) => handleBatch(handler, payload),
          });
        },
        async close(): Promise<void> {
          if (consumerClosed) return;
          consumerClosed = true;
          open.delete(handle);
          // Waits for the batch in flight (its handler and commit), then leaves the group.
          await consumer.disconnect();
        },
      };
      open.add(handle);
      return handle;
    },

    async ensureTopics(wanted): Promise<void> {
      assertOpen();
      const client = await adminClient();
      try {
        const existing = new Set(await client.listTopics());
        const missing = wanted.filter((topic) => !existing.has(topic.name));
        if (missing.length === 0) return;
        await client.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic: topic.name, numPartitions: topic.partitions })),
        });
      } catch (cause) {
        // Another replica created it between our list and create: fine.
        if ((cause as { type?: unknown }).type === 'TOPIC_ALREADY_EXISTS') return;
        throw unavailable('cannot create topics', cause);
      }
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...open].map((handle) => handle.close()));
      if (admin) await admin.disconnect().catch(() => undefined);
    },
  };
}
