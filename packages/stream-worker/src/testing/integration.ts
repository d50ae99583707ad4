// Shared by the worker's integration tests (test/integration/worker-*.test.ts): a streaming
// platform on the real Kafka, ClickHouse and Redis with names of its own (topics, consumer group,
// database, Redis key and channel prefixes), the environment a worker child process needs to
// use the same names, and the clean-up that removes them again.
import { ClickHouseLogLevel, createClient as createClickHouseClient } from '@clickhouse/client';
import {
  encodeTelemetryBatches,
  loadStreamingCodecs,
  type KafkaBusOptions,
  type OutgoingMessage,
  type TelemetryPoint,
} from '@adp/streaming';
import { openStreaming, type Streaming } from '@adp/platform';
import { Kafka, logLevel } from 'kafkajs';
import { createClient as createRedisClient } from 'redis';
import type { WorkerRuntimeConfig } from '../index.js';

export const codecs = loadStreamingCodecs();

export interface ServerUrls {
  readonly kafkaBrokers: string;
  readonly clickhouseUrl: string;
  readonly redisUrl: string;
}

export interface IsolatedNames {
  readonly telemetryTopic: string;
  readonly deadLetterTopic: string;
  readonly groupId: string;
  readonly database: string;
  readonly redisKeyPrefix: string;
  readonly redisChannelPrefix: string;
}

/** Names from one isolated base name (`isolatedName(...)` of test/integration/servers.ts). */
export function namesFrom(base: string): IsolatedNames {
  return {
    telemetryTopic: `${base}_telemetry`,
    deadLetterTopic: `${base}_dlq`,
    groupId: `${base}_workers`,
    database: base,
    redisKeyPrefix: `${base}:`,
    redisChannelPrefix: `${base}:`,
  };
}

export const PARTITIONS = 4;

export function workerConfig(names: IsolatedNames, overrides: Partial<WorkerRuntimeConfig> = {}): WorkerRuntimeConfig {
  return {
    windowPoints: 240,
    memoryPoints: 8640,
    sensitivity: 95,
    maxAnomalyRatio: 0.25,
    changePoints: true,
    predictorCacheSize: 64,
    baselineRefreshMs: 3_600_000,
    groupId: names.groupId,
    telemetryTopic: names.telemetryTopic,
    deadLetterTopic: names.deadLetterTopic,
    telemetryPartitions: PARTITIONS,
    ...overrides,
  };
}

/** The streaming pieces on the real servers under the isolated names. */
export async function openIsolatedStreaming(
  urls: ServerUrls,
  names: IsolatedNames,
  maxBatchMessages = 500,
  kafka: Omit<KafkaBusOptions, 'brokers' | 'clientId'> = {},
): Promise<Streaming> {
  return openStreaming({
    kafkaBrokers: urls.kafkaBrokers.split(','),
    clickhouseUrl: urls.clickhouseUrl,
    clickhouseDatabase: names.database,
    redisUrl: urls.redisUrl,
    redisCheckpointPrefix: `${names.redisKeyPrefix}checkpoint:`,
    redisChannelPrefix: names.redisChannelPrefix,
    kafkaClientId: 'adp-worker-integration',
    kafka: { sessionTimeoutMs: 6_000, rebalanceTimeoutMs: 6_000, maxBatchMessages, retryDelayMs: 100, ...kafka },
  });
}

