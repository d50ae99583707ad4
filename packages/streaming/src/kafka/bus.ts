// The scale-out bus on Kafka (kafkajs). Delivery is at least once: auto-commit is off, and a
// partition's offsets are committed only after the handler resolved for the messages before them.
// A rejected handler is called again with the same messages (after `retryDelayMs`, heartbeating
// in between so the group keeps the partition here) until it succeeds, the consumer stops, or a
// rebalance moves the partition; in the last two cases nothing was committed, so whoever owns the
// partition next gets the messages again. Poison messages are the handler's business (the worker
// dead-letters them and resolves), never a reason to reject.
//
// Losing the broker is survived without the process's help. A consumer whose kafkajs client gives
// up (kafkajs calls it a crash, whatever the error's class) is rebuilt and rejoins its group with
// the backoff of ../retry.ts until the broker answers again; nothing was committed past the last
// finished batch, so nothing is lost or skipped. A producer whose send failed reconnects on the
// next send, and a send fails within a few seconds while the broker is down, so the API can answer
// 503 instead of hanging. `ping()` asks the cluster for its description, for readiness probes.
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
import type { Bus, BusConsumer, BusConsumerOptions, BusProducer, IncomingBatch, IncomingMessage, OutgoingMessage } from '../ports.js';
import { StreamingError } from '../errors.js';
import { streamingMetrics } from '../metrics.js';
import { handlerRetryPolicy, RECONNECT_BACKOFF, retrying, stopRetrying, type RetryPolicy } from '../retry.js';

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
  /** First wait before a rejected handler is called again, ms; later waits double up to ten times it (../retry.ts). Default 500. */
  readonly retryDelayMs?: number;
  /** Told about every rejected handler call (the messages are handed over again). */
  readonly onHandlerError?: (error: unknown, batch: IncomingBatch) => void;
  /**
   * Waits between attempts to rebuild a consumer that lost the broker (exponential, jittered,
   * capped). Default: 250 ms doubling up to 5 s, so a consumer resumes within about 5 s of the
   * broker's return (plus the group's rejoin).
   */
  readonly reconnect?: RetryPolicy;
  /** Told each time a consumer lost the broker and is about to be rebuilt (it is also logged as `warn`). */
  /** `attempt` 1 is the loss itself, 2 the first rebuild that failed, and so on. */
  readonly onConsumerRestart?: (error: StreamingError, restart: { readonly attempt: number }) => void;
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
      // The bus rebuilds a crashed consumer itself (and says so): the crash is a warning here.
      const recovered = namespace === 'Consumer' && text.startsWith('Crash:');
      const byLevel = LEVEL_NAMES[level] ?? 'info';
      log({ level: demoted ? 'debug' : recovered && byLevel === 'error' ? 'warn' : byLevel, namespace, message: text, extra });
    };
}

const LOG_LEVELS = {
  nothing: logLevel.NOTHING,
  error: logLevel.ERROR,
  warn: logLevel.WARN,
  info: logLevel.INFO,
  debug: logLevel.DEBUG,
} as const;

