// The API's Redis connection (REDIS_URL): the key-lookup cache and the rate limiter share it.
// Built for failing open: commands are refused at once while the connection is down (no offline
// queue) and time out after COMMAND_TIMEOUT_MS, so a Redis outage costs a request a few
// milliseconds and a log line, never a hang or a 500. The client reconnects on its own.
import { createRedisConnection, type RedisConnection } from '@adp/streaming';

export type { RedisConnection };

/** How long one Redis command may take before the caller treats Redis as down. */
const COMMAND_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 2_000;
/** At most one "Redis is down" log line per this many milliseconds. */
const ERROR_LOG_INTERVAL_MS = 10_000;

export interface RedisLogger {
  warn(object: Record<string, unknown>, message: string): void;
  info(object: Record<string, unknown>, message: string): void;
}

export interface OpenRedisOptions {
  readonly url: string;
  readonly log: RedisLogger;
  /** How long `openRedis` waits for the first connection before going on without it. */
  readonly startWaitMs?: number;
}

/**
 * Connects to Redis. Resolves once connected, or after `startWaitMs` (default 2 s) with a client
 * that keeps reconnecting in the background: the API starts even while Redis is down.
 */
export async function openRedis(options: OpenRedisOptions): Promise<RedisConnection> {
  const client = createRedisConnection({ url: options.url, connectTimeoutMs: CONNECT_TIMEOUT_MS, commandTimeoutMs: COMMAND_TIMEOUT_MS });
  let lastLoggedMs = 0;
  client.on('error', (err: unknown) => {
    const now = Date.now();
    if (now - lastLoggedMs < ERROR_LOG_INTERVAL_MS) return;
    lastLoggedMs = now;
    options.log.warn({ err }, 'Redis connection error: the key cache and rate limiting fail open until it recovers');
  });
  const connected = client.connect().then(
    () => true,
    () => false,
  );
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), options.startWaitMs ?? CONNECT_TIMEOUT_MS);
  });
  const ready = await Promise.race([connected, waited]);
  clearTimeout(timer);
  if (!ready) options.log.warn({}, 'Redis is not reachable at start; going on without it and reconnecting in the background');
  return client;
}

