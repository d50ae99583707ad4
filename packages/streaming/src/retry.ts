// Retry and reconnection of the streaming pieces: one backoff policy (exponential, jittered,
// capped) and one loop that retries what our errors call retriable. The bus reconnects its
// consumers through this module; nothing else in the package sleeps between attempts of its own.
import { isStreamingError } from './errors.js';

export interface BackoffPolicy {
  /** Wait before the first retry, ms. */
  readonly initialDelayMs: number;
  /** Growth of the wait per attempt (2 doubles it). At least 1. */
  readonly multiplier: number;
  /** Longest wait, ms, jitter included: bounds how late a recovered server is noticed. */
  readonly maxDelayMs: number;
  /**
   * Share of each wait drawn at random, 0..1 (0.2: the wait lies within ±20 % of its nominal
   * value). Replicas that lost a server together then do not come back in lockstep.
   */
  readonly jitter: number;
}

/** Reconnecting to Kafka: quick first tries, then every 5 s at most while the broker stays down. */
export const RECONNECT_BACKOFF: BackoffPolicy = { initialDelayMs: 250, multiplier: 2, maxDelayMs: 5_000, jitter: 0.2 };

/**
 * The wait before retry number `attempt` (1 for the first retry), ms. `random` returns [0, 1)
 * (Math.random by default; tests pass a fixed one).
 */
export function backoffDelayMs(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  const nominal = Math.min(policy.initialDelayMs * Math.max(1, policy.multiplier) ** exponent, policy.maxDelayMs);
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  const spread = nominal * jitter * (2 * random() - 1);
  return Math.round(Math.min(policy.maxDelayMs, Math.max(0, nominal + spread)));
}

/** Our errors say whether a retry can help; anything else (a bug, an unknown failure) is not retried. */
export function isRetriable(error: unknown): boolean {
  return isStreamingError(error) && error.retriable;
}

export interface RetryOptions {
  readonly policy: BackoffPolicy;
  /** Most retries after the first attempt; unset: until it succeeds, fails for good, or `signal` aborts. */
  readonly retries?: number;
  /** Which failures are worth another attempt. Default `isRetriable`. */
  readonly retriable?: (error: unknown) => boolean;
  /** Aborting stops the waiting; the last failure is thrown. */
  readonly signal?: AbortSignal;
  /** Told before each wait. */
  readonly onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  readonly random?: () => number;
}

/** Waits `ms`, or less when `signal` aborts first (it resolves either way). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Runs `operation` until it resolves, retrying retriable failures with backoff. */
export async function retrying<T>(operation: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const retriable = options.retriable ?? isRetriable;
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      const exhausted = options.retries !== undefined && attempt >= options.retries;
      if (exhausted || !retriable(error) || options.signal?.aborted) throw error;
      const delayMs = backoffDelayMs(options.policy, attempt + 1, options.random);
      options.onRetry?.(error, attempt + 1, delayMs);
      await pause(delayMs, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}
