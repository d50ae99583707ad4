// The one way this code base builds a Redis connection (npm `redis` v6): the checkpoint store
// (@adp/store), the notifier and the API's key cache and rate limiter all go through it, so
// the reconnect rule (quick first tries, then every 2 s at most, for as long as the process
// lives) is written once.
import { createClient } from 'redis';
import { StreamingError } from '../errors.js';

/** Longest wait between reconnection attempts, ms: bounds how late a recovered Redis is noticed. */
export const REDIS_MAX_RECONNECT_DELAY_MS = 2_000;

/** Wait before reconnection attempt `retries` (0 first), ms: 50 ms doubling, capped. */
export function redisReconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** Math.min(retries, 10), REDIS_MAX_RECONNECT_DELAY_MS);
}

export interface RedisConnectionOptions {
  readonly url: string;
  /** How long one connection attempt may take, ms. Default 5000. */
  readonly connectTimeoutMs?: number;
  /**
   * Fail fast instead of waiting for Redis: commands are refused at once while the connection is
   * down (no offline queue) and time out after this many ms. For callers that fail open (the
   * API's cache and rate limiter). Default unset: commands queue while reconnecting.
   */
  readonly commandTimeoutMs?: number;
}

/** A client that is not connected yet; `connect()` it and give it an 'error' listener. */
export function createRedisConnection(options: RedisConnectionOptions) {
  const failFast = options.commandTimeoutMs !== undefined;
  return createClient({
    url: options.url,
    ...(failFast ? { disableOfflineQueue: true, commandOptions: { timeout: options.commandTimeoutMs } } : {}),
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      reconnectStrategy: redisReconnectDelayMs,
    },
  });
}

export type RedisConnection = ReturnType<typeof createRedisConnection>;

/** What closeRedis needs of a connection (any `redis` client, whatever its options). */
export interface ClosableRedis {
  readonly isReady: boolean;
  readonly isOpen: boolean;
  close(): Promise<unknown>;
  destroy(): void;
}

/** Closes a Redis connection: gracefully when it is up, at once when it is not. */
export async function closeRedis(client: ClosableRedis): Promise<void> {
  if (client.isReady) {
    try {
      await client.close();
      return;
    } catch {
      // fall through to destroy
    }
  }
  if (client.isOpen) client.destroy();
}

/** REDIS_UNAVAILABLE (retriable) for a failed Redis call: what was being done, and the cause. */
export function redisUnavailable(what: string, cause: unknown): StreamingError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new StreamingError('REDIS_UNAVAILABLE', `${what}${detail}`, {}, { cause });
}

/** Fails at once while the client is reconnecting: a queued PING would only wait. */
export async function pingRedis(client: RedisConnection, what: string): Promise<void> {
  if (!client.isReady) throw new StreamingError('REDIS_UNAVAILABLE', `Redis for ${what} is not connected`);
  try {
    await client.ping();
  } catch (cause) {
    throw redisUnavailable(`pinging Redis for ${what}`, cause);
  }
}

/** A connected client with an 'error' listener; REDIS_UNAVAILABLE when Redis does not answer. */
export async function connectRedis(url: string, what: string): Promise<RedisConnection> {
  const client = createRedisConnection({ url });
  // Without a listener an 'error' event would crash the process; the commands themselves reject.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (cause) {
    client.destroy();
    throw redisUnavailable(`cannot connect to Redis for ${what}`, cause);
  }
  return client;
}
