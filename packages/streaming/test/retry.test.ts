// The one retry module (p-retry underneath): waits grow, are capped with their jitter, and what is
// retried follows the coded errors' `retriable`; and the readiness of the in-process bus and
// notifier (nothing to ask).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createInProcessBus, createMemoryNotifier, RECONNECT_BACKOFF, StreamingError } from '../src/index.js';
import { handlerRetryPolicy, retrying, stopRetrying, type RetryPolicy } from '../src/retry.js';

const POLICY: RetryPolicy = { initialDelayMs: 100, multiplier: 2, maxDelayMs: 1_000, jitter: false };
const QUICK: RetryPolicy = { initialDelayMs: 1, multiplier: 2, maxDelayMs: 2, jitter: false };

/** Records the waits `retrying` asks for and lets each pass at once. */
function recordWaits(): number[] {
  const waits: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
    waits.push(ms ?? 0);
    return realSetTimeout(callback, 0);
  }) as typeof setTimeout);
  return waits;
}

/** An attempt that fails `times` times (with what `failure` makes) and then answers 'done'. */
function failing(times: number, failure: (attempt: number) => unknown = (n) => new Error(`attempt ${n}`)) {
  const attempts: number[] = [];
  const attempt = async (n: number): Promise<string> => {
    attempts.push(n);
    if (n <= times) throw failure(n);
    return 'done';
  };
  return { attempt, attempts };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('retrying', () => {
  it('waits from the initial delay, doubling up to the cap', async () => {
    const waits = recordWaits();
    const { attempt, attempts } = failing(7);
    await expect(retrying(attempt, { policy: POLICY })).resolves.toBe('done');
    expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(waits).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('draws each jittered wait between its nominal value and twice that, never past the cap', async () => {
    const waits = recordWaits();
    const { attempt } = failing(30);
    await retrying(attempt, { policy: RECONNECT_BACKOFF });
    expect(waits).toHaveLength(30);
    waits.forEach((ms, index) => {
      const nominal = Math.min(RECONNECT_BACKOFF.initialDelayMs * 2 ** index, RECONNECT_BACKOFF.maxDelayMs);
      expect(ms).toBeGreaterThanOrEqual(nominal);
      expect(ms).toBeLessThanOrEqual(Math.min(2 * nominal, RECONNECT_BACKOFF.maxDelayMs));
    });
    expect(waits.at(-1)).toBe(RECONNECT_BACKOFF.maxDelayMs);
  });

  it('retries what is not a StreamingError (a TypeError too) and tells each failure, unwrapped', async () => {
    const told: [unknown, number][] = [];
    const errors = [new TypeError('bug'), 'a string', new Error('plain')];
    const { attempt } = failing(3, (n) => errors[n - 1]);
    await expect(retrying(attempt, { policy: QUICK, onFailure: (error, n) => void told.push([error, n]) })).resolves.toBe('done');
    expect(told).toEqual([
      [errors[0], 1],
      [errors[1], 2],
      [errors[2], 3],
    ]);
  });

  it('retries a retriable StreamingError and stops at once on one that is not', async () => {
    const { attempt: flaky } = failing(2, () => new StreamingError('KAFKA_UNAVAILABLE', 'down'));
    await expect(retrying(flaky, { policy: QUICK })).resolves.toBe('done');

    const poison = new StreamingError('MESSAGE_BODY_CORRUPT', 'bad bytes');
    const { attempt, attempts } = failing(5, () => poison);
    await expect(retrying(attempt, { policy: QUICK })).rejects.toBe(poison);
    expect(attempts).toEqual([1]);
  });

  it('lets the caller decide what is retriable', async () => {
    const poison = new StreamingError('MESSAGE_BODY_CORRUPT', 'bad bytes');
    const { attempt, attempts } = failing(2, () => poison);
    await expect(retrying(attempt, { policy: QUICK, isRetriable: () => true })).resolves.toBe('done');
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('gives up after `retries` with the last failure', async () => {
    const { attempt, attempts } = failing(10);
    await expect(retrying(attempt, { policy: QUICK, retries: 2 })).rejects.toThrow('attempt 3');
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('gives up once `maxElapsedMs` has passed', async () => {
    const { attempt, attempts } = failing(10);
    await expect(retrying(attempt, { policy: QUICK, maxElapsedMs: 0 })).rejects.toThrow('attempt 1');
    expect(attempts).toEqual([1]);
  });

  it('stops at once with what stopRetrying was given', async () => {
    const reason = new TypeError('rebalancing');
    let calls = 0;
    const attempt = async (): Promise<void> => {
      calls++;
      await Promise.reject(reason).catch(stopRetrying);
    };
    await expect(retrying(attempt, { policy: QUICK })).rejects.toBe(reason);
    expect(calls).toBe(1);
  });

  it('stops waiting when the signal aborts, rejecting with its reason', async () => {
    const controller = new AbortController();
    const closed = new StreamingError('STREAMING_CLOSED', 'closed');
    let calls = 0;
    const attempt = async (): Promise<void> => {
      calls++;
      if (calls === 3) controller.abort(closed);
      throw new Error('down');
    };
    await expect(retrying(attempt, { policy: QUICK, signal: controller.signal })).rejects.toBe(closed);
    expect(calls).toBe(3);
  });

  it('paces redeliveries from the bus option, up to ten times it', () => {
    expect(handlerRetryPolicy(200)).toEqual({ initialDelayMs: 200, multiplier: 2, maxDelayMs: 2_000, jitter: true });
    expect(handlerRetryPolicy(-5)).toEqual({ initialDelayMs: 0, multiplier: 2, maxDelayMs: 0, jitter: true });
  });
});

describe('readiness of the in-process pieces', () => {
  it('answers ping at once: the bus and the notifier have no server to ask', async () => {
    await expect(createInProcessBus().ping?.()).resolves.toBeUndefined();
    await expect(createMemoryNotifier().ping?.()).resolves.toBeUndefined();
  });
});
