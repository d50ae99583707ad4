// `npm run bench`: latency and throughput of the vendor endpoints and the native endpoints over
// loopback HTTP, the engine's own speed without HTTP, and the learned model's fine-tuning.
// Prints a markdown table and writes bench/results.json.
// `npm run bench -- --quick` is a short smoke run that prints the table and writes nothing.
// `npm run bench -- --compare REV` runs this tree and revision REV interleaved (./compare.ts).
import { fitMachineModel, judgeMachine } from '@adp/machine';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { detectEntireSeries, detectStream, judgeStream, type SeriesInput } from '@adp/detection';
import { createModelRuntime } from '@adp/model';
import { FINETUNE_CASE_LABELS, timeFineTune } from '../packages/model/bench/cases.js';
import { jobRows } from './jobs.js';
import { keepAliveAgent, postJson, type HttpResponse, type HttpTarget } from './http.js';
import type { ServeReply, ServeRequest } from './serve.js';
import { benchSeries, type BenchSeries } from './series.js';
import { BENCH_SECTIONS, BenchArgsError, parseBenchArgs, type BenchArgs, type BenchSection } from './args.js';
import { round, summarize, type LatencySummary } from './stats.js';
import { fullResultsPath, runSummary, writeJson } from './summary.js';

const args = ((): BenchArgs => {
  try {
    return parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof BenchArgsError)) throw err;
    process.stderr.write(`[bench] ${err.message}\nusage: npm run bench -- [--quick] [--sections ${BENCH_SECTIONS.join(',')}] [--job-points N] [--job-series N] [--json-out FILE] [--compare REV [--rounds N]]\n`);
    process.exit(2);
  }
})();
const { quick } = args;

/** Every knob of a run, recorded in results.json with the figures. */
const SETTINGS = {
  seed: 20240101,
  batchPoints: 8640,
  /** 5-minute data: the series is 30 days, with a daily period of 288 points. */
  granularity: 'minutely',
  customInterval: 5,
  seasonalPeriod: 288,
  sensitivity: 95,
  maxAnomalyRatio: 0.25,
  warmupRequests: quick ? 3 : 10,
  sequentialRequests: quick ? 20 : 200,
  /** A sequential row stops early when it has used this much time (and has at least 20 samples). */
  sequentialBudgetS: quick ? 5 : 25,
  concurrency: 32,
  concurrentDurationS: quick ? 3 : 10,
  /** Distinct last-detect bodies the concurrent clients rotate through. */
  lastBodies: 32,
  engineEntireRuns: quick ? 5 : 30,
  engineBudgetS: quick ? 5 : 15,
  streamPoints: 20_000,
  streamWindowPoints: 1441,
  streamRuns: quick ? 1 : 3,
  /** The stream row stops after the first run once this is spent. */
  streamBudgetS: quick ? 1 : 30,
  /** The server's LOG_LEVEL: the production default, so request logging is part of the cost. */
  serverLogLevel: 'info',
  /** Healthy series (no spikes, no level shift) for fine-tuning and baselines; its first 1,000 points are the short one. */
  healthySeed: 20240103,
  fineTunePoints: [1000, 8640],
  /** Timed fine-tunes per size, after one untimed warm-up at the smaller size. */
  fineTuneSamples: quick ? [2, 1] : [5, 3],
  /** onnxruntime intra-op threads of the in-process runtime: the API's own default. */
  fineTuneIntraOpThreads: 1,
  /** The slow reference fine-tune (once, on the 1,000 points) whose held-out loss is shown beside the default's. */
  fineTuneReference: !quick,
  baselinePoints: 1000,
  baselineWarmupRequests: quick ? 1 : 2,
  baselineRequests: quick ? 3 : 10,
  /** The multichannel baseline (8 channels x 400 rows, as a SKAB experiment's healthy start). */
  channelBaselineRows: 400,
  channelBaselineRequests: quick ? 3 : 5,
  detectWarmupRequests: quick ? 1 : 2,
  detectRequests: quick ? 3 : 20,
  detectEmbeddingsRequests: quick ? 2 : 10,
  /** A native row stops early when it has used this much time (and has at least 5 samples). */
  nativeBudgetS: quick ? 10 : 30,
  machineId: 'bench-pump-1',
  /** The jobs section: one job of this many points (in jobSeries series), after an untimed one of jobWarmupPoints. */
  jobPoints: args.jobPoints ?? (quick ? 100_000 : 1_000_000),
  jobSeries: args.jobSeries,
  jobWarmupPoints: quick ? 20_000 : 100_000,
  jobRuns: quick ? 2 : 3,
} as const;

