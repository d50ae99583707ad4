// Every loop in this package that tries again goes through `retrying` (on p-retry): the Kafka
// consumer's rebuild after it lost the broker, both buses' redelivery of a rejected batch, the
// ClickHouse result store's wait for a mutation. One policy shape (exponential, jittered, capped)
// and one rule for what is worth another attempt: a StreamingError says so itself (`retriable`,
// ./errors.ts); anything else is retried, since a loop that may not lose data has no better answer.
import pRetry, { AbortError } from 'p-retry';
import { isStreamingError } from './errors.js';

export interface RetryPolicy {
  /** Wait before the first retry, ms (before jitter). */
  readonly initialDelayMs: number;
  /** Growth of the wait per attempt (2 doubles it). At least 1. */
  readonly multiplier: number;
  /** Longest wait, ms, jitter included: bounds how late a recovered server is noticed. */
  readonly maxDelayMs: number;
  /**
   * Each wait drawn at random between its nominal value and twice that (still capped), so
   * replicas that lost a server together do not come back in lockstep.
   */
  readonly jitter: boolean;
}

/** Reconnecting to Kafka: quick first tries, then every 5 s at most while the broker stays down. */
export const RECONNECT_BACKOFF: RetryPolicy = { initialDelayMs: 250, multiplier: 2, maxDelayMs: 5_000, jitter: true };

/**
 * Redelivering a batch whose handler rejected: the first wait `firstDelayMs` (the buses'
 * `retryDelayMs`), doubling up to ten times that, jittered.
 */
export function handlerRetryPolicy(firstDelayMs: number): RetryPolicy {
  const initialDelayMs = Math.max(0, firstDelayMs);
  return { initialDelayMs, multiplier: 2, maxDelayMs: initialDelayMs * 10, jitter: true };
}

export interface RetryingOptions {
  readonly policy: RetryPolicy;
  /** Most retries after the first attempt. Default: no limit (until it succeeds or `signal` aborts). */
  readonly retries?: number;
  /** Stop once this many ms have passed since the first attempt, rejecting with the last failure. Default: no limit. */
  readonly maxElapsedMs?: number;
  /** Aborting stops the waiting and rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Whether a failure is worth another attempt. Default: all but a StreamingError that is not retriable. */
  readonly isRetriable?: (error: unknown) => boolean;
  /** Told about each failure before the wait (attempt 1 is the first call); a throw here stops the retrying. */
  readonly onFailure?: (error: unknown, attempt: number) => void | Promise<void>;
}

/** What `retrying` retries by default: everything but a StreamingError that says it is not worth it. */
export function isRetriable(error: unknown): boolean {
  return !isStreamingError(error) || error.retriable;
}

/**
 * p-retry never retries a TypeError (other than a network one) and wants an Error: the attempt's
 * failure travels inside this carrier, and callers only ever see what the attempt threw.
 */
class AttemptFailure extends Error {
  constructor(readonly failure: unknown) {
    super('attempt failed');
  }
}

/** Stops the retrying from inside an attempt: `retrying` rejects with `error` at once. */
export function stopRetrying(error: unknown): never {
  throw new AbortError(new AttemptFailure(error));
}

const unwrap = (error: unknown): unknown => (error instanceof AttemptFailure ? error.failure : error);

/** Calls `attempt` (with its number, 1 first) until it resolves, waiting between failures as `policy` says. */
export async function retrying<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryingOptions): Promise<T> {
  const { policy } = options;
  const retriable = options.isRetriable ?? isRetriable;
  try {
    return await pRetry(
      async (attemptNumber) => {
        try {
          return await attempt(attemptNumber);
        } catch (error) {
          if (error instanceof AbortError) throw error;
          throw new AttemptFailure(error);
        }
      },
      {
        retries: options.retries ?? Number.POSITIVE_INFINITY,
        minTimeout: policy.initialDelayMs,
        factor: Math.max(1, policy.multiplier),
        maxTimeout: policy.maxDelayMs,
        randomize: policy.jitter,
        ...(options.maxElapsedMs !== undefined ? { maxRetryTime: options.maxElapsedMs } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        onFailedAttempt: async ({ error, attemptNumber }) => {
          await options.onFailure?.(unwrap(error), attemptNumber);
        },
        shouldRetry: ({ error }) => retriable(unwrap(error)),
      },
    );
  } catch (error) {
    throw unwrap(error);
  }
}
