// Streaming benchmark: one worker (in this process) between the real Kafka and ClickHouse (and
// Redis for checkpoints), as `npm run worker` runs it.
//
//   npx tsx bench/streaming.ts [--quick] [--only single,batch]
//
// Rows:
//  - drain: points produced to Kafka beforehand, then one worker started; points/s = points over
//    the time from its first batch to its last stored one (the sustained capacity of one worker),
//    with where that time went (decode, detection, energies, regimes, result rows and window
//    checkpoints, the rest: fetch and commit, window loads, waiting for the writes; and the
//    writes themselves, insert and checkpoints, which overlap the rest).
//  - steady: points produced at a fixed rate below that capacity while the worker runs;
//    end-to-end lag = time from Kafka's append to the end of the batch that stored the point
//    (after the ClickHouse insert and the checkpoints, just before the offset commit), p50/p99.
// Variants: no baselines (detection only), and every machine with a baseline (plus the learned
// model's energies, z-scores and regimes); one point per message (TelemetryPoint), and 20 points of
// a machine per message (TelemetryBatch, as POST /v1/telemetry and batching producers send them).
// Last, the worker alone: the same drain on the in-process bus with memory stores, no server on
// the cores (an upper bound for a worker whose servers run elsewhere; `runAloneVariant`), and the
// embedded default's worker: the durable in-process bus and DuckDB stores of `npm start`, 100
// points a message (`--only embedded` needs no server).
//
// Servers from KAFKA_BROKERS, CLICKHOUSE_URL, REDIS_URL (defaults: the infra/ scripts' addresses).
// Everything it creates (topics, group, database, Redis keys) has a name of its own and is removed
// at the end. Prints a markdown table and writes bench/streaming-results.json (not with --quick).
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { shapeReferenceOf } from '@adp/detection';
import { computeEnergyStats, createModelRuntime, robustNormalisation, WINDOW_POINTS, type LoadedModelRuntime } from '@adp/model';
import type { BaselineRecord } from '@adp/store';
import type { OutgoingMessage } from '@adp/streaming';
import { openStreaming, type Streaming } from '@adp/platform';
import { startWorker, type BatchSummary, type WorkerRuntimeConfig } from '@adp/stream-worker';
import {
  cleanUp,
  exampleSeries,
  type ExampleSeries,
  interleave,
  namesFrom,
  openIsolatedStreaming,
  telemetryMessages,
  type IsolatedNames,
  type ServerUrls,
} from '@adp/stream-worker/testing';
import { round, summarize, type LatencySummary } from './stats.js';
import { fullResultsPath, streamingSummary, writeJson } from './summary.js';

export interface StreamingBenchOptions {
  readonly quick?: boolean;
  /** Variant ids to run (single, threads, baselines, batch, batch-threads, alone, alone-threads, alone-batch, alone-threads-batch); default all. */
  readonly only?: readonly string[];
  readonly urls?: ServerUrls;
  readonly log?: (message: string) => void;
}

export interface StreamingBenchRow {
  readonly name: string;
  readonly machines: number;
  readonly points: number;
  readonly windowPoints: number;
  readonly baselines: boolean;
  /** Drain rows: points per second through the worker. Steady rows: the offered rate. */
  readonly pointsPerSecond: number;
  /** Steady rows: end-to-end lag. */
  readonly lag?: LatencySummary;
  /**
   * Drain rows: share of the drain's wall time per phase, percent: this thread's decode, detect,
   * energy, regimes and rows, `other` (the rest: fetch, commits, window loads, waiting for the
   * writes), and the writes' insert and checkpoint (which overlap other work); `inserts`: the
   * number of result inserts.
   */
  readonly timeShares?: Readonly<Record<string, number>>;
  /** Drain rows: milliseconds per point of decode, detect (in the worker's thread: its CPU; with threads: the wait), energy (inference), regimes, rows. */
  readonly perPointMs?: Readonly<Record<string, number>>;
  readonly batches: number;
  readonly meanBatchMessages: number;
}