const VENDOR = '/anomalydetector/v1.1/timeseries';
const STEP_MS = SETTINGS.customInterval * 60_000;

interface Row {
  readonly section: 'http' | 'http-concurrent' | 'http-native' | 'http-jobs' | 'engine' | 'model';
  readonly name: string;
  readonly points: number;
  readonly latency: LatencySummary;
  /** Requests (or runs) per second, or points per second for the stream row. */
  readonly throughput: number;
  readonly throughputUnit: 'req/s' | 'runs/s' | 'points/s';
  readonly notes?: Record<string, number | string>;
  /** A short remark for the table's last column. */
  readonly remark?: string;
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

// --- request bodies ---------------------------------------------------------------------------

function vendorSeries(series: BenchSeries, from: number, to: number) {
  const points = [];
  for (let i = from; i < to; i++) {
    points.push({ timestamp: new Date(series.timestampsMs[i] as number).toISOString(), value: series.values[i] });
  }
  return points;
}

function detectBody(series: BenchSeries, from: number, to: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      series: vendorSeries(series, from, to),
      granularity: SETTINGS.granularity,
      customInterval: SETTINGS.customInterval,
      sensitivity: SETTINGS.sensitivity,
      maxAnomalyRatio: SETTINGS.maxAnomalyRatio,
    }),
  );
}

function changepointBody(series: BenchSeries): Buffer {
  return Buffer.from(
    JSON.stringify({
      series: vendorSeries(series, 0, series.values.length),
      granularity: SETTINGS.granularity,
      customInterval: SETTINGS.customInterval,
    }),
  );
}

function baselineBody(series: BenchSeries, points: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      machine_id: SETTINGS.machineId,
      label: 'bench healthy series',
      granularity: SETTINGS.granularity,
      series: vendorSeries(series, 0, points),
    }),
  );
}

/** The native detect requests measured: the defaults, energies with embeddings, and a lean answer. */
const DETECT_VARIANTS = ['without embeddings', 'with embeddings', 'lean answer'] as const;
type DetectVariant = (typeof DETECT_VARIANTS)[number];

function nativeDetectBody(series: BenchSeries, variant: DetectVariant): Buffer {
  const lean = variant === 'lean answer';
  return Buffer.from(
    JSON.stringify({
      machine_id: SETTINGS.machineId,
      series: vendorSeries(series, 0, series.values.length),
      granularity: SETTINGS.granularity,
      customInterval: SETTINGS.customInterval,
      maxAnomalyRatio: SETTINGS.maxAnomalyRatio,
      // Without embeddings: the defaults (include_energy false since the z-scores carry them).
      ...(variant === 'with embeddings' ? { include_energy: true } : {}),
      include_embeddings: variant === 'with embeddings',
      // The lean answer: the verdicts, bands and regimes without the per-point scores behind them.
      ...(lean ? { include_energy: false, include_z_scores: false, include_shape_scores: false } : {}),
    }),
  );
}

// --- the server child ---------------------------------------------------------------------------

interface Server {
  readonly target: HttpTarget;
  close(): Promise<void>;
}

