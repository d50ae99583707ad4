// Per-organization rate limiting: at most RATE_LIMIT_PER_MINUTE requests per organization (all its
// keys together) in a fixed window that starts at its first request and lasts a minute. In memory
// for one replica; in Redis for many, where one Lua script increments the counter and sets its
// expiry atomically, so replicas never lose counts or leave a counter without an expiry. The Redis
// counter outlives the process: a restarted API goes on counting the same window.
//
// Also here: the throttle on failed authentication per client address (AUTH_FAILURES_PER_MINUTE),
// kept in each process's memory.
import type { RedisConnection } from './redis-client.js';

export type RateDecision =
  | { readonly allowed: true; readonly remaining: number }
  | { readonly allowed: false; readonly retryAfterMs: number };

export interface RateLimiter {
  /**
   * Counts one request of `subject` (the caller's organization id) and says whether it may
   * proceed. May reject on I/O failure.
   */
  consume(subject: string): Promise<RateDecision>;
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
    /** Above this many tracked subjects, expired windows are swept. */
    private readonly sweepAbove = 10_000,
  ) {}

  consume(subject: string): Promise<RateDecision> {
    const now = this.nowMs();
    let window = this.windows.get(subject);
    if (!window || window.resetAtMs <= now) {
      if (!window && this.windows.size >= this.sweepAbove) this.sweep(now);
      window = { count: 0, resetAtMs: now + this.windowMs };
      this.windows.set(subject, window);
    }
    window.count += 1;
    return Promise.resolve(decide(window.count, this.limit, window.resetAtMs - now));
  }

  private sweep(now: number): void {
    for (const [subject, window] of this.windows) {
      if (window.resetAtMs <= now) this.windows.delete(subject);
    }
  }
}

/**
 * Failed authentications per client address in fixed one-minute windows. An address over the
 * limit is refused until its window ends; a flood from many addresses is bounded by `maxAddresses`
 * (the oldest windows are dropped first, so memory stays bounded whatever the flood).
 */
export class FailedAuthThrottle {
  private readonly windows = new Map<string, { count: number; resetAtMs: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number = RATE_LIMIT_WINDOW_MS,
    private readonly nowMs: () => number = Date.now,
    private readonly maxAddresses = 100_000,
  ) {}

  /** Milliseconds until `address` may authenticate again; 0 while it is within the limit. */
  blockedForMs(address: string): number {
    const window = this.windows.get(address);
    if (!window) return 0;
    const remainingMs = window.resetAtMs - this.nowMs();
    if (remainingMs <= 0) {
      this.windows.delete(address);
      return 0;
    }
    return window.count >= this.limit ? remainingMs : 0;
  }

  /** Counts one failed authentication of `address`. */
  recordFailure(address: string): void {
    const now = this.nowMs();
    let window = this.windows.get(address);
    if (!window || window.resetAtMs <= now) {
      this.windows.delete(address);
      if (this.windows.size >= this.maxAddresses) this.makeRoom(now);
      window = { count: 0, resetAtMs: now + this.windowMs };
      this.windows.set(address, window);
    }
    window.count += 1;
  }

  private makeRoom(now: number): void {
    for (const [address, window] of this.windows) {
      if (window.resetAtMs <= now) this.windows.delete(address);
    }
    // Insertion order is window start order: the oldest windows go first.
    for (const address of this.windows.keys()) {
      if (this.windows.size < this.maxAddresses) break;
      this.windows.delete(address);
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

  redisKey(subject: string): string {
    return `${this.keyPrefix}ratelimit:${subject}`;
  }

  async consume(subject: string): Promise<RateDecision> {
    const reply = await this.redis.eval(CONSUME_SCRIPT, { keys: [this.redisKey(subject)], arguments: [String(this.windowMs)] });
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error('unexpected reply from the rate-limit script');
    const count = Number(reply[0]);
    const ttlMs = Number(reply[1]);
    if (!Number.isFinite(count) || !Number.isFinite(ttlMs)) throw new Error('unexpected reply from the rate-limit script');
    return decide(count, this.limit, ttlMs);
  }
}
