// The streaming worker end to end on the real servers: telemetry produced to Kafka, judged by a
// worker (in this process, on kafkajs, ClickHouse and Redis), results read back from ClickHouse
// with FINAL. Each test has its own topics, consumer group, database and Redis prefixes.
import { computeEnergyStats, createModelRuntime, robustNormalisation, WINDOW_POINTS, type LoadedModelRuntime } from '@adp/model';
import type { BaselineRecord } from '@adp/store';
import { BASELINE_CHANGED_CHANNEL, createRedisNotifier, type DeadLetter } from '@adp/streaming';
import type { Streaming } from '@adp/platform';
import { ENGINE_VERSION, startWorker, type RunningWorker } from '@adp/stream-worker';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanUp,
  exampleSeries,
  codecs,
  interleave,
  namesFrom,
  openIsolatedStreaming,
  telemetryMessages,
  workerConfig,
  type IsolatedNames,
} from '@adp/stream-worker/testing';
import { allServersGate, isolatedName } from './servers.js';

const { run, title, urls } = await allServersGate('worker pipeline');

const ORG = 'org_it';

function baselineRecord(machineId: string, stats: { mean: number; std: number }, normalisation: { center: number; scale: number }): BaselineRecord {
  return {
    orgId: ORG,
    machineId,
    baselineId: `it-${machineId}`,
    label: null,
    granularity: null,
    sensitivity: null,
    stats: { energyMean: stats.mean, energyStd: stats.std, energyP99: stats.mean + 3 * stats.std, numWindows: 500, seriesLength: 600 },
    fineTuneStats: { status: 'skipped', finalLoss: null, epochsRun: 0, epochsMax: 0, earlyStopped: false, windows: 0, durationSeconds: 0 },
    predictorWeights: null,
    normalisation,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

describe.skipIf(!run)(title, () => {
  let model: LoadedModelRuntime;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    model = await createModelRuntime();
  });
  afterAll(async () => {
    await model?.close();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function isolated(prefix: string): Promise<{ names: IsolatedNames; streaming: Streaming }> {
    const names = namesFrom(isolatedName(prefix));
    cleanups.push(() => cleanUp(urls, names));
    const streaming = await openIsolatedStreaming(urls, names);
    cleanups.push(() => streaming.close());
    return { names, streaming };
  }

  function track(worker: RunningWorker): RunningWorker {
    cleanups.push(() => worker.stop());
    return worker;
  }

  it('judges N points of M machines into N rows: spikes flagged, energies and regimes where a baseline exists', async () => {
    const { names, streaming } = await isolated('it_wpipe');
    // Three spikes in the second half, each out of the others' refractory stretch.
    const POINTS = 1000;
    const series = exampleSeries({ points: POINTS, machines: 4, spikes: 3, endMs: 1_750_000_000_000, stepMs: 60_000 });
    // machine-001 has a baseline: statistics of the generic model's energies on its healthy first half.
    const withBaseline = series[0]!;
    const healthy = withBaseline.values.slice(0, Math.min(...withBaseline.spikes));
    const normalisation = robustNormalisation(healthy);
    const { energies } = await model.energies(healthy, { normalisation });
    const stats = computeEnergyStats(Array.from(energies).slice(WINDOW_POINTS));
    const baselines = new Map([[withBaseline.machineId, baselineRecord(withBaseline.machineId, { mean: stats.energy_mean, std: stats.energy_std }, normalisation)]]);

    const worker = track(
      await startWorker({
        ...streaming,
        store: { getBaseline: async (orgId, machineId) => (orgId === ORG ? (baselines.get(machineId) ?? null) : null) },
        loadModel: async () => model,
        config: workerConfig(names),
      }),
    );
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    // Two machines one point a message, two in TelemetryBatch messages of 37 points.
    await producer.send(
      names.telemetryTopic,
      interleave(series.map((s, m) => telemetryMessages(ORG, s.machineId, s.timestampsMs, s.values, m < 2 ? 1 : 37))),
    );
    await expect.poll(() => worker.counters().rows, { timeout: 60_000, interval: 200 }).toBe(POINTS * series.length);

    const summaries = await streaming.results.machines(ORG);
    expect(summaries.map((s) => [s.machineId, s.points])).toEqual(series.map((s) => [s.machineId, POINTS]));
    for (const s of series) {
      const rows = await streaming.results.query({ orgId: ORG, machineId: s.machineId, limit: 10_000 });
      expect(rows.map((row) => row.tsMs)).toEqual(s.timestampsMs);
      const flagged = rows.flatMap((row, i) => (row.isAnomaly ? [i] : []));
      for (const spike of s.spikes) expect(flagged, `${s.machineId} spike at ${spike}`).toContain(spike);
      expect(flagged.length).toBeLessThanOrEqual(s.spikes.length + 6);
      if (s !== withBaseline) {
        expect(rows.every((row) => row.regime === 'UNKNOWN' && row.energy === null)).toBe(true);
      }
    }
    const rows = await streaming.results.query({ orgId: ORG, machineId: withBaseline.machineId, limit: 10_000 });
    for (const spike of withBaseline.spikes) {
      expect(['SHOCK', 'ACTIVE', 'TRANSITION']).toContain(rows[spike]!.regime);
      expect(rows[spike]!.zScore!).toBeGreaterThan(6);
    }
    const calm = rows.slice(WINDOW_POINTS, Math.min(...withBaseline.spikes));
    expect(calm.filter((row) => row.regime === 'HEALTHY').length / calm.length).toBeGreaterThan(0.95);
    expect(rows[100]!.modelVersion).toBe(`engine-${ENGINE_VERSION}+${model.modelVersion}`);
    expect(worker.counters()).toMatchObject({ messages: 2 * POINTS + 2 * Math.ceil(POINTS / 37), deadLetters: 0, failedBatches: 0 });
  });

  it('sends a poison message to the dead-letter topic while later points of its partition are judged', async () => {
    const { names, streaming } = await isolated('it_wdlq');
    const worker = track(await startWorker({ ...streaming, store: { getBaseline: async () => null }, loadModel: async () => model, config: workerConfig(names) }));
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    const ts = Array.from({ length: 60 }, (_, i) => 1_750_000_000_000 + i * 1000);
    const values = ts.map((_, i) => 10 + Math.sin(i / 5));
    const good = telemetryMessages(ORG, 'press-1', ts, values);
    const key = `${ORG}/press-1`;
    await producer.send(names.telemetryTopic, good.slice(0, 30));
    await producer.send(names.telemetryTopic, [
      { key, value: Buffer.from('{"value": 1}') },
      { key, value: codecs.telemetry.encode({ organization: ORG, machine_id: 'press-1', timestamp: ts[30]!, value: null, channels: null, tags: {} }) },
      // A batch whose points go back in time: dead-lettered whole, none of its points judged.
      {
        key,
        value: codecs.telemetryBatch.encode({
          organization: ORG,
          machine_id: 'press-1',
          points: [ts[31]!, ts[30]!].map((timestamp) => ({ timestamp, value: 99, channels: null })),
          tags: {},
        }),
      },
    ]);
    await producer.send(names.telemetryTopic, good.slice(30));

    const letters: DeadLetter[] = [];
    const reader = await streaming.bus.consumer({ groupId: `${names.groupId}_dlq_reader`, topics: [names.deadLetterTopic] });
    cleanups.push(() => reader.close());
    await reader.run(async (batch) => {
      for (const message of batch.messages) letters.push(codecs.deadLetter.decode(message.value));
    });
    await expect.poll(() => worker.counters().rows, { timeout: 30_000, interval: 200 }).toBe(60);
    await expect.poll(() => letters.length, { timeout: 30_000, interval: 200 }).toBe(3);
    expect(letters.map((l) => [l.reason, l.source_topic, l.source_offset])).toEqual([
      ['MESSAGE_NOT_SINGLE_OBJECT', names.telemetryTopic, 30],
      ['NO_READING', names.telemetryTopic, 31],
      ['POINTS_OUT_OF_ORDER', names.telemetryTopic, 32],
    ]);
    expect(codecs.telemetryBatch.decode(letters[2]!.original_value).points.map((point) => point.timestamp)).toEqual([ts[31], ts[30]]);
    expect(letters[0]!.original_value.toString()).toBe('{"value": 1}');
    expect(letters[0]!.original_key?.toString()).toBe(key);
    expect(new Set(letters.map((l) => l.source_partition)).size).toBe(1);
    const rows = await streaming.results.query({ orgId: ORG, machineId: 'press-1', limit: 1000 });
    expect(rows.map((row) => row.tsMs)).toEqual(ts);
    expect(rows.map((row) => row.value)).toEqual(values);
  });

  it('sees a baseline change announced over Redis by another process and uses the new baseline', async () => {
    const { names, streaming } = await isolated('it_wbase');
    const baselines = new Map<string, BaselineRecord>();
    const worker = track(
      await startWorker({
        ...streaming,
        store: { getBaseline: async (_orgId, machineId) => baselines.get(machineId) ?? null },
        loadModel: async () => model,
        config: workerConfig(names),
      }),
    );
    const producer = await streaming.bus.producer();
    cleanups.push(() => producer.close());
    const ts = Array.from({ length: 300 }, (_, i) => 1_750_000_000_000 + i * 1000);
    const values = ts.map((_, i) => 20 + 2 * Math.sin(i / 8) + ((i * 37) % 11) / 20);
    const messages = telemetryMessages(ORG, 'fan-9', ts, values);
    await producer.send(names.telemetryTopic, messages.slice(0, 200));
    await expect.poll(() => worker.counters().rows, { timeout: 30_000, interval: 200 }).toBe(200);

    // Another replica (the API) stores a baseline and announces it on its own Redis connection.
    const normalisation = robustNormalisation(values.slice(0, 200));
    const { energies } = await model.energies(values.slice(0, 200), { normalisation });
    const stats = computeEnergyStats(Array.from(energies).slice(WINDOW_POINTS));
    baselines.set('fan-9', baselineRecord('fan-9', { mean: stats.energy_mean, std: stats.energy_std }, normalisation));
    const api = await createRedisNotifier(urls.redisUrl, { channelPrefix: names.redisChannelPrefix });
    cleanups.push(() => api.close());
    await api.publish(BASELINE_CHANGED_CHANNEL, JSON.stringify({ orgId: ORG, machineId: 'fan-9' }));
    await expect.poll(() => worker.counters().baselineNotifications, { timeout: 60_000, interval: 50 }).toBe(1);

    await producer.send(names.telemetryTopic, messages.slice(200));
    await expect.poll(() => worker.counters().rows, { timeout: 30_000, interval: 200 }).toBe(300);
    const rows = await streaming.results.query({ orgId: ORG, machineId: 'fan-9', limit: 1000 });
    expect(rows.slice(0, 200).every((row) => row.regime === 'UNKNOWN' && row.energy === null)).toBe(true);
    expect(rows.slice(200).every((row) => row.regime !== 'UNKNOWN' && row.energy !== null && row.zScore !== null)).toBe(true);
  });
});
