// The scale-out checkpoint store and notifier on Redis (npm `redis` v6). Checkpoints are plain
// binary values under `<prefix><key>`, written in one MULTI so a batch's checkpoints land together,
// with a TTL so machines that went quiet do not keep memory forever. The notifier publishes on
// `<channelPrefix><channel>` and subscribes on a second connection (a subscribed connection can
// issue no other commands).
import { RESP_TYPES } from 'redis';
import type { CheckpointStore, Notifier } from '../ports.js';
import { StreamingError } from '../errors.js';
import { channelPrefixOf, checkMachineRef, isCheckpointOfMachine } from '../series-ids.js';
import { closeRedis, createRedisConnection, type RedisConnection } from './client.js';

export interface RedisCheckpointOptions {
  /** Key prefix. Default `adp:checkpoint:`. */
  readonly prefix?: string;
  /** Expiry of a checkpoint, seconds; 0 = never. Default 604800 (7 days). */
  readonly ttlSeconds?: number;
}

export interface RedisNotifierOptions {
  /** Prefix of every channel name (isolates test runs, or deployments sharing a Redis). Default none. */
  readonly channelPrefix?: string;
}

function unavailable(what: string, cause: unknown): StreamingError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new StreamingError('REDIS_UNAVAILABLE', `${what}${detail}`, {}, { cause });
}

/** Fails at once while the client is reconnecting: a queued PING would only wait. */
async function pingRedis(client: RedisConnection, what: string): Promise<void> {
  if (!client.isReady) throw new StreamingError('REDIS_UNAVAILABLE', `Redis for ${what} is not connected`);
  try {
    await client.ping();
  } catch (cause) {
    throw unavailable(`pinging Redis for ${what}`, cause);
  }
}

/** `text` matched literally in a SCAN MATCH pattern. */
function globLiteral(text: string): string {
  return text.replace(/[\\*?[\]^-]/g, (ch) => `\\${ch}`);
}

async function connect(url: string, what: string): Promise<RedisConnection> {
  const client = createRedisConnection({ url });
  // Without a listener an 'error' event would crash the process; the commands themselves reject.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (cause) {
    client.destroy();
    throw unavailable(`cannot connect to Redis for ${what}`, cause);
  }
  return client;
}

export async function createRedisCheckpointStore(
  url: string,
  options: RedisCheckpointOptions = {},
): Promise<CheckpointStore> {
  const prefix = options.prefix ?? 'adp:checkpoint:';
  const ttlSeconds = options.ttlSeconds ?? 7 * 24 * 3600;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 0) {
    throw new StreamingError('VALUE_INVALID', 'checkpoint ttlSeconds must be a non-negative integer');
  }
  const client = await connect(url, 'checkpoints');
  const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  return {
    async load(keys: readonly string[]): Promise<Map<string, Buffer>> {
      const found = new Map<string, Buffer>();
      if (keys.length === 0) return found;
      let values: (Buffer | null)[];
      try {
        values = (await binary.mGet(keys.map((key) => prefix + key))) as unknown as (Buffer | null)[];
      } catch (cause) {
        throw unavailable('loading checkpoints', cause);
      }
      keys.forEach((key, index) => {
        const value = values[index];
        if (value) found.set(key, value);
      });
      return found;
    },
    async save(entries: ReadonlyMap<string, Buffer>): Promise<void> {
      if (entries.size === 0) return;
      const multi = client.multi();
      for (const [key, value] of entries) {
        if (ttlSeconds > 0) multi.set(prefix + key, value, { expiration: { type: 'EX', value: ttlSeconds } });
        else multi.set(prefix + key, value);
      }
      try {
        await multi.exec();
      } catch (cause) {
        throw unavailable('saving checkpoints', cause);
      }
    },
    ping: () => pingRedis(client, 'checkpoints'),
    async deleteMachine(orgId: string, machineId: string): Promise<number> {
      checkMachineRef(orgId, machineId, 'deleteMachine');
      // Every consumer group's: `<prefix><group>/<org>/<series>`, the series exact or a channel.
      const stem = `${globLiteral(prefix)}*/${globLiteral(orgId)}/`;
      const channelPrefix = channelPrefixOf(machineId);
      const patterns = [`${stem}${globLiteral(machineId)}`];
      if (channelPrefix !== null) patterns.push(`${stem}${globLiteral(channelPrefix)}*`);
      let removed = 0;
      try {
        for (const pattern of patterns) {
          for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) {
            // The pattern's '*' also spans '/': the exact check keeps only this machine's series.
            const ours = keys.filter((key) => key.startsWith(prefix) && isCheckpointOfMachine(key.slice(prefix.length), orgId, machineId));
            if (ours.length > 0) removed += await client.del(ours);
          }
        }
      } catch (cause) {
        throw unavailable('deleting checkpoints', cause);
      }
      return removed;
    },
    async close(): Promise<void> {
      await closeRedis(client);
    },
  };
}

export async function createRedisNotifier(url: string, options: RedisNotifierOptions = {}): Promise<Notifier> {
  const channelPrefix = options.channelPrefix ?? '';
  const publisher = await connect(url, 'notifications');
  let subscriber: RedisConnection | undefined;
  let closed = false;

  async function subscriberConnection(): Promise<RedisConnection> {
    subscriber ??= await connect(url, 'subscriptions');
    return subscriber;
  }

  return {
    async publish(channel: string, message: string): Promise<void> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      try {
        await publisher.publish(channelPrefix + channel, message);
      } catch (cause) {
        throw unavailable(`publishing on ${channel}`, cause);
      }
    },
    async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      const connection = await subscriberConnection();
      const entry = (message: string) => {
        try {
          listener(message);
        } catch {
          // A listener's failure is its own; it must not break the subscription.
        }
      };
      try {
        await connection.subscribe(channelPrefix + channel, entry);
      } catch (cause) {
        throw unavailable(`subscribing to ${channel}`, cause);
      }
      return async () => {
        if (closed || !connection.isOpen) return;
        await connection.unsubscribe(channelPrefix + channel, entry);
      };
    },
    async ping(): Promise<void> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      await pingRedis(publisher, 'notifications');
      if (subscriber) await pingRedis(subscriber, 'subscriptions');
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all([closeRedis(publisher), subscriber ? closeRedis(subscriber) : Promise.resolve()]);
    },
  };
}
