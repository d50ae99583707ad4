// What every port's contract suite runs on: a backend that gives each test a fresh, isolated
// database (a temporary folder, or a ClickHouse database of its own), and the fixtures the suites
// share. Each backend's test file calls describeStoreContracts (index.ts) with its backend.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach } from 'vitest';
import type { NewApiKey, NewBaseline, RegimeCounts, Store } from '@adp/store';

export interface StoreBackend {
  /** Prepares an empty, isolated database for one test. */
  setUp(): Promise<void>;
  /** Opens a store on the current test's database; called again after close to check persistence. */
  open(options?: { now?: () => Date }): Promise<Store>;
  /** Removes the test's database. Stores are closed before this runs. */
  tearDown(): Promise<void>;
}

/**
 * Gives each test of the calling suite a fresh database, and returns its opener: the stores it
 * opens are closed after the test, before the database is removed.
 */
export function useBackend(backend: StoreBackend): (now?: () => Date) => Promise<Store> {
  const opened: Store[] = [];
  beforeEach(async () => {
    await backend.setUp();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    await backend.tearDown();
  });
  return async (now) => {
    const store = await backend.open(now ? { now } : {});
    opened.push(store);
    return store;
  };
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
export const newKey = (plaintext: string, kind: 'live' | 'test' = 'test'): NewApiKey => ({
  kind,
  keyHash: sha256(plaintext),
  prefix: plaintext.slice(0, 13),
});

export function baselineFor(machineId: string, overrides: Partial<NewBaseline> = {}): NewBaseline {
  return {
    machineId,
    baselineId: `bl_${machineId}`,
    label: 'pump',
    granularity: 'minutely',
    sensitivity: 90,
    stats: { energyMean: 0.5, energyStd: 0.25, energyP99: 1.5, numWindows: 90, seriesLength: 120 },
    fineTuneStats: {
      status: 'completed',
      finalLoss: 0.125,
      epochsRun: 12,
      epochsMax: 50,
      earlyStopped: true,
      windows: 90,
      durationSeconds: 0.75,
    },
    predictorWeights: new Uint8Array([0, 1, 2, 255, 254, 39, 0]),
    normalisation: { center: 10, scale: 2.5 },
    ...overrides,
  };
}

export const regimes = (counts: Partial<RegimeCounts>): RegimeCounts => ({
  HEALTHY: 0,
  ACTIVE: 0,
  TRANSITION: 0,
  SHOCK: 0,
  UNKNOWN: 0,
  ...counts,
});