export interface StreamingBenchResult {
  readonly settings: Readonly<Record<string, unknown>>;
  readonly environment: Readonly<Record<string, unknown>>;
  readonly rows: readonly StreamingBenchRow[];
  readonly markdown: string;
}

const ORG = 'org_bench';
/** Points per TelemetryBatch message in the batched variants: 20 s of a machine reporting every second. */
const BATCH_POINTS = 20;
const STEP_MS = 1000;
/** Points per message of the embedded row: what POST /v1/telemetry takes from a client that sends every 100 readings. */
const EMBEDDED_POINTS = 100;

function settingsFor(quick: boolean) {
  return {
    machines: 50,
    /** Points per machine drained (the first windowPoints of each are judged on a filling window). */
    drainPointsPerMachine: quick ? 300 : 2000,
    /**
     * Points per machine of the second drain: after the steady rows the worker is stopped, this
     * backlog produced, and a new worker drains it from the checkpointed windows (all full).
     */
    warmDrainPointsPerMachine: quick ? 300 : 2000,
    /** Points per machine of the worker-alone drains (no servers: short otherwise). */
    alonePointsPerMachine: quick ? 600 : 4000,
    windowPoints: 720,
    /** Messages per handler call (WORKER_MAX_BATCH_MESSAGES). */
    maxBatchMessages: 5000,
    /** WORKER_PARTITIONS_CONCURRENTLY, its default: every partition's batch of a fetch in one insert. */
    partitionsConcurrently: 12,
    partitions: 12,
    /**
     * Steady rows offer this share of the measured drain rate: a steady stream comes in small
     * batches (a few points per machine), which cost more per point than a backlog's large ones.
     */
    steadyShare: 0.4,
    steadySeconds: quick ? 4 : 20,
    /** Points per producer send in the steady rows (one send every sendEveryMs). */
    sendEveryMs: 100,
  } as const;
}

/** The baseline `POST /v1/baseline` would keep of the machine's healthy part: statistics and shapes. */
function baselineFor(machine: ExampleSeries, energiesOfHealthy: Float64Array): BaselineRecord {
  const healthy = machine.values.slice(0, Math.min(...machine.spikes, machine.values.length));
  return statisticsBaseline(machine.machineId, healthy, energiesOfHealthy, shapeReferenceOf(healthy));
}

/**
 * A statistics-only baseline record of `healthy` values (their generic energies' statistics, the
 * series' own robust scaling), as a store would return it; `shapeReference` as given.
 */
