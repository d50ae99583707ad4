// SKAB through the product's API, as a user runs the benchmark's protocol: per experiment,
// `POST /v1/baseline` with the first 400 rows as the machine's channels, then `POST /v1/detect`
// on the rest with that machine_id, defaults everywhere (in process, with fastify's inject, on
// the embedded store and the packaged model). Scored over all judged rows together: F1,
// false-alarm rate and missed-alarm rate, plus faults found as episodes and false episodes.
//
//   npm run eval:skab                 # all experiments, writes eval/skab.json
//   npm run eval:skab -- --limit 3    # a quick look, nothing written
//   npm run eval:skab -- --scale-out  # also the stream through Kafka and ClickHouse (KAFKA_BROKERS,
//                                     # CLICKHOUSE_URL set; bash infra/servers.sh starts them)
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { loadWorkerConfig } from '@adp/stream-worker';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { loadConfig, loadPackagedModel, openPlatform } from '@adp/api';
import { writeJson } from './harness.js';
import { listSkabExperiments, loadSkabExperiment, SKAB_TRAIN_ROWS, type SkabExperiment } from './skab-data.js';

const API_KEY = `svc_test_skab_eval${'0123456789abcdef'}`;

/** The benchmark's published leaderboard (outlier detection, its README). */
export const SKAB_ANCHORS = [
  { name: 'Conv-AE', f1: 0.78, far: 13.6, mar: 28.0 },
  { name: 'MSET', f1: 0.78, far: null, mar: null },
  { name: 'T-squared + Q (PCA)', f1: 0.76, far: null, mar: null },
  { name: 'LSTM-AE', f1: 0.74, far: null, mar: null },
  { name: 'T-squared', f1: 0.66, far: null, mar: null },
  { name: 'Isolation forest', f1: 0.29, far: null, mar: null },
] as const;

/** What each row reads from the answers. */
export const SKAB_ROWS = {
  generic: 'no baseline: POST /v1/detect with channels and no machine_id; a row is flagged when any channel flags it',
  channels: "with the baseline, each channel alone: a row is flagged when any channel's own verdict flags it",
  machine: "with the baseline, the machine's verdict (machine.is_anomaly): what the API answers for the machine",
  stream: "the judged rows sent as telemetry (POST /v1/telemetry, one second apart) to the embedded stream worker: the machine's stored rows (GET /v1/machines/{id}/results)",
  'stream, scale-out': 'the same telemetry through Kafka to the stream worker, its rows stored in ClickHouse (the baseline made there too); with --scale-out only',
} as const;
export type SkabRow = keyof typeof SKAB_ROWS;

export interface SkabCounts {
  tp: number;
  fp: number;
  fn: number;
  tn: number;
  /** Faults (labelled runs) overlapped by at least one reported episode. */
  faultsFound: number;
  faults: number;
  /** Reported episodes that overlap no labelled row. */
  falseEpisodes: number;
  episodes: number;
}

export interface SkabScore {
  readonly f1: number;
  /** False-alarm rate, per cent of the judged healthy rows flagged. */
  readonly far: number;
  /** Missed-alarm rate, per cent of the judged faulty rows not flagged. */
  readonly mar: number;
  readonly counts: SkabCounts;
}

/** Runs of consecutive flags, as [start, end] inclusive. */
export function runsOf(flags: readonly boolean[]): [number, number][] {
  const runs: [number, number][] = [];
  flags.forEach((flag, i) => {
    if (!flag) return;
    const last = runs.at(-1);
    if (last && last[1] === i - 1) last[1] = i;
    else runs.push([i, i]);
  });
  return runs;
}

export function emptyCounts(): SkabCounts {
  return { tp: 0, fp: 0, fn: 0, tn: 0, faultsFound: 0, faults: 0, falseEpisodes: 0, episodes: 0 };
}

/** Adds one experiment's judged rows: `flags` and `labels` over the same rows, `episodes` as [start, end] on them. */
export function addExperiment(counts: SkabCounts, flags: readonly boolean[], labels: readonly boolean[], episodes: readonly (readonly [number, number])[]): void {
  labels.forEach((label, i) => {
    const flag = flags[i] === true;
    if (flag && label) counts.tp++;
    else if (flag) counts.fp++;
    else if (label) counts.fn++;
    else counts.tn++;
  });
  const faults = runsOf(labels);
  counts.faults += faults.length;
  counts.faultsFound += faults.filter(([a, b]) => episodes.some(([s, e]) => s <= b && e >= a)).length;
  counts.episodes += episodes.length;
  counts.falseEpisodes += episodes.filter(([s, e]) => !labels.slice(s, e + 1).some(Boolean)).length;
}

