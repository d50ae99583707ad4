// What a baseline's shape reference costs the streaming worker: the same baselined machines
// drained through one worker on the in-process bus with memory stores (no servers), their
// baselines with and without shapes. The shape scores of a batch's new points join the trailing
// subsequences against every subsequence of the reference, so their cost grows with the reference
// (up to 8,640 points) and falls per point with the points a series has per batch.
//
//   npx tsx bench/worker-shapes.ts [--points 3000] [--machines 4] [--batch 200,5000]
//
// --batch: the bus's most messages per batch (one point per message, machines interleaved), so a
// series has about batch / machines new points per batch. Prints points/s per variant.
import { shapeReferenceOf } from '@adp/detection';
import { statisticsBaseline } from './streaming.js';
import { createModelRuntime, robustNormalisation, type LoadedModelRuntime } from '@adp/model';
import type { BaselineRecord } from '@adp/store';
import { createInProcessBus, createMemoryNotifier, loadStreamingCodecs } from '@adp/streaming';
import { createMemoryCheckpointStore, createMemoryResultStore } from '@adp/store';
import { startWorker, type BatchSummary } from '@adp/stream-worker';
import { exampleSeries, type ExampleSeries } from '@adp/stream-worker/testing';

const ORG = 'org_bench';

function argument(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

async function baselineOf(machine: ExampleSeries, model: LoadedModelRuntime, healthyPoints: number, shapes: boolean): Promise<BaselineRecord> {
  const healthy = machine.values.slice(0, healthyPoints);
  const { energies } = await model.energies(healthy, { normalisation: robustNormalisation(healthy) });
  return statisticsBaseline(machine.machineId, healthy, energies, shapes ? shapeReferenceOf(healthy) : null);
}

async function drain(
  model: LoadedModelRuntime,
  series: readonly ExampleSeries[],
  baselines: ReadonlyMap<string, BaselineRecord>,
  batchMessages: number,
): Promise<{ pointsPerSecond: number; regimesMs: number; totalMs: number }> {
  const codecs = loadStreamingCodecs();
  const bus = createInProcessBus({ retryDelayMs: 10, maxBatchMessages: batchMessages });
  await bus.ensureTopics([
    { name: 'telemetry', partitions: 1 },
    { name: 'dead-letters', partitions: 1 },
  ]);
  const points = series[0]!.values.length;
  const messages = [];
  for (let i = 0; i < points; i++) {
    for (const machine of series) {
      const point = { organization: ORG, machine_id: machine.machineId, timestamp: machine.timestampsMs[i]!, value: machine.values[i]!, channels: null, tags: {} };
      messages.push({ key: `${ORG}/${machine.machineId}`, value: codecs.telemetry.encode(point) });
    }
  }
  const producer = await bus.producer();
  await producer.send('telemetry', messages);
  const summaries: BatchSummary[] = [];
  let firstStart = Number.NaN;
  let lastEnd = Number.NaN;
  const total = points * series.length;
  let rows = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const worker = await startWorker({
    bus,
    results: createMemoryResultStore(),
    checkpoints: createMemoryCheckpointStore(),
    notifier: createMemoryNotifier(),
    store: { getBaseline: async (_org, machineId) => baselines.get(machineId) ?? null },
    loadModel: async () => model,
    config: {
      windowPoints: 720,
      memoryPoints: 8640,
      sensitivity: 95,
      maxAnomalyRatio: 0.25,
      changePoints: true,
      predictorCacheSize: 256,
      baselineRefreshMs: 3_600_000,
      groupId: 'bench',
      telemetryTopic: 'telemetry',
      deadLetterTopic: 'dead-letters',
      telemetryPartitions: 1,
    },
    onBatch: (summary) => {
      const end = performance.now();
      if (Number.isNaN(firstStart)) firstStart = end - summary.timings.totalMs;
      lastEnd = end;
      summaries.push(summary);
      rows += summary.rows;
      if (rows >= total) done();
    },
  });
  await finished;
  await worker.stop();
  const totalMs = lastEnd - firstStart;
  return {
    pointsPerSecond: (total / totalMs) * 1000,
    regimesMs: summaries.reduce((sum, s) => sum + s.timings.regimesMs, 0),
    totalMs,
  };
}

async function main(): Promise<void> {
  const points = Number(argument('points', '3000'));
  const machines = Number(argument('machines', '4'));
  const batches = argument('batch', '200,5000').split(',').map(Number);
  const healthyPoints = 8640;
  const all = exampleSeries({ points: healthyPoints + points, machines, spikes: 2, endMs: 1_750_000_000_000, stepMs: 60_000 });
  const model = await createModelRuntime();
  try {
    const stream = all.map((s) => ({ ...s, values: s.values.slice(healthyPoints), timestampsMs: s.timestampsMs.slice(healthyPoints) }));
    for (const shapes of [false, true]) {
      const baselines = new Map(await Promise.all(all.map(async (s) => [s.machineId, await baselineOf(s, model, healthyPoints, shapes)] as const)));
      const reference = baselines.values().next().value?.shapeReference;
      for (const batch of batches) {
        const result = await drain(model, stream, baselines, batch);
        console.log(
          `shapes=${shapes ? `yes (length ${reference?.length}, ${reference?.values.length} reference points)` : 'no'} batch=${batch} messages ` +
            `(~${Math.round(batch / machines)} points per series): ${Math.round(result.pointsPerSecond)} points/s, ` +
            `z-scores+changepoints+regimes+shapes ${Math.round(result.regimesMs)} ms of ${Math.round(result.totalMs)} ms`,
        );
      }
    }
  } finally {
    await model.close();
  }
}

await main();
