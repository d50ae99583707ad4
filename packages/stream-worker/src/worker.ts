// The stream worker's runner: one consumer of the telemetry topic in a consumer group. For each
// batch (the messages of one partition) it runs the steps in order, each its own module: decode
// and check (decode.ts; poison goes to the dead-letter topic), the series' windows and baselines
// (window-state.ts, baselines.ts), the judge (batch-judge.ts), the learned side where a series
// has a baseline (learned-stage.ts), the rows (result-rows.ts, machine-states.ts) and alerts
// (batch-alerts.ts), then the result sink (result-sink.ts) stores the rows and checkpoints, and
// only then may the bus commit the offsets (the handler resolves; offsets.ts). A failure anywhere
// rejects the batch, which the bus delivers again; nothing in memory changes until a batch has
// been stored, so a retry starts from the same state, and replays (points at or before a series'
// last judged timestamp) are skipped.
import { encodeEpisodeState, type EpisodeState } from '@adp/alerts';
import { inSpan, loadStreamingCodecs, streamingMetrics, type BusConsumer, type BusProducer, type IncomingBatch } from '@adp/streaming';
import { SpanKind } from '@opentelemetry/api';
import { FeedbackCache } from './alerting.js';
import { batchAlerts } from './batch-alerts.js';
import { judgeSeries, prepareSeries } from './batch-judge.js';
import { BaselineCache } from './baselines.js';
import { DEFAULT_LIVE_JUDGES } from './config.js';
import { decodeBatch } from './decode.js';
import { startDetectorPool } from './detect-pool.js';
import { LearnedStage } from './learned-stage.js';
import { judgeMachines, loadMachineStates } from './machine-states.js';
import { subscribeNotifications } from './notifications.js';
import { CheckpointKeys, PartitionOffsets } from './offsets.js';
import { seriesRows } from './result-rows.js';
import { ResultSink } from './result-sink.js';
import { appendToWindow, encodeWindow, windowCapacity, type SeriesWindow } from './series-window.js';
import { LiveJudges, type JudgeSettings } from './new-points-judge.js';
import { ENGINE_VERSION } from './version.js';
import { WindowState } from './window-state.js';
import { noopLogger, type BatchSummary, type RunningWorker, type WorkerCounters, type WorkerDeps } from './worker-types.js';

export type { BatchSummary, RunningWorker, WorkerCounters, WorkerDeps, WorkerLogger, WorkerRuntimeConfig } from './worker-types.js';