export function statisticsBaseline(
  machineId: string,
  healthy: readonly number[],
  energiesOfHealthy: ArrayLike<number>,
  shapeReference: BaselineRecord['shapeReference'] = null,
): BaselineRecord {
  const stats = computeEnergyStats(Array.from(energiesOfHealthy).slice(WINDOW_POINTS));
  return {
    orgId: ORG,
    machineId,
    baselineId: `bench-${machineId}`,
    label: null,
    granularity: null,
    sensitivity: null,
    stats: {
      energyMean: stats.energy_mean,
      energyStd: stats.energy_std,
      energyP99: stats.energy_p99,
      numWindows: stats.num_windows,
      seriesLength: healthy.length,
    },
    fineTuneStats: { status: 'skipped', finalLoss: null, epochsRun: 0, epochsMax: 0, earlyStopped: false, windows: 0, durationSeconds: 0 },
    predictorWeights: null,
    normalisation: robustNormalisation(healthy),
    shapeReference,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

async function sendAll(streaming: Streaming, topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
  const producer = await streaming.bus.producer();
  try {
    for (let i = 0; i < messages.length; i += 5000) await producer.send(topic, messages.slice(i, i + 5000));
  } finally {
    await producer.close();
  }
}

interface Variant {
  /** Short name for `--only`. */
  readonly id: string;
  readonly name: string;
  readonly baselines: boolean;
  /** WORKER_DETECTION_THREADS. */
  readonly detectionThreads: number;
  /** Points a telemetry message carries: 1 = one TelemetryPoint each; more = TelemetryBatch messages. */
  readonly pointsPerMessage: number;
  /** The worker alone (in-process bus, memory stores; `runAloneVariant`): a drain row only. */
  readonly alone?: boolean;
  /** With `alone`: the embedded default's own bus and stores instead (the durable in-process log, DuckDB results and checkpoints in a temporary data directory). */
  readonly embedded?: boolean;
}

async function runVariant(
  urls: ServerUrls,
  variant: Variant,
  settings: ReturnType<typeof settingsFor>,
  model: LoadedModelRuntime | null,
  log: (message: string) => void,
): Promise<StreamingBenchRow[]> {
  const names: IsolatedNames = namesFrom(`bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`);
  const streaming = await openIsolatedStreaming(urls, names, settings.maxBatchMessages, {
    partitionsConsumedConcurrently: settings.partitionsConcurrently,
    // The worker's defaults (the test helper's are shorter, for fast failovers).
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 10_000,
  });
  try {
    await streaming.bus.ensureTopics([
      { name: names.telemetryTopic, partitions: settings.partitions },
      { name: names.deadLetterTopic, partitions: 1 },
    ]);
    const steadyPointsPerMachine = 4000;
    const series = exampleSeries({
      points: settings.drainPointsPerMachine + steadyPointsPerMachine + settings.warmDrainPointsPerMachine,
      machines: settings.machines,
      spikes: 4,
      endMs: 1_750_000_000_000,
      stepMs: STEP_MS,
    });
    const baselines = new Map<string, BaselineRecord>();
    if (variant.baselines && model) {
      for (const machine of series) {
        const healthy = machine.values.slice(0, Math.min(...machine.spikes));
        const { energies } = await model.energies(healthy, { normalisation: robustNormalisation(healthy) });
        baselines.set(machine.machineId, baselineFor(machine, energies));
      }
    }
    const perMessage = variant.pointsPerMessage;
    const drainPoints = settings.machines * settings.drainPointsPerMachine;
    const drainMessages = interleave(
      series.map((s) =>
        telemetryMessages(
          ORG,
          s.machineId,
          s.timestampsMs.slice(0, settings.drainPointsPerMachine),
          s.values.slice(0, settings.drainPointsPerMachine),
          perMessage,
        ),
      ),
    );
    log(`${variant.name}: producing ${drainPoints} points in ${drainMessages.length} messages`);
    await sendAll(streaming, names.telemetryTopic, drainMessages);

    const config = benchWorkerConfig(names, settings, variant);
    const started = await startMeasuredWorker(streaming, config, baselines, model);
    let worker = started.worker;
    try {
      const rows: StreamingBenchRow[] = [
        await drainRow(`${variant.name}: drain`, started, drainPoints, variant, settings, log),
      ];

      // Steady rate. With batches, each send carries whole messages: its points in messages of
      // pointsPerMessage points (each machine's next ones), about the same points per send.
      const rate = Math.max(100, Math.floor(rows[0]!.pointsPerSecond * settings.steadyShare));
      const perSend = Math.max(1, Math.round((rate * settings.sendEveryMs) / 1000 / perMessage));
      const steadyEnd = settings.drainPointsPerMachine + steadyPointsPerMachine;
      const steadyMessages = interleave(
        series.map((s) =>
          telemetryMessages(
            ORG,
            s.machineId,
            s.timestampsMs.slice(settings.drainPointsPerMachine, steadyEnd),
            s.values.slice(settings.drainPointsPerMachine, steadyEnd),
            perMessage,
          ),
        ),
      );
      // Messages offered (whole ones), and the points they carry.
      const totalMessages = Math.min(steadyMessages.length, Math.round((rate * settings.steadySeconds) / perMessage));
      const total = totalMessages * perMessage;
      const steadyFrom = started.summaries.length;
      const producer = await streaming.bus.producer();
      const target = worker.counters().rows + total;
      log(`${variant.name}: offering ${rate} points/s for ${round(total / rate, 1)} s`);
      try {
        const offeredFrom = performance.now();
        for (let sent = 0, tick = 0; sent < totalMessages; tick++) {
          const batch = steadyMessages.slice(sent, Math.min(totalMessages, sent + perSend));
          await producer.send(names.telemetryTopic, batch);
          sent += batch.length;
          const wait = offeredFrom + (tick + 1) * settings.sendEveryMs - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
      } finally {
        await producer.close();
      }
      while (worker.counters().rows < target) await new Promise((resolve) => setTimeout(resolve, 50));
      const steady = started.summaries.slice(steadyFrom);
      const lags = steady.flatMap((summary) => summary.lagMs);
      rows.push({
        name: `${variant.name}: steady`,
        machines: settings.machines,
        points: total,
        windowPoints: settings.windowPoints,
        baselines: variant.baselines,
        pointsPerSecond: rate,
        lag: summarize(lags),
        batches: steady.length,
        meanBatchMessages: round(totalMessages / Math.max(1, steady.length), 0),
      });

      // Full windows: the worker stops (its windows checkpointed), a backlog waits in Kafka, and a
      // new worker resumes every machine from its checkpoint and drains it.
      await worker.stop();
      // Each machine goes on from the point after its last steady one (the steady rows sent the
      // first `totalMessages` of the interleaved messages: one per machine in turn).
      const warmMessages = interleave(
        series.map((s, m) => {
          const sentMessages = Math.floor(totalMessages / series.length) + (m < totalMessages % series.length ? 1 : 0);
          const from = settings.drainPointsPerMachine + sentMessages * perMessage;
          const to = from + settings.warmDrainPointsPerMachine;
          return telemetryMessages(ORG, s.machineId, s.timestampsMs.slice(from, to), s.values.slice(from, to), perMessage);
        }),
      );
      const warmPoints = settings.machines * settings.warmDrainPointsPerMachine;
      log(`${variant.name}: worker stopped; producing ${warmPoints} points in ${warmMessages.length} messages for a restarted one`);
      await sendAll(streaming, names.telemetryTopic, warmMessages);
      const restarted = await startMeasuredWorker(streaming, config, baselines, model);
      worker = restarted.worker;
      rows.push(await drainRow(`${variant.name}: drain, windows full (restarted worker)`, restarted, warmPoints, variant, settings, log));
      return rows;
    } finally {
      await worker.stop();
    }
  } finally {
    await streaming.close();
    await cleanUp(urls, names);
  }
}

/** The worker's configuration in every variant: the service's defaults, the variant's threads. */
function benchWorkerConfig(
  names: Pick<IsolatedNames, 'groupId' | 'telemetryTopic' | 'deadLetterTopic'>,
  settings: ReturnType<typeof settingsFor>,
  variant: Variant,
): WorkerRuntimeConfig {
  return {
    windowPoints: settings.windowPoints,
    memoryPoints: 8640,
    sensitivity: 95,
    maxAnomalyRatio: 0.25,
    changePoints: true,
    predictorCacheSize: 1024,
    baselineRefreshMs: 3_600_000,
    groupId: names.groupId,
    telemetryTopic: names.telemetryTopic,
    deadLetterTopic: names.deadLetterTopic,
    telemetryPartitions: settings.partitions,
    detectionThreads: variant.detectionThreads,
  };
}

/**
 * The worker alone: the same worker and drain on the in-process bus with results and checkpoints
 * in memory, so no server shares the two cores. What it leaves out is the worker's own share of
 * the servers' work (the Kafka client's fetch and decode, the RowBinary encoding of the result
 * rows, about 0.7 µs a row, and the Redis writes): an upper bound on what one worker drains
 * when the servers run on other machines.
 */
async function runAloneVariant(
  variant: Variant,
  settings: ReturnType<typeof settingsFor>,
  log: (message: string) => void,
): Promise<StreamingBenchRow> {
  const names = { groupId: 'bench-alone', telemetryTopic: 'telemetry', deadLetterTopic: 'dead-letters' };
  const dataDir = variant.embedded ? await mkdtemp(path.join(os.tmpdir(), 'adp-bench-embedded-')) : null;
  const streaming = await openStreaming({
    inProcess: { maxBatchMessages: settings.maxBatchMessages },
    ...(dataDir === null ? {} : { dataDir, embeddedBus: 'durable', embeddedResults: 'duckdb', embeddedCheckpoints: 'duckdb' }),
  });
  try {
    await streaming.bus.ensureTopics([
      { name: names.telemetryTopic, partitions: settings.partitions },
      { name: names.deadLetterTopic, partitions: 1 },
    ]);
    const perMachine = settings.alonePointsPerMachine;
    const series = exampleSeries({ points: perMachine, machines: settings.machines, spikes: 4, endMs: 1_750_000_000_000, stepMs: STEP_MS });
    const messages = interleave(
      series.map((s) => telemetryMessages(ORG, s.machineId, s.timestampsMs, s.values, variant.pointsPerMessage)),
    );
    const points = settings.machines * perMachine;
    log(`${variant.name}: producing ${points} points in ${messages.length} messages`);
    await sendAll(streaming, names.telemetryTopic, messages);
    const started = await startMeasuredWorker(streaming, benchWorkerConfig(names, settings, variant), new Map(), null);
    try {
      return await drainRow(`${variant.name}: drain`, started, points, variant, settings, log);
    } finally {
      await started.worker.stop();
    }
  } finally {
    await streaming.close();
    if (dataDir !== null) await rm(dataDir, { recursive: true, force: true });
  }
}

interface MeasuredWorker {
  readonly worker: Awaited<ReturnType<typeof startWorker>>;
  /** Its batches' summaries and start times (performance.now()), in the order they ended. */
  readonly summaries: BatchSummary[];
  readonly batchStartsMs: number[];
}

/** Starts a worker on the bench's servers, collecting its batch summaries. */
async function startMeasuredWorker(
  streaming: Streaming,
  config: WorkerRuntimeConfig,
  baselines: ReadonlyMap<string, BaselineRecord>,
  model: LoadedModelRuntime | null,
): Promise<MeasuredWorker> {
  const summaries: BatchSummary[] = [];
  const batchStartsMs: number[] = [];
  const worker = await startWorker({
    ...streaming,
    store: { getBaseline: async (_org, machineId) => baselines.get(machineId) ?? null },
    loadModel: async () => {
      if (!model) throw new Error('no model in this variant');
      return model;
    },
    config,
    onBatch: (summary) => {
      batchStartsMs.push(performance.now() - summary.timings.totalMs);
      summaries.push(summary);
    },
  });
  return { worker, summaries, batchStartsMs };
}

/**
 * Waits until `worker` has stored `points` rows and reports the drain: points over the time from
 * the start of its first batch to the end of the one that stored the last point.
 */
async function drainRow(
  name: string,
  { worker, summaries, batchStartsMs }: MeasuredWorker,
  points: number,
  variant: Variant,
  settings: ReturnType<typeof settingsFor>,
  log: (message: string) => void,
): Promise<StreamingBenchRow> {
  while (worker.counters().rows < points) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (worker.counters().failedBatches > 0) throw new Error(`${name}: a batch failed`);
  }
  const drainEndMs = performance.now();
  const drained = summaries.slice();
  const firstBatchStartMs = batchStartsMs[0] ?? drainEndMs;
  const wallMs = drainEndMs - firstBatchStartMs;
  const drainRate = points / (wallMs / 1000);
  // decode, detect (the judge), regimes and rows are this thread's own work, energy is mostly
  // onnxruntime's (in this thread too); `other` is the rest of the wall time: the bus's fetch and
  // offset commits, loading windows, and waiting for the writes. insert and checkpoint are the
  // writes (counted once per round of batches written together), which overlap the other
  // partitions' work, so with them the shares can add up to more than 100%.
  const phases = { decode: 0, detect: 0, energy: 0, regimes: 0, rows: 0, other: 0, insert: 0, checkpoint: 0 };
  for (const summary of drained) {
    phases.decode += summary.timings.decodeMs;
    phases.detect += summary.timings.detectMs;
    phases.energy += summary.timings.energyMs;
    phases.regimes += summary.timings.regimesMs;
    phases.rows += summary.timings.rowsMs;
    phases.insert += summary.timings.insertMs / summary.storedWith;
    phases.checkpoint += summary.timings.checkpointMs / summary.storedWith;
  }
  phases.other = Math.max(0, wallMs - phases.decode - phases.detect - phases.energy - phases.regimes - phases.rows);
  const timeShares: Record<string, number> = {};
  for (const [phase, ms] of Object.entries(phases)) timeShares[phase] = round((100 * ms) / wallMs, 1);
  timeShares['inserts'] = Math.round(drained.reduce((n, summary) => n + 1 / summary.storedWith, 0));
  const perPointMs: Record<string, number> = {};
  for (const phase of ['decode', 'detect', 'energy', 'regimes', 'rows'] as const) perPointMs[phase] = round(phases[phase] / points, 4);
  log(`${name}: drained ${points} points in ${round(wallMs / 1000, 2)} s (${round(drainRate, 0)} points/s)`);
  return {
    name,
    machines: settings.machines,
    points,
    windowPoints: settings.windowPoints,
    baselines: variant.baselines,
    pointsPerSecond: round(drainRate, 0),
    timeShares,
    perPointMs,
    batches: drained.length,
    meanBatchMessages: round(drained.reduce((n, summary) => n + summary.messages, 0) / Math.max(1, drained.length), 0),
  };
}

function table(rows: readonly StreamingBenchRow[]): string {
  const lines = [
    '| row | machines | points | window | points/s | lag p50 ms | lag p99 ms | batches (mean size) | detect ms/point | where the time goes (share of wall time) |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---|',
  ];
  for (const row of rows) {
    const shares = row.timeShares
      ? Object.entries(row.timeShares)
          .filter(([phase, share]) => phase !== 'inserts' && share >= 0.5)
          .map(([phase, share]) => `${phase} ${share}%`)
          .concat(row.timeShares['inserts'] === undefined ? [] : [`(${row.timeShares['inserts']} inserts)`])
          .join(', ')
      : '';
    lines.push(
      `| ${row.name} | ${row.machines} | ${row.points} | ${row.windowPoints} | ${row.pointsPerSecond} | ${row.lag?.p50Ms ?? ''} | ${row.lag?.p99Ms ?? ''} | ${row.batches} (${row.meanBatchMessages}) | ${row.perPointMs?.['detect'] ?? ''} | ${shares} |`,
    );
  }
  return lines.join('\n');
}

const VARIANTS: readonly Variant[] = [
  { id: 'single', name: 'detection only', baselines: false, detectionThreads: 0, pointsPerMessage: 1 },
  { id: 'threads', name: 'detection only, 2 detection threads', baselines: false, detectionThreads: 2, pointsPerMessage: 1 },
  { id: 'baselines', name: 'with baselines (ONNX energies, regimes)', baselines: true, detectionThreads: 0, pointsPerMessage: 1 },
  { id: 'batch', name: `detection only, ${BATCH_POINTS} points a message`, baselines: false, detectionThreads: 0, pointsPerMessage: BATCH_POINTS },
  {
    id: 'batch-threads',
    name: `detection only, 2 detection threads, ${BATCH_POINTS} points a message`,
    baselines: false,
    detectionThreads: 2,
    pointsPerMessage: BATCH_POINTS,
  },
  ...([
    [0, 1],
    [2, 1],
    [0, BATCH_POINTS],
    [2, BATCH_POINTS],
  ] as const).map(([threads, perMessage]) => ({
    id: `alone${threads > 0 ? '-threads' : ''}${perMessage > 1 ? '-batch' : ''}`,
    name: `worker alone (in-process bus, memory stores)${threads > 0 ? `, ${threads} detection threads` : ''}${perMessage > 1 ? `, ${perMessage} points a message` : ''}`,
    baselines: false,
    detectionThreads: threads,
    pointsPerMessage: perMessage,
    alone: true,
  })),
  {
    id: 'embedded',
    name: `embedded default (durable in-process bus, DuckDB results and checkpoints), ${EMBEDDED_POINTS} points a message`,
    baselines: false,
    detectionThreads: 0,
    pointsPerMessage: EMBEDDED_POINTS,
    alone: true,
    embedded: true,
  },
];

/** Runs every variant (or those `only` names) and returns the rows. Needs the real Kafka, ClickHouse and Redis. */
export async function benchStreaming(options: StreamingBenchOptions = {}): Promise<StreamingBenchResult> {
  const quick = options.quick ?? false;
  const log = options.log ?? ((message: string) => process.stderr.write(`[bench:streaming] ${message}\n`));
  const urls: ServerUrls = options.urls ?? {
    kafkaBrokers: process.env['KAFKA_BROKERS']?.trim() || '127.0.0.1:9092',
    clickhouseUrl: process.env['CLICKHOUSE_URL']?.trim() || 'http://127.0.0.1:8123',
    redisUrl: process.env['REDIS_URL']?.trim() || 'redis://127.0.0.1:6379',
  };
  const settings = settingsFor(quick);
  const model = await createModelRuntime();
  const rows: StreamingBenchRow[] = [];
  try {
    for (const variant of VARIANTS.filter((v) => !options.only || options.only.includes(v.id))) {
      rows.push(...(variant.alone ? [await runAloneVariant(variant, settings, log)] : await runVariant(urls, variant, settings, model, log)));
    }
  } finally {
    await model.close();
  }
  return {
    settings: { ...settings, quick },
    environment: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      loadAverage1m: round(os.loadavg()[0] ?? 0, 2),
      note: 'Kafka, ClickHouse and Redis run on the same machine as the worker and the producer.',
    },
    rows,
    markdown: table(rows),
  };
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt > 0 ? (process.argv[onlyAt + 1] ?? '').split(',').filter(Boolean) : undefined;
  const unknown = only?.filter((id) => !VARIANTS.some((v) => v.id === id)) ?? [];
  if (unknown.length > 0 || only?.length === 0) {
    process.stderr.write(`--only takes variant ids separated by commas: ${VARIANTS.map((v) => v.id).join(', ')}\n`);
    process.exit(2);
  }
  benchStreaming({ quick, ...(only ? { only } : {}) })
    .then(async (result) => {
      process.stdout.write(`\n${result.markdown}\n\n`);
      // A partial run (--only) or --quick does not replace the committed figures.
      if (!quick && !only) {
        const out = fileURLToPath(new URL('./streaming-results.json', import.meta.url));
        const run = { generatedAt: new Date().toISOString(), ...result };
        await writeJson(out, streamingSummary(run));
        const full = fullResultsPath('streaming-results.json');
        await writeJson(full, run);
        process.stderr.write(`[bench:streaming] wrote ${out} (the summary the docs show) and ${full} (every figure)\n`);
      }
      process.exit(0);
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    });
}