export function skabScore(counts: SkabCounts): SkabScore {
  const { tp, fp, fn, tn } = counts;
  const round = (value: number, digits: number): number => Number(value.toFixed(digits));
  return {
    f1: round(tp === 0 ? 0 : (2 * tp) / (2 * tp + fp + fn), 3),
    far: round(fp + tn === 0 ? 0 : (100 * fp) / (fp + tn), 1),
    mar: round(tp + fn === 0 ? 0 : (100 * fn) / (tp + fn), 1),
    counts: { ...counts },
  };
}

interface ChannelAnswer {
  readonly isAnomaly: boolean[];
}

interface MultivariateAnswer {
  readonly channels: Record<string, ChannelAnswer>;
  readonly machine: { readonly is_anomaly: boolean[]; readonly episodes: { start: number; end: number }[] } | null;
}

async function call(app: FastifyInstance, url: string, body?: unknown, expected = 200): Promise<unknown> {
  const response = await app.inject({
    method: body === undefined ? 'GET' : 'POST',
    url,
    headers: { 'x-service-key': API_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  if (response.statusCode !== expected) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 300)}`);
  return response.json();
}

/** The judged rows as telemetry, one second apart from a fixed start, then the machine's stored rows once all are there. */
async function throughTheStream(app: FastifyInstance, machineId: string, experiment: SkabExperiment, from: number, to: number): Promise<{ isAnomaly: boolean[]; active: boolean[] }> {
  const startMs = Date.parse('2026-01-01T00:00:00Z');
  const points = channelPoints(experiment, from, to).map((point, i) => ({ timestamp: new Date(startMs + i * 1000).toISOString(), ...point }));
  await call(app, '/v1/telemetry', { machine_id: machineId, points }, 202);
  const url = `/v1/machines/${machineId}/results?limit=10000`;
  for (let attempt = 0; ; attempt++) {
    // A store that is briefly unreachable answers 503 (retry shortly): the poll does.
    const page = (await call(app, url).catch((err: unknown) => {
      if (err instanceof Error && err.message.startsWith(`${url}: 503 `)) return { results: [] };
      throw err;
    })) as { results: { is_anomaly: boolean; regime: string }[] };
    if (page.results.length === points.length) {
      return { isAnomaly: page.results.map((row) => row.is_anomaly), active: page.results.map((row) => row.regime !== 'HEALTHY') };
    }
    if (attempt > 6000) throw new Error(`${machineId}: ${page.results.length} of ${points.length} stream rows after 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Rows as the API takes them: points with `channels` (granularity none: the rows are judged in order). */
function channelPoints(experiment: SkabExperiment, from: number, to: number): { channels: Record<string, number> }[] {
  const out: { channels: Record<string, number> }[] = [];
  for (let row = from; row < to; row++) {
    out.push({ channels: Object.fromEntries(experiment.channels.map((name, c) => [name, experiment.values[c]![row]!])) });
  }
  return out;
}

function anyChannel(answer: MultivariateAnswer, points: number): boolean[] {
  const channels = Object.values(answer.channels);
  return Array.from({ length: points }, (_, i) => channels.some((channel) => channel.isAnomaly[i] === true));
}

export interface SkabRunOptions {
  readonly skabDir: string;
  readonly limit?: number;
  readonly progress?: (line: string) => void;
  /** Also the stream through Kafka and ClickHouse, on these servers. */
  readonly scaleOut?: { readonly kafkaBrokers: string; readonly clickhouseUrl: string };
}

export interface SkabResult {
  /** Every row but `stream, scale-out`, which is there with `scaleOut` only. */
  readonly rows: Partial<Record<SkabRow, SkabScore>>;
  /** The machine row per folder (valve1, valve2): the spread across the set's two kinds of fault. */
  readonly machineByFolder: Record<string, SkabScore>;
  readonly experiments: number;
  readonly elapsedS: number;
}

export async function runSkab(options: SkabRunOptions): Promise<SkabResult> {
  const started = performance.now();
  let ids = await listSkabExperiments(options.skabDir);
  if (options.limit !== undefined) ids = ids.slice(0, options.limit);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-skab-'));
  const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', EMBEDDED_WORKER: 'true' });
  // The API with its embedded stream worker, as `npm start` opens it.
  const platform = await openPlatform(config, { model: loadPackagedModel, worker: loadWorkerConfig({}) });
  const { app } = platform;
  // The scale-out deployment beside it: its own database and topics, dropped at the end.
  const run = `eval_skab_${Date.now()}`;
  const scaleOutEnv =
    options.scaleOut === undefined
      ? null
      : {
          DATA_DIR: path.join(dataDir, 'scale-out'),
          BOOTSTRAP_API_KEY: API_KEY,
          LOG_LEVEL: 'silent',
          EMBEDDED_WORKER: 'true',
          KAFKA_BROKERS: options.scaleOut.kafkaBrokers,
          CLICKHOUSE_URL: options.scaleOut.clickhouseUrl,
          CLICKHOUSE_DATABASE: run,
          TELEMETRY_TOPIC: `${run}.telemetry`,
          DEAD_LETTER_TOPIC: `${run}.dead`,
          JOBS_TOPIC: `${run}.jobs`,
          WORKER_GROUP_ID: `${run}_workers`,
        };
  const scaleOut = scaleOutEnv === null ? null : await openPlatform(loadConfig(scaleOutEnv), { model: loadPackagedModel, worker: loadWorkerConfig(scaleOutEnv) });
  const totals: Record<SkabRow, SkabCounts> = { generic: emptyCounts(), channels: emptyCounts(), machine: emptyCounts(), stream: emptyCounts(), 'stream, scale-out': emptyCounts() };
  const byFolder = new Map<string, SkabCounts>();
  try {
    for (const id of ids) {
      const experiment = await loadSkabExperiment(options.skabDir, id);
      const rows = experiment.anomaly.length;
      const machineId = `skab-${id.replace('/', '-')}`;
      await call(app, '/v1/baseline', { machine_id: machineId, granularity: 'none', series: channelPoints(experiment, 0, SKAB_TRAIN_ROWS) });
      const judged = channelPoints(experiment, SKAB_TRAIN_ROWS, rows);
      const labels = experiment.anomaly.slice(SKAB_TRAIN_ROWS);
      const generic = (await call(app, '/v1/detect', { granularity: 'none', series: judged })) as MultivariateAnswer;
      const withBaseline = (await call(app, '/v1/detect', { machine_id: machineId, granularity: 'none', series: judged })) as MultivariateAnswer;
      if (withBaseline.machine === null) throw new Error(`${id}: the machine's baseline answered no machine verdict`);
      const genericFlags = anyChannel(generic, judged.length);
      const channelFlags = anyChannel(withBaseline, judged.length);
      addExperiment(totals.generic, genericFlags, labels, runsOf(genericFlags));
      addExperiment(totals.channels, channelFlags, labels, runsOf(channelFlags));
      const episodes = withBaseline.machine.episodes.map(({ start, end }) => [start, end] as const);
      addExperiment(totals.machine, withBaseline.machine.is_anomaly, labels, episodes);
      const streamed = await throughTheStream(app, machineId, experiment, SKAB_TRAIN_ROWS, rows);
      // The stream's episodes: its rows' runs out of HEALTHY (a closed episode's points are ACTIVE).
      addExperiment(totals.stream, streamed.isAnomaly, labels, runsOf(streamed.active));
      if (scaleOut !== null) {
        await call(scaleOut.app, '/v1/baseline', { machine_id: machineId, granularity: 'none', series: channelPoints(experiment, 0, SKAB_TRAIN_ROWS) });
        const far = await throughTheStream(scaleOut.app, machineId, experiment, SKAB_TRAIN_ROWS, rows);
        addExperiment(totals['stream, scale-out'], far.isAnomaly, labels, runsOf(far.active));
      }
      const folder = id.split('/')[0]!;
      const counts = byFolder.get(folder) ?? emptyCounts();
      addExperiment(counts, withBaseline.machine.is_anomaly, labels, episodes);
      byFolder.set(folder, counts);
      const one = emptyCounts();
      addExperiment(one, withBaseline.machine.is_anomaly, labels, episodes);
      const score = skabScore(one);
      options.progress?.(`${id}: machine F1 ${score.f1.toFixed(3)} FAR ${score.far} MAR ${score.mar}, ${episodes.length} episode(s)`);
    }
  } finally {
    await platform.close();
    await scaleOut?.close();
    if (options.scaleOut !== undefined) await removeScaleOut(options.scaleOut, { topicPrefix: `${run}.`, groups: [`${run}_workers`], database: run });
    await rm(dataDir, { recursive: true, force: true });
  }
  return {
    rows: {
      generic: skabScore(totals.generic),
      channels: skabScore(totals.channels),
      machine: skabScore(totals.machine),
      stream: skabScore(totals.stream),
      ...(scaleOut === null ? {} : { 'stream, scale-out': skabScore(totals['stream, scale-out']) }),
    },
    machineByFolder: Object.fromEntries([...byFolder].map(([folder, counts]) => [folder, skabScore(counts)])),
    experiments: ids.length,
    elapsedS: (performance.now() - started) / 1000,
  };
}

/** The markdown table docs/machine-model.md shows (checked against eval/skab.json by a test). */
export function skabTable(result: Pick<SkabResult, 'rows'>): string {
  const lines = ['| row | F1 | false alarms | missed | faults found | false episodes |', '|---|---|---|---|---|---|'];
  for (const row of Object.keys(SKAB_ROWS) as SkabRow[]) {
    const score = result.rows[row];
    if (score === undefined) continue;
    const { f1, far, mar, counts } = score;
    lines.push(`| ${row} | ${f1.toFixed(3)} | ${far.toFixed(1)} % | ${mar.toFixed(1)} % | ${counts.faultsFound} / ${counts.faults} | ${counts.falseEpisodes} of ${counts.episodes} |`);
  }
  return lines.join('\n');
}

export function parseSkabArgs(argv: readonly string[]): { limit?: number; data?: string; out?: string; scaleOut?: true } {
  const parsed: { limit?: number; data?: string; out?: string; scaleOut?: true } = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--scale-out') {
      parsed.scaleOut = true;
    } else if (flag === '--limit' || flag === '--data' || flag === '--out') {
      if (value === undefined) throw new RangeError(`${flag} needs a value`);
      i++;
      if (flag === '--limit') {
        const limit = Number(value);
        if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`--limit takes a positive integer, not '${value}'`);
        parsed.limit = limit;
      } else if (flag === '--data') parsed.data = value;
      else parsed.out = value;
    } else {
      throw new RangeError(`unknown option '${flag ?? ''}' (known: --limit N, --data DIR, --out FILE, --scale-out)`);
    }
  }
  return parsed;
}

