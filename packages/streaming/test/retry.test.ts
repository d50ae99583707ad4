// The backoff of the streaming pieces (grows, jittered, capped with its jitter), and the
// readiness of the in-process pieces (nothing to ask).
import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  createInProcessBus,
  createMemoryCheckpointStore,
  createMemoryNotifier,
  createMemoryResultStore,
  openStreaming,
  RECONNECT_BACKOFF,
  type BackoffPolicy,
} from '../src/index.js';

const POLICY: BackoffPolicy = { initialDelayMs: 100, multiplier: 2, maxDelayMs: 1_000, jitter: 0.2 };
const middle = () => 0.5;

describe('backoffDelayMs', () => {
  it('doubles from the initial delay up to the cap (jitter centred)', () => {
    expect([1, 2, 3, 4, 5, 6, 20].map((attempt) => backoffDelayMs(POLICY, attempt, middle))).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('spreads each wait by the jitter share, never past the cap or below zero', () => {
    expect(backoffDelayMs(POLICY, 1, () => 0)).toBe(80);
    expect(backoffDelayMs(POLICY, 1, () => 0.999_999)).toBe(120);
    expect(backoffDelayMs(POLICY, 10, () => 0.999_999)).toBe(1_000);
    expect(backoffDelayMs(POLICY, 10, () => 0)).toBe(800);
    expect(backoffDelayMs({ ...POLICY, jitter: 5 }, 1, () => 0)).toBe(0);
    for (let attempt = 1; attempt < 40; attempt++) {
      const delayMs = backoffDelayMs(RECONNECT_BACKOFF, attempt);
      expect(delayMs).toBeGreaterThanOrEqual(0);
      expect(delayMs).toBeLessThanOrEqual(RECONNECT_BACKOFF.maxDelayMs);
    }
  });

  it('treats attempt 0 and fractions like the first retry, and a multiplier below 1 as 1', () => {
    expect(backoffDelayMs(POLICY, 0, middle)).toBe(100);
    expect(backoffDelayMs(POLICY, 2.7, middle)).toBe(200);
    expect(backoffDelayMs({ ...POLICY, multiplier: 0.5 }, 5, middle)).toBe(100);
  });
});

describe('readiness of the in-process pieces', () => {
  it('has no checks to make, and every piece answers ping', async () => {
    const streaming = await openStreaming();
    try {
      expect(streaming.checks).toEqual([]);
    } finally {
      await streaming.close();
    }
    await expect(createInProcessBus().ping?.()).resolves.toBeUndefined();
    await expect(createMemoryResultStore().ping?.()).resolves.toBeUndefined();
    await expect(createMemoryCheckpointStore().ping?.()).resolves.toBeUndefined();
    await expect(createMemoryNotifier().ping?.()).resolves.toBeUndefined();
  });
});
