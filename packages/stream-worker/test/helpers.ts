// Shared pieces of the worker's unit tests: telemetry on the in-process bus, a fake model with
// energies that are easy to reason about, baselines in a map.
import type { BaselineRecord, Store } from '@adp/store';
import {
  createInProcessBus,
  createMemoryNotifier,
  loadStreamingCodecs,
  type Bus,
  type CheckpointStore,
  type DeadLetter,
  type Notifier,
  type ResultStore,
  type TelemetryPoint,
  type TelemetryReading,
} from '@adp/streaming';
import { createMemoryCheckpointStore, createMemoryResultStore } from '@adp/store';
import type { WorkerModel, WorkerRuntimeConfig } from '../src/index.js';

export const codecs = loadStreamingCodecs();

export const ORG = 'org_test';

export function testConfig(overrides: Partial<WorkerRuntimeConfig> = {}): WorkerRuntimeConfig {
  return {
    windowPoints: 120,
    memoryPoints: 8640,
    sensitivity: 95,
    maxAnomalyRatio: 0.25,
    changePoints: true,
    predictorCacheSize: 16,
    baselineRefreshMs: 3_600_000,
    groupId: 'workers',
    telemetryTopic: 'telemetry',
    deadLetterTopic: 'dead-letters',
    telemetryPartitions: 4,
    ...overrides,
  };
}

/** A smooth signal per machine with spikes at the given indices. */
export function signal(machine: number, index: number, spikes: ReadonlySet<number>): number {
  const base = 50 + 5 * Math.sin((index + machine * 7) / 9) + ((index * 7919 + machine * 104729) % 13) / 13;
  return spikes.has(index) ? base + 60 : base;
}

export function telemetryMessage(point: Partial<TelemetryPoint> & { machine_id: string; timestamp: number }, key?: string | null) {
  const full: TelemetryPoint = {
    organization: ORG,
    value: null,
    channels: null,
    tags: {},
    ...point,
  };
  return {
    key: key === undefined ? `${full.organization}/${full.machine_id}` : key,
    value: codecs.telemetry.encode(full),
  };
}

/** One TelemetryBatch message: several points of one machine (readings may be out of order or empty: tests send poison too). */
export function batchMessage(machineId: string, points: readonly Partial<TelemetryReading>[], key?: string | null) {
  return {
    key: key === undefined ? `${ORG}/${machineId}` : key,
    value: codecs.telemetryBatch.encode({
      organization: ORG,
      machine_id: machineId,
      points: points.map((point) => ({ timestamp: 0, value: null, channels: null, ...point })),
      tags: {},
    }),
  };
}

/** energy = (scaled value)^2 from the 32nd point on, as the real model's warm-up does. */
export function fakeModel(calls: { series: number; points: number }[] = []): WorkerModel {
  return {
    modelVersion: 'fake-1',
    async energies(values, options) {
      calls.push({ series: 1, points: values.length });
      const center = options?.normalisation?.center ?? 0;
      const scale = options?.normalisation?.scale ?? 1;
      const out = new Float64Array(values.length);
      for (let i = 32; i < values.length; i++) out[i] = (((values[i] ?? 0) - center) / scale) ** 2;
      return { energies: out };
    },
  };
}

export function statsBaseline(machineId: string, center = 50, scale = 5): BaselineRecord {
  return {
    orgId: ORG,
    machineId,
    baselineId: `b-${machineId}`,
    label: null,
    granularity: null,
    sensitivity: null,
    stats: { energyMean: 1, energyStd: 1, energyP99: 3, numWindows: 100, seriesLength: 200 },
    fineTuneStats: {
      status: 'skipped',
      finalLoss: null,
      epochsRun: 0,
      epochsMax: 0,
      earlyStopped: false,
      windows: 0,
      durationSeconds: 0,
    },
    predictorWeights: null,
    normalisation: { center, scale },
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

export function baselineStore(baselines: Map<string, BaselineRecord>): Pick<Store, 'getBaseline'> & { reads: number } {
  const store = {
    reads: 0,
    async getBaseline(orgId: string, machineId: string) {
      store.reads++;
      return orgId === ORG ? (baselines.get(machineId) ?? null) : null;
    },
  };
  return store;
}

export interface Platform {
  bus: Bus;
  results: ResultStore;
  checkpoints: CheckpointStore;
  notifier: Notifier;
}

export async function embeddedPlatform(): Promise<Platform> {
  const bus = createInProcessBus({ retryDelayMs: 10, maxBatchMessages: 200 });
  await bus.ensureTopics([
    { name: 'telemetry', partitions: 4 },
    { name: 'dead-letters', partitions: 1 },
  ]);
  return {
    bus,
    results: createMemoryResultStore(),
    checkpoints: createMemoryCheckpointStore(),
    notifier: createMemoryNotifier(),
  };
}

/** Reads the platform's dead-letter topic into `letters` (decoded, in order) until `close`. */
export async function readDeadLetters(platform: Platform): Promise<{ letters: DeadLetter[]; close: () => Promise<void> }> {
  const letters: DeadLetter[] = [];
  const consumer = await platform.bus.consumer({ groupId: 'dlq-reader', topics: ['dead-letters'] });
  await consumer.run(async (batch) => {
    for (const message of batch.messages) letters.push(codecs.deadLetter.decode(message.value));
  });
  return { letters, close: () => consumer.close() };
}

export async function allRows(results: ResultStore, machineId: string) {
  return results.query({ orgId: ORG, machineId, limit: 100_000 });
}
