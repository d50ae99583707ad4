// Per-key rate limiting: at most RATE_LIMIT_PER_MINUTE requests per key in a fixed window that
// starts at the key's first request and lasts a minute. In memory for one replica; in Redis for
// many, where one Lua script increments the counter and sets its expiry atomically, so replicas
// never lose counts or leave a counter without an expiry.
import type { RedisConnection } from './redis-client.js';

export type RateDecision =
  | { readonly allowed: true; readonly remaining: number }
  | { readonly allowed: false; readonly retryAfterMs: number };

export interface RateLimiter {
  /** Counts one request of `keyId` and says whether it may proceed. May reject on I/O failure. */
  consume(keyId: string): Promise<RateDecision>;
}

export const RATE_LIMIT_WINDOW_MS = 60_000;

function decide(count: number, limit: number, remainingWindowMs: number): RateDecision {
  if (count <= limit) return { allowed: true, remaining: limit - count };
  return { allowed: false, retryAfterMs: Math.max(1, remainingWindowMs) };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { count: number; resetAtMs: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number = RATE_LIMIT_WINDOW_MS,
    private readonly nowMs: () => number = Date.now,
    /** Above this many tracked keys, expired windows are swept. */
    private readonly sweepAbove = 10_000,
  ) {}

  consume(keyId: string): Promise<RateDecision> {
    const now = this.nowMs();
    let window = this.windows.get(keyId);
    if (!window || window.resetAtMs <= now) {
      if (!window && this.windows.size >= this.sweepAbove) this.sweep(now);
      window = { count: 0, resetAtMs: now + this.windowMs };
      this.windows.set(keyId, window);
    }
    window.count += 1;
    return Promise.resolve(decide(window.count, this.limit, window.resetAtMs - now));
  }

  private sweep(now: number): void {
    for (const [keyId, window] of this.windows) {
      if (window.resetAtMs <= now) this.windows.delete(keyId);
    }
  }
}

// INCR, then PEXPIRE on the first count of a window (or when a counter somehow has no expiry),
// then the counter and its remaining lifetime: all in one script, so atomic across replicas.
const CONSUME_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

export class RedisRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keyPrefix: string,
    private readonly limit: number,
    private readonly windowMs: number = RATE_LIMIT_WINDOW_MS,
  ) {}

  redisKey(keyId: string): string {
    return `${this.keyPrefix}ratelimit:${keyId}`;
  }

  async consume(keyId: string): Promise<RateDecision> {
    const reply = await this.redis.eval(CONSUME_SCRIPT, { keys: [this.redisKey(keyId)], arguments: [String(this.windowMs)] });
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error('unexpected reply from the rate-limit script');
    const count = Number(reply[0]);
    const ttlMs = Number(reply[1]);
    if (!Number.isFinite(count) || !Number.isFinite(ttlMs)) throw new Error('unexpected reply from the rate-limit script');
    return decide(count, this.limit, ttlMs);
  }
}