/** Environment for `apps/worker/src/main.ts` in a child process, on the same names. */
export function workerEnv(urls: ServerUrls, names: IsolatedNames, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    KAFKA_BROKERS: urls.kafkaBrokers,
    CLICKHOUSE_URL: urls.clickhouseUrl,
    CLICKHOUSE_DATABASE: names.database,
    REDIS_URL: urls.redisUrl,
    REDIS_KEY_PREFIX: names.redisKeyPrefix,
    REDIS_CHANNEL_PREFIX: names.redisChannelPrefix,
    WORKER_GROUP_ID: names.groupId,
    TELEMETRY_TOPIC: names.telemetryTopic,
    DEAD_LETTER_TOPIC: names.deadLetterTopic,
    TELEMETRY_PARTITIONS: String(PARTITIONS),
    WORKER_WINDOW_POINTS: '240',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/**
 * A machine's points as telemetry messages: one TelemetryPoint each, or with `pointsPerMessage`
 * above 1, TelemetryBatch messages of that many points (the last one shorter).
 */
export function telemetryMessages(
  orgId: string,
  machineId: string,
  timestampsMs: readonly number[],
  values: readonly number[],
  pointsPerMessage = 1,
): OutgoingMessage[] {
  const key = `${orgId}/${machineId}`;
  if (pointsPerMessage > 1) {
    const points = timestampsMs.map((timestamp, i) => ({ timestamp, value: values[i]!, channels: null }));
    const batch = { organization: orgId, machine_id: machineId, points, tags: {} };
    return encodeTelemetryBatches(codecs.telemetryBatch, batch, { maxPoints: pointsPerMessage }).map((value) => ({ key, value }));
  }
  return timestampsMs.map((timestamp, i) => {
    const point: TelemetryPoint = {
      organization: orgId,
      machine_id: machineId,
      timestamp,
      value: values[i]!,
      channels: null,
      tags: {},
    };
    return { key, value: codecs.telemetry.encode(point) };
  });
}

/** Interleaves several machines' messages by index, as a fleet's telemetry arrives. */
export function interleave(perMachine: readonly OutgoingMessage[][]): OutgoingMessage[] {
  const out: OutgoingMessage[] = [];
  const longest = Math.max(0, ...perMachine.map((messages) => messages.length));
  for (let i = 0; i < longest; i++) for (const messages of perMachine) if (messages[i]) out.push(messages[i]!);
  return out;
}

/** What a scale-out run left on the servers under its own names. */
export interface ScaleOutLeftovers {
  /** Topics by name (absent ones are fine). */
  readonly topics?: readonly string[];
  /** Every topic whose name starts with this. */
  readonly topicPrefix?: string;
  /** Consumer groups (empty ones: call after the consumers have left). */
  readonly groups?: readonly string[];
  /** A ClickHouse database. */
  readonly database?: string;
  /** Every Redis key starting with this. */
  readonly redisKeyPrefix?: string;
}

/**
 * Removes what a test, benchmark or evaluation run made on the real Kafka, ClickHouse and Redis.
 * Best effort: a server that refuses (or a name already gone) does not stop the rest.
 */
export async function removeScaleOut(urls: Omit<ServerUrls, 'redisUrl'> & { readonly redisUrl?: string }, leftovers: ScaleOutLeftovers): Promise<void> {
  const { topics = [], topicPrefix, groups = [], database, redisKeyPrefix } = leftovers;
  if (topics.length > 0 || topicPrefix !== undefined || groups.length > 0) {
    const admin = new Kafka({ clientId: 'adp-cleanup', brokers: urls.kafkaBrokers.split(','), logLevel: logLevel.NOTHING }).admin();
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const ours = [...new Set([...topics, ...[...existing].filter((topic) => topicPrefix !== undefined && topic.startsWith(topicPrefix))])];
      const present = ours.filter((topic) => existing.has(topic));
      if (present.length > 0) await admin.deleteTopics({ topics: present, timeout: 10_000 }).catch(() => undefined);
      if (groups.length > 0) await admin.deleteGroups([...groups]).catch(() => undefined);
    } catch {
      // best effort
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
  if (database !== undefined) {
    const clickhouse = createClickHouseClient({ url: urls.clickhouseUrl, log: { level: ClickHouseLogLevel.OFF } });
    await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${database}` }).catch(() => undefined);
    await clickhouse.close();
  }
  if (redisKeyPrefix !== undefined && urls.redisUrl !== undefined) {
    const redis = createRedisClient({ url: urls.redisUrl });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      for await (const keys of redis.scanIterator({ MATCH: `${redisKeyPrefix}*`, COUNT: 500 })) {
        if (keys.length > 0) await redis.del(keys);
      }
    } catch {
      // best effort
    } finally {
      if (redis.isOpen) redis.destroy();
    }
  }
}

/** Removes the topics, the consumer group, the database and the Redis keys of a worker test. */
export async function cleanUp(urls: ServerUrls, names: IsolatedNames): Promise<void> {
  await removeScaleOut(urls, {
    topics: [names.telemetryTopic, names.deadLetterTopic],
    groups: [names.groupId],
    database: names.database,
    redisKeyPrefix: names.redisKeyPrefix,
  });
}