function unavailable(message: string, cause: unknown, context: { topic?: string; groupId?: string } = {}): StreamingError {
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

/**
 * Retries of one send (or of a producer's metadata requests): about 2 s in all, so that a send
 * while the broker is down fails soon and the caller (the API: 503) can say so.
 */
const PRODUCE_RETRY = { retries: 4, initialRetryTime: 100, maxRetryTime: 1_000 } as const;
/**
 * Bytes of values one send carries at most (BusProducer.maxSendBytes): a send's messages to one
 * partition are one record batch, which the broker refuses past message.max.bytes (1 MB by
 * default); the rest is room for the batch's framing.
 */
const SEND_MAX_BYTES = 768 * 1024;
/** Connecting a producer or the readiness probe: the same short budget, per connection attempt. */
const QUICK_CLIENT_RETRY = { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } as const;

/**
 * The kafkajs error types in `cause` and the errors it wraps: a send that ran out of retries
 * throws KafkaJSNumberOfRetriesExceeded with the broker's error (its `type`) inside.
 */
function kafkaErrorTypes(cause: unknown): unknown[] {
  const types: unknown[] = [];
  for (let at: unknown = cause, depth = 0; at !== null && typeof at === 'object' && depth < 5; depth++) {
    const error = at as { type?: unknown; originalError?: unknown; cause?: unknown };
    types.push(error.type);
    at = error.originalError ?? error.cause;
  }
  return types;
}

export function createKafkaBus(options: KafkaBusOptions): Bus {
  if (options.brokers.length === 0) throw new StreamingError('VALUE_INVALID', 'createKafkaBus: no brokers');
  const client = {
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: LOG_LEVELS[options.logLevel ?? 'error'],
    logCreator: logCreator(options.log ?? defaultLog),
  };
  const kafka = new Kafka({ ...client, retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5_000 } });
  // Producers and the readiness probe connect with a short budget: their callers want an answer
  // soon, and retry themselves (the next request, the next probe).
  const quickKafka = new Kafka({ ...client, retry: QUICK_CLIENT_RETRY });
  const maxBatch = options.maxBatchMessages ?? 5_000;
  const handlerRetry = handlerRetryPolicy(options.retryDelayMs ?? 500);
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 1_000;
  const reconnect = options.reconnect ?? RECONNECT_BACKOFF;
  const log = options.log ?? defaultLog;
  const open = new Set<{ close(): Promise<void> }>();
  let admin: Promise<Admin> | undefined;
  let probe: Promise<Admin> | undefined;
  let pinging: Promise<void> | undefined;
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the Kafka bus is closed');
  }

  /** A connected admin client, shared until it fails (the next call connects a new one). */
  function connectedAdmin(build: () => Admin): Promise<Admin> {
    const created = build();
    return created.connect().then(
      () => created,
      async (cause: unknown) => {
        await created.disconnect().catch(() => undefined);
        throw unavailable('cannot connect the Kafka admin client', cause);
      },
    );
  }

  function dropAdmin(which: Promise<Admin> | undefined): void {
    void which?.then((client) => client.disconnect()).catch(() => undefined);
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
      // kafkajs heartbeats only when asked: keep the membership alive while a long batch runs and
      // through the waits between its attempts (the timer fires whenever the thread is free).
      const beat = setInterval(() => void heartbeat().catch(() => undefined), heartbeatIntervalMs);
      let finished: boolean;
      try {
        finished = await retrying(
          async (attempt) => {
            if (!isRunning() || isStale()) return false;
            // Throws while the group rebalances: kafkajs then rejoins, and the uncommitted messages
            // go to whoever gets the partition.
            if (attempt > 1) await heartbeat().catch(stopRetrying);
            await handler(piece);
            return true;
          },
          // Every failure is retried: a handler that cannot take a batch must not lose it.
          { policy: handlerRetry, isRetriable: () => true, onFailure: (error) => options.onHandlerError?.(error, piece) },
        );
      } finally {
        clearInterval(beat);
      }
      if (!finished) return;
      resolveOffset(last.offset);
      const next = (BigInt(last.offset) + 1n).toString();
      // Explicit offsets: with auto-commit off, commitOffsetsIfNecessary() without them commits nothing.
      await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next }] }] });
      const lagMessages = Number(BigInt(batch.highWatermark) - BigInt(next));
      if (Number.isFinite(lagMessages)) streamingMetrics.setConsumerLag(topic, partition, Math.max(0, lagMessages));
      await heartbeat();
    }
  }

  function buildConsumer(groupId: string): Consumer {
    return kafka.consumer({
      groupId,
      sessionTimeout: options.sessionTimeoutMs ?? 10_000,
      rebalanceTimeout: options.rebalanceTimeoutMs ?? 10_000,
      heartbeatInterval: heartbeatIntervalMs,
      maxWaitTimeInMs: options.maxWaitTimeMs ?? 250,
      maxBytesPerPartition: options.maxBytesPerPartition ?? 1024 * 1024,
      maxBytes: options.maxBytes ?? 4 * 1024 * 1024,
      allowAutoTopicCreation: false,
      // kafkajs restarts a crashed consumer only for some errors and with no backoff between
      // restarts; the bus restarts every crash itself (below).
      retry: { retries: 5, restartOnFailure: async () => false },
    });
  }

  return {
    async producer(): Promise<BusProducer> {
      assertOpen();
      let producerClosed = false;
      let current: Promise<Producer> | undefined;
      // A connection given up after a failed send closes once the sends still on it have settled.
      const sending = new Map<Producer, number>();
      const retired = new Set<Producer>();
      const settle = (producer: Producer): void => {
        const left = (sending.get(producer) ?? 1) - 1;
        if (left > 0) {
          sending.set(producer, left);
          return;
        }
        sending.delete(producer);
        if (retired.delete(producer)) void producer.disconnect().catch(() => undefined);
      };
      const connect = (): Promise<Producer> => {
        const created = quickKafka.producer({
          createPartitioner: Partitioners.DefaultPartitioner,
          allowAutoTopicCreation: false,
          retry: PRODUCE_RETRY,
        });
        return created.connect().then(
          () => created,
          async (cause: unknown) => {
            await created.disconnect().catch(() => undefined);
            throw unavailable('cannot connect the Kafka producer', cause);
          },
        );
      };
      const connected = (): Promise<Producer> => {
        const attempt = (current ??= connect());
        // A failed connection is forgotten, so that the next send tries a new one.
        attempt.catch(() => {
          if (current === attempt) current = undefined;
        });
        return attempt;
      };
      await connected();
      const handle = {
        maxSendBytes: SEND_MAX_BYTES,
        async send(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
          assertOpen();
          if (producerClosed) throw new StreamingError('STREAMING_CLOSED', 'this producer is closed');
          if (messages.length === 0) return;
          const using = connected();
          const producer = await using;
          sending.set(producer, (sending.get(producer) ?? 0) + 1);
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
            if (kafkaErrorTypes(cause).includes('UNKNOWN_TOPIC_OR_PARTITION')) {
              throw new StreamingError('TOPIC_UNKNOWN', `topic ${JSON.stringify(topic)} does not exist`, { topic }, { cause });
            }
            // The connection may be what failed: the next send builds a new one.
            if (current === using) {
              current = undefined;
              retired.add(producer);
            }
            throw unavailable(`producing to ${topic} failed`, cause, { topic });
          } finally {
            settle(producer);
          }
        },
        async close(): Promise<void> {
          producerClosed = true;
          open.delete(handle);
          const producer = await current?.catch(() => undefined);
          current = undefined;
          const stale = [...retired];
          retired.clear();
          await Promise.allSettled(stale.map((old) => old.disconnect()));
          await producer?.disconnect();
        },
      };
      open.add(handle);
      return handle;
    },

    async consumer(consumerOptions: BusConsumerOptions): Promise<BusConsumer> {
      assertOpen();
      const { groupId } = consumerOptions;
      let consumerClosed = false;
      let current: Consumer | undefined;
      let handler: ((batch: IncomingBatch) => Promise<void>) | undefined;
      /** The rebuild under way after a crash: retried until a rebuilt consumer has joined the group. */
      let rebuilding: Promise<void> | undefined;
      const stopRebuilding = new AbortController();
      /** Consumers a rebuild attempt waits on: settled by their first GROUP_JOIN or CRASH. */
      const joins = new Map<Consumer, { resolve(): void; reject(cause: unknown): void }>();

      async function start(consumer: Consumer, onBatch: (batch: IncomingBatch) => Promise<void>): Promise<void> {
        consumer.on(consumer.events.GROUP_JOIN, () => {
          joins.get(consumer)?.resolve();
          joins.delete(consumer);
        });
        consumer.on(consumer.events.CRASH, (event) => {
          // kafkajs has disconnected it by now. Before its first join it fails the rebuild attempt
          // that made it (which then tries again); after, it starts a rebuild of its own.
          const waiting = joins.get(consumer);
          joins.delete(consumer);
          if (waiting) waiting.reject(event.payload.error);
          else if (consumer === current) rebuild(event.payload.error);
        });
        try {
          await consumer.connect();
          // A new group starts at the earliest retained message: points produced before the
          // first worker started are judged too.
          await consumer.subscribe({ topics: [...consumerOptions.topics], fromBeginning: true });
        } catch (cause) {
          await consumer.disconnect().catch(() => undefined);
          throw unavailable(`cannot join consumer group ${groupId}`, cause, { groupId });
        }
        await consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
          eachBatch: (payload) => handleBatch(onBatch, payload),
        });
      }

      /** One rebuild attempt: a new consumer, resolved once it has joined the group. */
      async function rebuildOnce(): Promise<void> {
        await current?.disconnect().catch(() => undefined);
        if (consumerClosed || closed || !handler) return;
        const next = buildConsumer(groupId);
        current = next;
        const { signal } = stopRebuilding;
        let stop: (() => void) | undefined;
        const joined = new Promise<void>((resolve, reject) => {
          joins.set(next, { resolve, reject });
          stop = () => reject(signal.reason);
          signal.addEventListener('abort', stop, { once: true });
        });
        try {
          await start(next, handler);
          await joined;
        } finally {
          joins.delete(next);
          if (stop) signal.removeEventListener('abort', stop);
        }
      }

      function rebuild(cause: unknown): void {
        if (consumerClosed || closed) return;
        const lost = cause instanceof StreamingError ? cause : unavailable(`consumer group ${groupId} lost Kafka`, cause, { groupId });
        const previous = rebuilding ?? Promise.resolve();
        const run = previous
          .then(() =>
            retrying(
              async (attempt) => {
                // The crash counts as the first failed attempt, so the first rebuild waits the policy's first delay.
                if (attempt === 1) throw lost;
                await rebuildOnce();
              },
              {
                policy: reconnect,
                signal: stopRebuilding.signal,
                onFailure: (failure, attempt) => {
                  if (stopRebuilding.signal.aborted) return;
                  const error =
                    failure instanceof StreamingError ? failure : unavailable(`consumer group ${groupId} lost Kafka`, failure, { groupId });
                  log({
                    level: 'warn',
                    namespace: 'Bus',
                    message:
                      attempt === 1
                        ? `the consumer of group ${groupId} lost Kafka; rebuilding it`
                        : `rebuilding the consumer of group ${groupId} failed (attempt ${attempt - 1}); trying again`,
                    extra: { groupId, attempt, code: error.code, error: error.message },
                  });
                  options.onConsumerRestart?.(error, { attempt });
                },
              },
            ),
          )
          .catch((error: unknown) => {
            if (stopRebuilding.signal.aborted) return;
            const message = error instanceof Error ? error.message : String(error);
            log({ level: 'error', namespace: 'Bus', message: `gave up rebuilding the consumer of group ${groupId}`, extra: { groupId, error: message } });
          });
        const tracked: Promise<void> = run.finally(() => {
          if (rebuilding === tracked) rebuilding = undefined;
        });
        rebuilding = tracked;
      }

      const handle = {
        async run(onBatch: (batch: IncomingBatch) => Promise<void>): Promise<void> {
          assertOpen();
          if (consumerClosed) throw new StreamingError('STREAMING_CLOSED', 'this consumer is closed');
          if (handler) throw new StreamingError('VALUE_INVALID', 'this consumer is already running');
          handler = onBatch;
          const first = buildConsumer(groupId);
          current = first;
          try {
            await start(first, onBatch);
          } catch (error) {
            handler = undefined;
            current = undefined;
            throw error;
          }
        },
        async close(): Promise<void> {
          if (consumerClosed) return;
          consumerClosed = true;
          open.delete(handle);
          stopRebuilding.abort(new StreamingError('STREAMING_CLOSED', 'this consumer is closed'));
          await rebuilding;
          // Waits for the batch in flight (its handler and commit), then leaves the group.
          await current?.disconnect();
        },
      };
      open.add(handle);
      return handle;
    },

    async ensureTopics(wanted): Promise<void> {
      assertOpen();
      const using = (admin ??= connectedAdmin(() => kafka.admin()));
      try {
        const client = await using;
        const existing = new Set(await client.listTopics());
        const missing = wanted.filter((topic) => !existing.has(topic.name));
        if (missing.length === 0) return;
        await client.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic: topic.name, numPartitions: topic.partitions })),
        });
      } catch (cause) {
        // Another replica created it between our list and create: fine.
        if (kafkaErrorTypes(cause).includes('TOPIC_ALREADY_EXISTS')) return;
        if (admin === using) {
          admin = undefined;
          dropAdmin(using);
        }
        if (cause instanceof StreamingError) throw cause;
        throw unavailable('cannot create topics', cause);
      }
    },

    ping(): Promise<void> {
      assertOpen();
      // Concurrent probes share one request, so a slow broker does not pile them up.
      pinging ??= (async () => {
        const using = (probe ??= connectedAdmin(() => quickKafka.admin({ retry: QUICK_CLIENT_RETRY })));
        try {
          const cluster = await (await using).describeCluster();
          if (cluster.brokers.length === 0) throw new Error('the cluster lists no broker');
        } catch (cause) {
          if (probe === using) {
            probe = undefined;
            dropAdmin(using);
          }
          if (cause instanceof StreamingError) throw cause;
          throw unavailable('Kafka did not describe its cluster', cause);
        }
      })().finally(() => {
        pinging = undefined;
      });
      return pinging;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...open].map((handle) => handle.close()));
      for (const client of [admin, probe]) await client?.then((connected) => connected.disconnect()).catch(() => undefined);
    },
  };
}