async function main(argv: readonly string[]): Promise<void> {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const args = parseSkabArgs(argv);
  const skabDir = path.resolve(args.data ?? path.join(repoRoot, '..', 'shared', 'datasets', 'skab_dev'));
  if ((await listSkabExperiments(skabDir)).length === 0) {
    process.stdout.write(`SKAB development set not found at ${skabDir}: nothing to evaluate (skipped)\n`);
    return;
  }
  let scaleOut: SkabRunOptions['scaleOut'];
  if (args.scaleOut) {
    const kafkaBrokers = process.env['KAFKA_BROKERS'];
    const clickhouseUrl = process.env['CLICKHOUSE_URL'];
    if (!kafkaBrokers || !clickhouseUrl) throw new RangeError('--scale-out needs KAFKA_BROKERS and CLICKHOUSE_URL (bash infra/servers.sh prints them)');
    scaleOut = { kafkaBrokers, clickhouseUrl };
  }
  const result = await runSkab({
    skabDir,
    ...(args.limit !== undefined ? { limit: args.limit } : {}),
    ...(scaleOut !== undefined ? { scaleOut } : {}),
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${skabTable(result)}\n\nelapsed ${result.elapsedS.toFixed(1)} s\n`);
  const out = args.out ?? (args.limit !== undefined ? undefined : path.join(repoRoot, 'eval', 'skab.json'));
  if (out === undefined) {
    process.stdout.write('partial run: results not written (use --out FILE to keep them)\n');
    return;
  }
  await writeJson(out, {
    date: new Date().toISOString(),
    dataset: 'skab_dev (SKAB v0.9: valve1 16 experiments, valve2 4)',
    protocol: `per experiment, POST /v1/baseline with the first ${SKAB_TRAIN_ROWS} rows as channels, POST /v1/detect on the rest with that machine_id; granularity none; defaults everywhere`,
    metric: 'over all judged rows together: F1, false-alarm rate (FAR), missed-alarm rate (MAR); faults found: labelled runs overlapped by an episode',
    rowMeanings: SKAB_ROWS,
    experiments: result.experiments,
    elapsedS: Math.round(result.elapsedS),
    rows: result.rows,
    machineByFolder: result.machineByFolder,
    anchors: SKAB_ANCHORS,
  });
  process.stdout.write(`wrote ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${err instanceof RangeError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