/** Starts consuming. Resolves once the worker has joined its group and subscribed to baseline changes. */
export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config } = deps;
  const logger = deps.logger ?? noopLogger;
  const now = deps.now ?? Date.now;
  const codecs = deps.codecs ?? loadStreamingCodecs();
  const capacity = windowCapacity(config.windowPoints);
  const baselines = new BaselineCache(deps.store, config.predictorCacheSize, config.baselineRefreshMs, now);
  const alerting = config.alerts ?? null;
  const feedback = new FeedbackCache(deps.store.alerting ?? null, config.predictorCacheSize, config.baselineRefreshMs, now);
  const keys = new CheckpointKeys(config.groupId);
  const offsets = new PartitionOffsets();
  const state = new WindowState({
    checkpoints: deps.checkpoints,
    keys,
    capacity,
    maxSeries: config.maxSeriesInMemory ?? 50_000,
    episodes: alerting !== null,
    logger,
  });
  const learned = new LearnedStage(deps.loadModel, config.changePoints);
  const counters: WorkerCounters = {
    batches: 0,
    messages: 0,
    rows: 0,
    deadLetters: 0,
    replays: 0,
    failedBatches: 0,
    baselineNotifications: 0,
    machineDeletions: 0,
    alerts: 0,
  };
  const threads = config.detectionThreads ?? 0;
  const liveJudges = config.liveJudges ?? DEFAULT_LIVE_JUDGES;
  const judgeSettings: JudgeSettings = {
    windowPoints: config.windowPoints,
    memoryPoints: config.memoryPoints,
    maxAnomalyRatio: config.maxAnomalyRatio,
    // Each detection thread keeps its share of the live judges.
    liveJudges: threads > 0 ? Math.ceil(liveJudges / threads) : 0,
  };
  const sink = new ResultSink(deps.results, deps.checkpoints, {
    lingerMs: config.storeLingerMs ?? 5,
    maxRows: 50_000,
    aroundInsert: (rows, insert) =>
      inSpan('results.insert', { 'db.system': 'clickhouse', 'db.operation': 'INSERT', 'adp.rows': rows }, insert, undefined, SpanKind.CLIENT),
  });

  if (config.ensureTopics ?? true) {
    await deps.bus.ensureTopics([
      { name: config.telemetryTopic, partitions: config.telemetryPartitions },
      { name: config.deadLetterTopic, partitions: 1 },
      ...(alerting ? [{ name: alerting.topic, partitions: config.telemetryPartitions }] : []),
    ]);
  }

  const unsubscribe = await subscribeNotifications(
    deps.notifier,
    {
      baselineChanged(orgId, machineId, deleted) {
        counters.baselineNotifications++;
        const dropped = baselines.drop(orgId, machineId);
        logger.info({ orgId, machineId, dropped }, 'baseline changed: cached predictor dropped');
        if (deleted) {
          counters.machineDeletions++;
          feedback.drop(orgId, machineId); // the API deleted its feedback too
          state.forgetMachine(orgId, machineId);
        }
      },
      feedbackChanged(orgId, machineId) {
        feedback.drop(orgId, machineId);
      },
    },
    logger,
  );

  const detector = threads > 0 ? startDetectorPool(threads) : null;
  const live = detector === null && liveJudges > 0 ? new LiveJudges(liveJudges) : undefined;
  let producer: BusProducer | undefined;
  let consumer: BusConsumer | undefined;
  try {
    producer = await deps.bus.producer();
    consumer = await deps.bus.consumer({ groupId: config.groupId, topics: [config.telemetryTopic] });
  } catch (error) {
    await unsubscribe();
    await producer?.close().catch(() => undefined);
    await detector?.close();
    throw error;
  }
  // Sends the dead letters and, with alerts on, the alerts.
  const outbound = producer;

  async function handle(batch: IncomingBatch): Promise<void> {
    const startedMs = performance.now();
    const mark = state.mark();
    const partitionKey = `${batch.topic}:${batch.partition}`;
    const first = batch.messages[0];
    const last = batch.messages[batch.messages.length - 1];
    if (!first || !last) return;
    if (!offsets.continues(partitionKey, first.offset)) state.dropPartition(partitionKey);

    // 1. Decode and check.
    const decoded = decodeBatch(codecs, batch.messages, now);
    const decodedMs = performance.now();

    // 2. Windows (memory or checkpoints), baselines, and with alerts the series' feedback (cached
    // like baselines), read beside them rather than one by one later.
    const seriesKeys = [...decoded.series.keys()];
    const pendingOf = (key: string) => decoded.series.get(key)!;
    const [loaded, seriesBaselines, verdicts] = await Promise.all([
      state.load(seriesKeys, partitionKey),
      Promise.all(seriesKeys.map((key) => baselines.get(pendingOf(key).orgId, pendingOf(key).seriesId))),
      alerting ? Promise.all(seriesKeys.map((key) => feedback.verdictOf(pendingOf(key).orgId, pendingOf(key).seriesId))) : null,
    ]);
    const machines = await loadMachineStates([...decoded.machines.values()], {
      baselines,
      checkpoints: deps.checkpoints,
      keys,
      episodes: alerting !== null,
    });
    const stateMs = performance.now();

    // 3. Detection (here or in the detection threads), then 4. energies, z-scores and regimes.
    const prepared = seriesKeys.map((key, index) =>
      prepareSeries(key, pendingOf(key), loaded.windows.get(key)!, seriesBaselines[index]!, config.sensitivity),
    );
    const { judged, detectMs } = await judgeSeries(prepared, judgeSettings, { threads: detector, live });
    // Awaited only when there is inference to do: an await hands the thread to the other
    // partitions' batches, whose work would then count as this one's.
    const { inferenceMs, regimesMs } = judged.some((j) => j.baseline !== null && j.newValues.length > 0)
      ? await learned.add(judged)
      : { inferenceMs: 0, regimesMs: 0 };

    // 5. Rows, then episodes and their alerts.
    const writtenAtMs = now();
    const engineVersion = `engine-${ENGINE_VERSION}`;
    const model = learned.loaded();
    const learnedVersion = model ? `${engineVersion}+${(await model).modelVersion}` : engineVersion;
    const rowsStartedMs = performance.now();
    const { rows, replays } = seriesRows(judged, { defaultSensitivity: config.sensitivity, writtenAtMs, engineVersion, learnedVersion });
    const judgedMachines = judgeMachines(machines, { defaultSensitivity: config.sensitivity, writtenAtMs, keys });
    const { alerts, episodesAfter } = alerting
      ? batchAlerts({
          series: judged,
          seriesRows: rows,
          verdicts,
          episodes: loaded.episodes,
          machines: judgedMachines.judged,
          quietPoints: alerting.quietPoints,
          raisedAtMs: writtenAtMs,
        })
      : { alerts: [], episodesAfter: new Map<string, EpisodeState>() };
    for (const machine of judgedMachines.judged) rows.push(...machine.rows);
    let rowsMs = performance.now() - rowsStartedMs;

    // 6. Dead letters and alerts, then results and checkpoints (in one write with the other
    // partitions' batches that finish now): all before the handler resolves and the bus commits.
    if (decoded.deadLetters.length > 0) {
      await outbound.send(config.deadLetterTopic, decoded.deadLetters);
      logger.warn(
        { topic: batch.topic, partition: batch.partition, deadLetters: decoded.deadLetters.length, reasons: Object.fromEntries(decoded.reasons) },
        'poison messages sent to the dead-letter topic',
      );
    }
    if (alerting && alerts.length > 0) {
      // On the topic before the checkpoints: a crash in between replays the batch, which raises
      // the same alerts (same event ids) again rather than losing them.
      await outbound.send(
        alerting.topic,
        alerts.map((alert) => ({ key: `${alert.organization}/${alert.machine_id}`, value: codecs.alert.encode(alert) })),
      );
      counters.alerts += alerts.length;
    }
    const storeStartedMs = performance.now();
    const updated = new Map<string, SeriesWindow>();
    const checkpoints = new Map<string, Buffer>();
    for (const j of judged) {
      if (j.newValues.length === 0) continue;
      const key = `${j.pending.orgId}/${j.pending.seriesId}`;
      const zScores = j.judgedZScores ?? new Array<number>(j.newValues.length).fill(Number.NaN);
      appendToWindow(j.window, { values: j.newValues, timestampsMs: j.newTsMs, zScores }, capacity, j.historyLength ?? capacity);
      j.window.judge = j.judge;
      j.window.lastLearnedExcessAt = j.lastLearnedExcessAt;
      j.window.level = j.levelAfter;
      updated.set(key, j.window);
      checkpoints.set(keys.window(key), encodeWindow(j.window));
    }
    for (const [key, bytes] of judgedMachines.checkpoints) checkpoints.set(key, bytes);
    for (const [key, episode] of episodesAfter) checkpoints.set(keys.episode(key), encodeEpisodeState(episode));
    rowsMs += performance.now() - storeStartedMs;
    const stored = await sink.store(rows, checkpoints);
    const doneMs = performance.now();

    // 7. Stored: now the state may change (except for machines deleted meanwhile), and the
    // partition's next batch is expected after this one.
    await state.keep(mark, partitionKey, seriesKeys, loaded, updated, episodesAfter);
    offsets.stored(partitionKey, last.offset);

    const endMs = now();
    const lagMs = batch.messages.map((message) => endMs - message.timestampMs);
    counters.batches++;
    counters.messages += batch.messages.length;
    counters.rows += rows.length;
    counters.deadLetters += decoded.deadLetters.length;
    counters.replays += replays;
    const attributes = { 'messaging.destination.name': batch.topic };
    streamingMetrics.recordBatch(batch.messages.length, attributes);
    streamingMetrics.recordPoints(rows.length, attributes);
    if (inferenceMs > 0) streamingMetrics.recordInferenceMs(inferenceMs, attributes);
    for (const lag of lagMs) streamingMetrics.recordLagMs(lag, attributes);
    const summary: BatchSummary = {
      topic: batch.topic,
      partition: batch.partition,
      messages: batch.messages.length,
      rows: rows.length,
      deadLetters: decoded.deadLetters.length,
      replays,
      series: seriesKeys.length,
      storedWith: stored.batches,
      timings: {
        decodeMs: decodedMs - startedMs,
        stateMs: stateMs - decodedMs,
        detectMs,
        energyMs: inferenceMs,
        regimesMs,
        rowsMs,
        storeMs: doneMs - storeStartedMs,
        insertMs: stored.insertMs,
        checkpointMs: stored.checkpointMs,
        totalMs: doneMs - startedMs,
      },
      lagMs,
    };
    logger.debug(
      { partition: batch.partition, messages: summary.messages, rows: summary.rows, replays, timings: summary.timings },
      'batch stored',
    );
    deps.onBatch?.(summary);
  }

  const runningConsumer = consumer;
  const consume = async (batch: IncomingBatch): Promise<void> => {
    try {
      await inSpan(
        'telemetry.consume',
        {
          'messaging.system': 'kafka',
          'messaging.operation': 'process',
          'messaging.destination.name': batch.topic,
          'messaging.destination.partition.id': String(batch.partition),
          'messaging.batch.message_count': batch.messages.length,
        },
        () => handle(batch),
        batch.messages[0]?.headers,
        SpanKind.CONSUMER,
      );
    } catch (error) {
      counters.failedBatches++;
      logger.error(
        { err: error, topic: batch.topic, partition: batch.partition, offset: batch.messages[0]?.offset, messages: batch.messages.length },
        'batch failed; it will be delivered again',
      );
      throw error;
    }
  };
  try {
    await runningConsumer.run(consume);
  } catch (error) {
    await runningConsumer.close().catch(() => undefined);
    await unsubscribe();
    await outbound.close().catch(() => undefined);
    await detector?.close();
    throw error;
  }
  logger.info(
    { groupId: config.groupId, topic: config.telemetryTopic, windowPoints: config.windowPoints, detectionThreads: threads },
    'worker consuming',
  );

  let stopping: Promise<void> | undefined;
  return {
    stop(): Promise<void> {
      stopping ??= (async () => {
        await runningConsumer.close();
        await unsubscribe();
        await outbound.close().catch(() => undefined);
        await detector?.close();
        live?.clear();
        logger.info({ ...counters }, 'worker stopped');
      })();
      return stopping;
    },
    counters: () => ({ ...counters }),
  };
}