async function startServer(): Promise<Server> {
  const dataDir = await mkdtemp(join(os.tmpdir(), 'adp-bench-'));
  const apiKey = `svc_test_${randomBytes(24).toString('base64url')}`;
  const child: ChildProcess = fork(fileURLToPath(new URL('./serve.ts', import.meta.url)), [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    // The server's stdout (first-start key notice, logs) is not part of the report.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const cleanUp = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the server process exited (status ${code}) before listening`)));
      child.once('error', reject);
      child.on('message', (m: ServeReply) => {
        if (m.type === 'listening') resolve(m.port);
        if (m.type === 'failed') reject(new Error(`the server did not start: ${m.message}`));
      });
      const start: ServeRequest = { type: 'start', dataDir, apiKey, logLevel: SETTINGS.serverLogLevel };
      child.send(start);
    });
    child.removeAllListeners('exit');
    return {
      target: { port, apiKey, agent: keepAliveAgent(SETTINGS.concurrency) },
      close: async () => {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.send({ type: 'close' });
        });
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

// --- HTTP measurements --------------------------------------------------------------------------

async function expectOk(target: HttpTarget, path: string, body: Buffer, check: (json: unknown) => string | null) {
  const res = await postJson(target, path, body);
  if (res.status !== 200) {
    throw new Error(`${path} answered ${res.status}: ${res.body.slice(0, 300)}`);
  }
  const problem = check(JSON.parse(res.body));
  if (problem !== null) throw new Error(`${path}: ${problem}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

function arrayOf(field: string, length: number) {
  return (json: unknown): string | null => {
    const value = (json as Record<string, unknown>)[field];
    return Array.isArray(value) && value.length === length ? null : `expected ${field} with ${length} elements`;
  };
}

interface SequentialPlan {
  readonly warmup: number;
  readonly requests: number;
  /** Stop early once this is spent and `minSamples` are taken. */
  readonly budgetS: number;
  readonly minSamples: number;
  /** Sees every timed response (after its time is taken). */
  readonly observe?: (res: HttpResponse) => void;
}

const VENDOR_PLAN: SequentialPlan = {
  warmup: SETTINGS.warmupRequests,
  requests: SETTINGS.sequentialRequests,
  budgetS: SETTINGS.sequentialBudgetS,
  minSamples: 20,
};

async function sequential(
  target: HttpTarget,
  name: string,
  path: string,
  bodies: readonly Buffer[],
  points: number,
  plan: SequentialPlan = VENDOR_PLAN,
): Promise<Row> {
  const pick = (i: number) => bodies[i % bodies.length] as Buffer;
  for (let i = 0; i < plan.warmup; i++) {
    const res = await postJson(target, path, pick(i));
    if (res.status !== 200) throw new Error(`${path} answered ${res.status} during the warm-up: ${res.body.slice(0, 200)}`);
  }
  const durations: number[] = [];
  const started = performance.now();
  const deadline = started + plan.budgetS * 1000;
  for (let i = 0; i < plan.requests; i++) {
    const res = await postJson(target, path, pick(i));
    if (res.status !== 200) throw new Error(`${path} answered ${res.status} during the run: ${res.body.slice(0, 200)}`);
    durations.push(res.elapsedMs);
    plan.observe?.(res);
    if (durations.length >= plan.minSamples && performance.now() > deadline) break;
  }
  const elapsedS = (performance.now() - started) / 1000;
  const latency = summarize(durations);
  log(`${name}: ${latency.samples} requests, p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms`);
  return { section: 'http', name, points, latency, throughput: round(durations.length / elapsedS, 1), throughputUnit: 'req/s' };
}

async function concurrent(target: HttpTarget, path: string, bodies: readonly Buffer[], points: number): Promise<Row> {
  const durations: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + SETTINGS.concurrentDurationS * 1000;
  const client = async () => {
    while (performance.now() < deadline) {
      const res = await postJson(target, path, bodies[next++ % bodies.length] as Buffer);
      if (res.status === 200) durations.push(res.elapsedMs);
      else failures++;
    }
  };
  await Promise.all(Array.from({ length: SETTINGS.concurrency }, client));
  const elapsedS = (performance.now() - started) / 1000;
  const latency = summarize(durations);
  const rps = round(durations.length / elapsedS, 1);
  log(`last/detect x${SETTINGS.concurrency}: ${durations.length} ok, ${failures} failed in ${round(elapsedS, 1)} s = ${rps} req/s`);
  return {
    section: 'http-concurrent',
    name: `last/detect, concurrency ${SETTINGS.concurrency}`,
    points,
    latency,
    throughput: rps,
    throughputUnit: 'req/s',
    notes: { failures, durationS: round(elapsedS, 2), concurrency: SETTINGS.concurrency },
    remark: `${failures} failed`,
  };
}

// --- native API measurements ---------------------------------------------------------------------

const megabytes = (bytes: number) => round(bytes / 1e6, 2);

/** A number field read from a JSON response without parsing it all (the embeddings body is ~17 MB). */
function numberField(body: string, field: string): number {
  const match = new RegExp(`"${field}":(-?[0-9.eE+-]+)`).exec(body);
  return match === null ? Number.NaN : Number(match[1]);
}

const NATIVE_PLAN = { budgetS: SETTINGS.nativeBudgetS, minSamples: 5 } as const;

/**
 * `POST /v1/baseline` (1,000 healthy points; the fine-tune runs in the server's worker thread) for
 * one machine, then `POST /v1/detect` over 8,640 points for that baselined machine, without and
 * with embeddings.
 */
async function nativeRows(target: HttpTarget, healthy: BenchSeries, batch: BenchSeries): Promise<Row[]> {
  const rows: Row[] = [];
  const baseline = baselineBody(healthy, SETTINGS.baselinePoints);
  const first = await expectOk(target, '/v1/baseline', baseline, (j) => {
    const stats = (j as { finetune_stats?: { status?: unknown } }).finetune_stats;
    return stats?.status === 'completed' ? null : 'expected finetune_stats.status completed';
  });
  const finetuneStats = first.finetune_stats as { final_loss: number; duration_seconds: number };
  const serverFineTuneS: number[] = [];
  const baselineRow = await sequential(target, 'POST /v1/baseline', '/v1/baseline', [baseline], SETTINGS.baselinePoints, {
    ...NATIVE_PLAN,
    warmup: SETTINGS.baselineWarmupRequests,
    requests: SETTINGS.baselineRequests,
    observe: (res) => serverFineTuneS.push(numberField(res.body, 'duration_seconds')),
  });
  const fineTuneLatency = summarize(serverFineTuneS.map((x) => x * 1000));
  rows.push({
    ...baselineRow,
    section: 'http-native',
    notes: {
      requestMB: megabytes(baseline.length),
      finalLoss: finetuneStats.final_loss,
      serverFineTuneP50Ms: fineTuneLatency.p50Ms,
      serverFineTuneP99Ms: fineTuneLatency.p99Ms,
    },
    remark:
      `request ${megabytes(baseline.length)} MB; fine-tune (duration_seconds) p50 ${fineTuneLatency.p50Ms} ms; ` +
      `held-out loss ${round(finetuneStats.final_loss, 6)}`,
  });

  rows.push(await channelBaselineRow(target, healthy));

  const n = batch.values.length;
  for (const variant of DETECT_VARIANTS) {
    const includeEmbeddings = variant === 'with embeddings';
    const body = nativeDetectBody(batch, variant);
    const checked = await expectOk(target, '/v1/detect', body, (j) => {
      const json = j as { engine?: unknown; energies?: unknown; z_scores?: unknown; embeddings?: unknown[] | null };
      if (json.engine !== 'fine-tuned') return `expected engine fine-tuned, got ${String(json.engine)}`;
      if (variant === 'lean answer') return json.energies === null && json.z_scores === null ? null : 'expected energies and z-scores null';
      if (!Array.isArray(json.z_scores) || json.z_scores.length !== n) return `expected z-scores with ${n} elements`;
      // The defaults: whether they carry energies is the revision's choice (`--compare` runs older ones).
      if (!includeEmbeddings) return json.embeddings === null ? null : 'expected embeddings null';
      if (!Array.isArray(json.energies) || json.energies.length !== n) return `expected energies with ${n} elements`;
      const ok = Array.isArray(json.embeddings) && json.embeddings.length === n && (json.embeddings[0] as unknown[]).length === 192;
      return ok ? null : `expected ${n} embeddings of 192 numbers`;
    });
    const responseBytes = Buffer.byteLength(JSON.stringify(checked));
    const inferenceMs: number[] = [];
    const name = `POST /v1/detect, ${variant}`;
    const row = await sequential(target, name, '/v1/detect', [body], n, {
      ...NATIVE_PLAN,
      warmup: SETTINGS.detectWarmupRequests,
      requests: includeEmbeddings ? SETTINGS.detectEmbeddingsRequests : SETTINGS.detectRequests,
      observe: (res) => inferenceMs.push(numberField(res.body, 'inference_time_ms')),
    });
    const model = summarize(inferenceMs);
    rows.push({
      ...row,
      section: 'http-native',
      notes: {
        requestMB: megabytes(body.length),
        responseMB: megabytes(responseBytes),
        inferenceP50Ms: model.p50Ms,
        inferenceP99Ms: model.p99Ms,
      },
      remark: `request ${megabytes(body.length)} MB, response ${megabytes(responseBytes)} MB; model (inference_time_ms) p50 ${model.p50Ms} ms`,
    });
  }
  return rows;
}

/**
 * `POST /v1/baseline` of a machine's 8 channels x 400 rows (points carrying `channels`): each
 * channel fine-tuned and the machine model fitted, as SKAB's protocol does with an experiment's
 * healthy start.
 */
async function channelBaselineRow(target: HttpTarget, healthy: BenchSeries): Promise<Row> {
  const rows = SETTINGS.channelBaselineRows;
  const channels = machineChannels(rows, 11);
  const body = Buffer.from(
    JSON.stringify({
      machine_id: 'bench-rig-8',
      granularity: SETTINGS.granularity,
      customInterval: SETTINGS.customInterval,
      series: Array.from({ length: rows }, (_, t) => ({
        timestamp: new Date(healthy.timestampsMs[t] as number).toISOString(),
        channels: Object.fromEntries(channels.map((values, c) => [`ch${c}`, values[t]])),
      })),
    }),
  );
  await expectOk(target, '/v1/baseline', body, (j) => {
    const listed = (j as { channels?: unknown[] }).channels;
    return Array.isArray(listed) && listed.length === channels.length ? null : `expected ${channels.length} channels`;
  });
  const row = await sequential(target, CHANNEL_BASELINE_ROW, '/v1/baseline', [body], rows * channels.length, {
    budgetS: SETTINGS.nativeBudgetS,
    minSamples: 3,
    warmup: 0,
    requests: SETTINGS.channelBaselineRequests,
  });
  return { ...row, section: 'http-native', notes: { requestMB: megabytes(body.length) }, remark: `request ${megabytes(body.length)} MB; channels fine-tuned and the machine model fitted` };
}

const CHANNEL_BASELINE_ROW = `POST /v1/baseline, 8 channels x ${SETTINGS.channelBaselineRows} rows`;

// --- model measurements (no HTTP) ----------------------------------------------------------------

/**
 * The model runtime's `fineTune` in this process (what the API's worker threads run), on the
 * healthy series at each size, with the cases and timing of packages/model/bench/cases.ts.
 */
async function modelRows(healthy: BenchSeries): Promise<Row[]> {
  const rows: Row[] = [];
  const runtime = await createModelRuntime({ intraOpThreads: SETTINGS.fineTuneIntraOpThreads });
  try {
    const [small] = SETTINGS.fineTunePoints;
    await runtime.fineTune(healthy.values.slice(0, small));
    for (const [index, points] of SETTINGS.fineTunePoints.entries()) {
      const values = healthy.values.slice(0, points);
      const timing = await timeFineTune(runtime, values, 'fast', SETTINGS.fineTuneSamples[index]);
      const latency = summarize(timing.durationsMs);
      const notes: Record<string, number | string> = {
        mode: FINETUNE_CASE_LABELS.fast,
        windows: timing.windows,
        p50S: round(latency.p50Ms / 1000, 3),
        p99S: round(latency.p99Ms / 1000, 3),
        finalLoss: timing.finalLoss,
      };
      let remark = `held-out loss ${round(timing.finalLoss, 6)}`;
      if (points === small && SETTINGS.fineTuneReference) {
        const reference = await timeFineTune(runtime, values, 'reference');
        const referenceS = round((reference.durationsMs[0] ?? Number.NaN) / 1000, 2);
        const ratio = round(timing.finalLoss / reference.finalLoss, 3);
        Object.assign(notes, {
          reference: FINETUNE_CASE_LABELS.reference,
          referenceFinalLoss: reference.finalLoss,
          referenceEpochsRun: reference.epochsRun,
          referenceSeconds: referenceS,
          lossRatioToReference: ratio,
        });
        remark += `; slow reference ${round(reference.finalLoss, 6)} in ${referenceS} s (ratio ${ratio})`;
      }
      log(`fineTune ${points} points: ${latency.samples} runs, p50 ${latency.p50Ms} ms; ${remark}`);
      rows.push({
        section: 'model',
        name: `fineTune, ${FINETUNE_CASE_LABELS.fast}`,
        points,
        latency,
        throughput: round(1000 / latency.meanMs, 2),
        throughputUnit: 'runs/s',
        notes,
        remark,
      });
    }
  } finally {
    await runtime.close();
  }
  return rows;
}

// --- engine measurements ------------------------------------------------------------------------

function engineInput(series: BenchSeries, withGrid: boolean): SeriesInput {
  return {
    timestampsMs: withGrid ? series.timestampsMs : null,
    values: series.values,
    granularity: withGrid ? SETTINGS.granularity : 'none',
    customInterval: withGrid ? SETTINGS.customInterval : 1,
    imputeMode: 'auto',
  };
}

/** Up to `runs` timed calls; stops early once `budgetS` is spent and `minRuns` are done. */
function timeRuns(runs: number, minRuns: number, budgetS: number, fn: () => void): number[] {
  const durations: number[] = [];
  const deadline = performance.now() + budgetS * 1000;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    durations.push(performance.now() - t0);
    if (durations.length >= minRuns && performance.now() > deadline) break;
  }
  return durations;
}

function engineRows(batch: BenchSeries): Row[] {
  const rows: Row[] = [];
  const options = { sensitivity: SETTINGS.sensitivity, maxAnomalyRatio: SETTINGS.maxAnomalyRatio };

  const entireInput = engineInput(batch, true);
  for (let i = 0; i < 2; i++) detectEntireSeries(entireInput, options);
  const entire = timeRuns(SETTINGS.engineEntireRuns, 3, SETTINGS.engineBudgetS, () => detectEntireSeries(entireInput, options));
  const entireLatency = summarize(entire);
  log(`engine detectEntireSeries: ${entire.length} runs, p50 ${entireLatency.p50Ms} ms`);
  rows.push({
    section: 'engine',
    name: 'detectEntireSeries',
    points: batch.values.length,
    latency: entireLatency,
    throughput: round(1000 / entireLatency.meanMs, 1),
    throughputUnit: 'runs/s',
  });

  // The stream file as `npm run detect -- f.csv --mode stream --window 1441` reads it: no grid,
  // no client period (each window's period is detected, re-checked as the window slides).
  const streamSeries = benchSeries({
    points: SETTINGS.streamPoints,
    period: SETTINGS.seasonalPeriod,
    stepMs: STEP_MS,
    seed: SETTINGS.seed + 1,
  });
  const streamInput = engineInput(streamSeries, false);
  const streamOptions = { ...options, windowPoints: SETTINGS.streamWindowPoints };
  detectStream(engineInput(benchSeries({ points: 3000, period: SETTINGS.seasonalPeriod, stepMs: STEP_MS, seed: 1 }), false), streamOptions);
  let judged = 0;
  const stream = timeRuns(SETTINGS.streamRuns, 1, SETTINGS.streamBudgetS, () => {
    judged = detectStream(streamInput, streamOptions).length;
  });
  if (judged !== SETTINGS.streamPoints) throw new Error(`detectStream returned ${judged} records for ${SETTINGS.streamPoints} points`);
  const streamLatency = summarize(stream);
  log(`engine detectStream: ${stream.length} runs, p50 ${streamLatency.p50Ms} ms`);
  rows.push({
    section: 'engine',
    name: `detectStream, window ${SETTINGS.streamWindowPoints}`,
    points: SETTINGS.streamPoints,
    latency: streamLatency,
    throughput: Math.round((SETTINGS.streamPoints * 1000) / streamLatency.p50Ms),
    throughputUnit: 'points/s',
    notes: { period: 'detected per window', usPerPoint: round((streamLatency.p50Ms * 1000) / SETTINGS.streamPoints, 1) },
    remark: 'period detected per window',
  });

  // The streaming worker's incremental judge (its defaults) on the same series,
  // one core, at the worker's default window and at the one above.
  for (const windowPoints of [720, SETTINGS.streamWindowPoints]) {
    const judgeOptions = { ...options, windowPoints };
    judgeStream(streamSeries.values.slice(0, 3000), judgeOptions);
    const runs = timeRuns(SETTINGS.streamRuns, 1, SETTINGS.streamBudgetS, () => {
      judged = judgeStream(streamSeries.values, judgeOptions).length;
    });
    if (judged !== SETTINGS.streamPoints) throw new Error(`judgeStream returned ${judged} records for ${SETTINGS.streamPoints} points`);
    const latency = summarize(runs);
    log(`engine judgeStream, window ${windowPoints}: ${runs.length} runs, p50 ${latency.p50Ms} ms`);
    rows.push({
      section: 'engine',
      name: `judgeStream (incremental), window ${windowPoints}`,
      points: SETTINGS.streamPoints,
      latency,
      throughput: Math.round((SETTINGS.streamPoints * 1000) / latency.p50Ms),
      throughputUnit: 'points/s',
      notes: { period: 'detected per window', usPerPoint: round((latency.p50Ms * 1000) / SETTINGS.streamPoints, 1) },
      remark: 'incremental judge (createStreamJudge defaults)',
    });
  }
  rows.push(...machineModelRows());
  return rows;
}

/** Eight channels of a machine: a shared load, each channel's own scale and noise. */
function machineChannels(points: number, seed: number): number[][] {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state + 0.5) / 4294967296;
  };
  const noise = (): number => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  const channels = Array.from({ length: 8 }, () => new Array<number>(points));
  for (let t = 0; t < points; t++) {
    const load = Math.sin(t / 9) + 0.2 * noise();
    channels.forEach((channel, c) => (channel[t] = 10 * (c + 1) + (c % 3 === 2 ? 0 : (c + 1) * load) + 0.3 * noise()));
  }
  return channels;
}

/** The machine model (pipelines/machine): a multivariate baseline's fit and a multivariate detection's verdict. */
function machineModelRows(): Row[] {
  const names = Array.from({ length: 8 }, (_, c) => `ch${c}`);
  const healthy = { channels: names, values: machineChannels(400, 11) };
  const judged = machineChannels(1000, 12);
  for (let i = 0; i < 2; i++) judgeMachine(fitMachineModel(healthy), judged, SETTINGS.sensitivity);
  const fits = timeRuns(SETTINGS.engineEntireRuns, 3, SETTINGS.engineBudgetS, () => fitMachineModel(healthy));
  const model = fitMachineModel(healthy);
  const judges = timeRuns(SETTINGS.engineEntireRuns, 3, SETTINGS.engineBudgetS, () => judgeMachine(model, judged, SETTINGS.sensitivity));
  const fitLatency = summarize(fits);
  const judgeLatency = summarize(judges);
  log(`machine model: fit p50 ${fitLatency.p50Ms} ms, judge p50 ${judgeLatency.p50Ms} ms`);
  return [
    { section: 'engine', name: 'fitMachineModel, 8 channels x 400 rows', points: 3200, latency: fitLatency, throughput: round(1000 / fitLatency.meanMs, 1), throughputUnit: 'runs/s' },
    { section: 'engine', name: 'judgeMachine, 8 channels x 1,000 points', points: 8000, latency: judgeLatency, throughput: round(1000 / judgeLatency.meanMs, 1), throughputUnit: 'runs/s' },
  ];
}

// --- report -------------------------------------------------------------------------------------

function machine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    totalMemoryGiB: round(os.totalmem() / 2 ** 30, 1),
  };
}

const SECTION_LABEL: Record<Row['section'], string> = {
  http: 'HTTP, sequential',
  'http-concurrent': 'HTTP, concurrent',
  'http-native': 'HTTP, native',
  'http-jobs': 'HTTP, jobs',
  engine: 'engine, no HTTP',
  model: 'model, no HTTP',
};

function table(rows: readonly Row[]): string {
  const lines = [
    '| What | Case | Points | Samples | p50 ms | p99 ms | Mean ms | Throughput | Notes |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    const throughput = `${r.throughput.toLocaleString('en-US')} ${r.throughputUnit}`;
    lines.push(
      `| ${SECTION_LABEL[r.section]} | ${r.name} | ${r.points.toLocaleString('en-US')} | ${r.latency.samples} | ` +
        `${r.latency.p50Ms} | ${r.latency.p99Ms} | ${r.latency.meanMs} | ${throughput} | ${r.remark ?? ''} |`,
    );
  }
  return lines.join('\n');
}

/** The vendor rows: entire, last (sequential and concurrent) and changepoint detection. */
async function vendorRows(target: HttpTarget, batch: BenchSeries): Promise<{ rows: Row[]; suggestedWindow: number }> {
  const rows: Row[] = [];
  const n = batch.values.length;
  const entireBody = detectBody(batch, 0, n);
  const changeBody = changepointBody(batch);

  // The last-detect series is as long as the service's own suggested window for this data.
  const probe = await expectOk(target, `${VENDOR}/last/detect`, entireBody, (j) =>
    typeof (j as Record<string, unknown>).suggestedWindow === 'number' ? null : 'no suggestedWindow',
  );
  const suggestedWindow = Math.min(n, probe.suggestedWindow as number);
  const lastBodies: Buffer[] = [];
  for (let k = 0; k < SETTINGS.lastBodies; k++) {
    const to = n - k * 7;
    lastBodies.push(detectBody(batch, to - suggestedWindow, to));
  }
  await expectOk(target, `${VENDOR}/entire/detect`, entireBody, arrayOf('isAnomaly', n));
  await expectOk(target, `${VENDOR}/last/detect`, lastBodies[0] as Buffer, (j) =>
    typeof (j as Record<string, unknown>).isAnomaly === 'boolean' ? null : 'no isAnomaly',
  );
  await expectOk(target, `${VENDOR}/changepoint/detect`, changeBody, arrayOf('isChangePoint', n));

  log('HTTP section');
  rows.push(await sequential(target, 'entire/detect', `${VENDOR}/entire/detect`, [entireBody], n));
  rows.push(await sequential(target, 'last/detect', `${VENDOR}/last/detect`, lastBodies, suggestedWindow));
  rows.push(await sequential(target, 'changepoint/detect', `${VENDOR}/changepoint/detect`, [changeBody], n));
  rows.push(await concurrent(target, `${VENDOR}/last/detect`, lastBodies, suggestedWindow));
  return { rows, suggestedWindow };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAverageAtStart = os.loadavg().map((x) => round(x));
  log(`${quick ? 'quick run' : 'full run'}; load average ${loadAverageAtStart.join(' ')} on ${os.cpus().length} cores`);

  const batch = benchSeries({
    points: SETTINGS.batchPoints,
    period: SETTINGS.seasonalPeriod,
    stepMs: STEP_MS,
    seed: SETTINGS.seed,
    levelShiftFraction: 0.6,
  });

  // Healthy data of one machine: the shape of the batch series without spikes or a level shift.
  const healthy = benchSeries({
    points: Math.max(...SETTINGS.fineTunePoints, SETTINGS.baselinePoints),
    period: SETTINGS.seasonalPeriod,
    stepMs: STEP_MS,
    seed: SETTINGS.healthySeed,
    spikeRate: 0,
  });

  const rows: Row[] = [];
  const has = (section: BenchSection) => args.sections.has(section);
  let engine: Row[] = [];
  let model: Row[] = [];
  if (has('engine')) {
    log('engine section');
    engine = engineRows(batch);
  }
  if (has('model')) {
    log('model section');
    model = await modelRows(healthy);
  }

  let suggestedWindow = 0;
  if (has('http') || has('native')) {
    log('starting the API');
    const server = await startServer();
    try {
      const { target } = server;
      if (has('http')) {
        const vendor = await vendorRows(target, batch);
        suggestedWindow = vendor.suggestedWindow;
        rows.push(...vendor.rows);
      }
      if (has('native')) {
        log('native HTTP section');
        rows.push(...(await nativeRows(target, healthy, batch)));
      }
      target.agent.destroy();
    } finally {
      await server.close();
    }
  }
  if (has('jobs')) {
    log('jobs section');
    rows.push(
      ...(await jobRows(
        { points: SETTINGS.jobPoints, series: SETTINGS.jobSeries, warmupPoints: SETTINGS.jobWarmupPoints, runs: SETTINGS.jobRuns, logLevel: 'warn' },
        log,
      )),
    );
  }
  rows.push(...engine, ...model);

  const loadAverageAtEnd = os.loadavg().map((x) => round(x));
  const durationS = round((Date.now() - startedAt.getTime()) / 1000, 1);
  const markdown = table(rows);
  process.stdout.write(`\n${markdown}\n\n`);
  process.stdout.write(
    `${machine().cpuModel}, ${os.cpus().length} cores, Node ${process.version}; load average ${loadAverageAtStart.join(' ')} ` +
      `at start, ${loadAverageAtEnd.join(' ')} at end; ${durationS} s in all.\n`,
  );

  const results = {
    date: startedAt.toISOString(),
    durationS,
    quick,
    sections: [...args.sections],
    machine: { ...machine(), loadAverageAtStart, loadAverageAtEnd },
    settings: { ...SETTINGS, suggestedWindow },
    series: { batchSpikes: batch.spikes.length, batchLevelShiftAt: batch.levelShiftAt },
    rows,
    markdown,
  };
  if (args.jsonOut !== null) {
    await writeFile(args.jsonOut, `${JSON.stringify(results, null, 2)}\n`);
    log(`wrote ${args.jsonOut}`);
    return;
  }
  // The committed results.json (and the table the docs show from it) is only ever a full run of everything.
  if (quick || args.sections.size < BENCH_SECTIONS.length) {
    log('quick or partial run: bench/results.json left as it was');
    return;
  }
  const out = fileURLToPath(new URL('./results.json', import.meta.url));
  await writeJson(out, runSummary(results));
  const full = fullResultsPath('results.json');
  await writeJson(full, results);
  log(`wrote ${out} (the summary the docs show) and ${full} (every figure)`);
}

async function entry(): Promise<void> {
  if (args.compare !== null) {
    const { compareRevisions } = await import('./compare.js');
    await compareRevisions({
      revision: args.compare,
      rounds: args.rounds,
      quick: args.quick,
      sections: args.sections,
      jobPoints: args.jobPoints,
      jobSeries: args.jobSeries,
      log,
    });
    return;
  }
  await main();
}

entry().catch((err: unknown) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
