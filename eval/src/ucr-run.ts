// UCR anomaly archive (dev half) through the product, as a user would call it: the API app built
// in process on the embedded default (a temporary DATA_DIR, the packaged learned model), called
// with fastify's inject. Scored with the archive's top-1 / top-3 rule (ucr-scorer.ts).
//
//   npm run eval:ucr                       # every row, writes eval/ucr.json
//   npm run eval:ucr -- --series 2,4,6     # some series; prints, writes nothing without --out
//   npm run eval:ucr -- --limit 20 --out /tmp/ucr.json
//   npm run eval:ucr -- --half A --rows tuned --finetune-mode head   # fine-tune depth on half A
//
// A request holds at most 8,640 points (the API's limit), so a test part is sent in consecutive
// requests, each with the 64 points before it as context (the learned model's window; the first
// request's context is the training part's end): only the new points' answers are ranked. A
// baseline takes at most 8,640 points, so it is made from the training part's last 8,640.
//
// Rows (each ranks the test part's points by one field of the answers):
//  - generic: POST /v1/detect without a machine; `z_scores` (each request's energies against
//    their own mean and spread), and `severity` (the engine's flags; ties by z-score);
//  - generic + baseline statistics: the generic energies of the training part (a detection
//    without a machine) stored as a statistics-only baseline (POST /v1/baseline `energies`), then
//    detection for that machine: `z_scores` against the training part's statistics;
//  - fine-tuned baseline: POST /v1/baseline with the training part, then detection for that
//    machine: `z_scores` (the fine-tuned energies against the held-out statistics),
//    `shape_scores` (each point's subsequence against the baseline's healthy ones), the two added
//    as the verdict adds them, and `severity`.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp, loadConfig, loadPackagedModel, type NativeModel, type NativeModelFactory } from '@adp/api';
import type { FineTuneOptions } from '@adp/model';
import { learnedScores } from '@adp/detection';
import { stopOnMissingDataset } from './datasets.js';
import { writeJson } from './harness.js';
import { listUcrSeries, loadUcrSeries, ucrHalf, type UcrSeries } from './ucr-data.js';
import { isUcrHit, rankedBy, scoreUcrSeries, ucrAccuracy, UCR_EXCLUSION_POINTS, type UcrAccuracy, type UcrSeriesScore } from './ucr-scorer.js';

/** Points one request or one baseline holds: the API's limit. */
export const UCR_REQUEST_POINTS = 8640;
/** Points sent before each request's new points: the learned model's window. */
export const UCR_CONTEXT_POINTS = 64;
const API_KEY = `svc_test_ucr_eval${'0123456789abcdef'}`;

export const UCR_ANCHORS = [
  { name: 'TimeVQVAE-AD (published, whole archive)', top1: 0.708, top3: 0.776 },
  { name: 'Matrix Profile, STUMPY discord (published, whole archive)', top1: 0.512, top3: 0.684 },
] as const;

/** The ranking a row takes from one series' answers; severity rows carry the answers' episodes. */
type RowScores = Record<string, { scores: Float64Array; tiebreak?: Float64Array; episodes?: readonly Episode[] }>;

interface DetectAnswer {
  readonly z_scores: number[];
  readonly shape_scores: number[] | null;
  readonly severity: number[];
  readonly energies: number[] | null;
  readonly engine: string;
  /** Positions in the request (its context included). */
  readonly episodes: readonly { readonly start: number; readonly end: number }[];
}

/** An episode of the answers, in positions of the whole series (0-based). */
interface Episode {
  readonly start: number;
  readonly end: number;
}

async function call(app: FastifyInstance, method: 'POST', url: string, body: unknown): Promise<unknown> {
  const response = await app.inject({
    method,
    url,
    headers: { 'x-service-key': API_KEY, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 300)}`);
  return response.json();
}

function points(values: ArrayLike<number>, from: number, to: number): { value: number }[] {
  const out: { value: number }[] = [];
  for (let index = from; index < to; index++) out.push({ value: values[index] ?? 0 });
  return out;
}

/**
 * Detection over the test part in consecutive requests; each answer's fields land at their
 * positions (NaN in the training part). `machineId` null: the generic model without a baseline.
 */
async function detectTestPart(
  app: FastifyInstance,
  series: UcrSeries,
  machineId: string | null,
): Promise<{ z: Float64Array; shape: Float64Array | null; severity: Float64Array; engine: string; episodes: Episode[] }> {
  const n = series.values.length;
  const episodes: Episode[] = [];
  const z = new Float64Array(n).fill(Number.NaN);
  let shape: Float64Array | null = null;
  const severity = new Float64Array(n).fill(Number.NaN);
  let engine = '';
  for (let from = series.trainEnd; from < n; ) {
    const contextFrom = Math.max(0, from - UCR_CONTEXT_POINTS);
    const to = Math.min(n, contextFrom + UCR_REQUEST_POINTS);
    const answer = (await call(app, 'POST', '/v1/detect', {
      series: points(series.values, contextFrom, to),
      granularity: 'none',
      include_energy: false,
      ...(machineId === null ? {} : { machine_id: machineId }),
    })) as DetectAnswer;
    engine = answer.engine;
    for (let index = from; index < to; index++) {
      z[index] = answer.z_scores[index - contextFrom] ?? Number.NaN;
      if (answer.shape_scores !== null) {
        shape ??= new Float64Array(n).fill(Number.NaN);
        shape[index] = answer.shape_scores[index - contextFrom] ?? Number.NaN;
      }
      severity[index] = answer.severity[index - contextFrom] ?? Number.NaN;
    }
    // The episodes that reach the request's new points (one ending in the context was the last
    // request's).
    for (const episode of answer.episodes) {
      if (contextFrom + episode.end >= from) episodes.push({ start: contextFrom + episode.start, end: contextFrom + episode.end });
    }
    from = to;
  }
  return { z, shape, severity, engine, episodes };
}

/** The training part's last points (a baseline's limit). */
function trainingTail(series: UcrSeries): { from: number; to: number } {
  return { from: Math.max(0, series.trainEnd - UCR_REQUEST_POINTS), to: series.trainEnd };
}

/** Groups of rows, each with its own requests: `generic`, `stats` (generic + baseline statistics), `tuned`. */
export const UCR_ROW_GROUPS = ['generic', 'stats', 'tuned'] as const;
export type UcrRowGroup = (typeof UCR_ROW_GROUPS)[number];

async function seriesRows(app: FastifyInstance, series: UcrSeries, groups: readonly UcrRowGroup[]): Promise<RowScores> {
  const rows: RowScores = {};
  if (groups.includes('generic')) {
    const generic = await detectTestPart(app, series, null);
    rows['generic: z-score'] = { scores: generic.z };
    rows['generic: severity'] = { scores: generic.severity, tiebreak: generic.z, episodes: generic.episodes };
  }
  if (groups.includes('stats')) await statsRows(app, series, rows);
  if (groups.includes('tuned')) await tunedRows(app, series, rows);
  return rows;
}

async function statsRows(app: FastifyInstance, series: UcrSeries, rows: RowScores): Promise<void> {
  const tail = trainingTail(series);
  const training = (await call(app, 'POST', '/v1/detect', {
    series: points(series.values, tail.from, tail.to),
    granularity: 'none',
    include_energy: true,
  })) as DetectAnswer;
  const statsMachine = `ucr-${series.id}-generic`;
  await call(app, 'POST', '/v1/baseline', {
    machine_id: statsMachine,
    // Full windows only: the first ones are partly padding.
    energies: (training.energies ?? []).slice(UCR_CONTEXT_POINTS),
  });
  const withStats = await detectTestPart(app, series, statsMachine);
  rows['generic + baseline statistics: z-score'] = { scores: withStats.z };
  rows['generic + baseline statistics: severity'] = { scores: withStats.severity, tiebreak: withStats.z, episodes: withStats.episodes };
}

async function tunedRows(app: FastifyInstance, series: UcrSeries, rows: RowScores): Promise<void> {
  const tail = trainingTail(series);
  const machine = `ucr-${series.id}`;
  await call(app, 'POST', '/v1/baseline', { machine_id: machine, series: points(series.values, tail.from, tail.to), granularity: 'none' });
  const tuned = await detectTestPart(app, series, machine);
  if (tuned.engine !== 'fine-tuned') throw new Error(`${series.file}: the baselined detection ran the ${tuned.engine} model`);
  rows['fine-tuned baseline: z-score'] = { scores: tuned.z };
  if (tuned.shape === null) throw new Error(`${series.file}: the baselined detection answered no shape scores`);
  const shape = tuned.shape;
  rows['fine-tuned baseline: shape score'] = { scores: shape };
  // The two learned fields together, as the verdict adds them (there with the shape score within).
  const learned = learnedScores(tuned.z, shape);
  rows['fine-tuned baseline: z-score + shape score'] = { scores: learned };
  rows['fine-tuned baseline: severity'] = { scores: tuned.severity, tiebreak: learned, episodes: tuned.episodes };
}

export interface UcrRowResult {
  readonly name: string;
  readonly A: UcrAccuracy;
  readonly B: UcrAccuracy;
  readonly all: UcrAccuracy;
  /** Series numbers whose top-1 location hits. */
  readonly top1Hits: readonly number[];
  /** Severity rows: the share of test-part points flagged (each series holds one labelled anomaly); null for z-score rows. */
  readonly flaggedShare: number | null;
  /** Severity rows' flags and episodes by where they lie; null for z-score rows. */
  readonly flags: UcrFlagCounts | null;
}

/**
 * Where a severity row's flags and episodes lie. Healthy points: those where no location would
 * hit the anomaly (outside its scoring window, ucr-scorer.ts); anomaly points: the labelled ones.
 * A false episode overlaps no scoring window.
 */
export interface UcrFlagCounts {
  readonly healthyFlaggedShare: number;
  readonly anomalyFlaggedShare: number;
  readonly episodes: number;
  readonly falseEpisodes: number;
}

interface FlagTally {
  flagged: number;
  points: number;
  healthy: number;
  healthyFlagged: number;
  anomaly: number;
  anomalyFlagged: number;
  episodes: number;
  falseEpisodes: number;
}

/** Adds one series' severity row to `tally`. */
export function tallyFlags(tally: FlagTally, scores: ArrayLike<number>, episodes: readonly Episode[], series: Pick<UcrSeries, 'trainEnd' | 'begin' | 'end'>): void {
  for (let index = series.trainEnd; index < scores.length; index++) {
    const flagged = (scores[index] ?? 0) > 0;
    const position = index + 1;
    tally.points++;
    if (flagged) tally.flagged++;
    if (position >= series.begin && position <= series.end) {
      tally.anomaly++;
      if (flagged) tally.anomalyFlagged++;
    } else if (!isUcrHit(position, series)) {
      tally.healthy++;
      if (flagged) tally.healthyFlagged++;
    }
  }
  for (const episode of episodes) {
    tally.episodes++;
    let hits = false;
    for (let index = episode.start; index <= episode.end && !hits; index++) hits = isUcrHit(index + 1, series);
    if (!hits) tally.falseEpisodes++;
  }
}

export function emptyTally(): FlagTally {
  return { flagged: 0, points: 0, healthy: 0, healthyFlagged: 0, anomaly: 0, anomalyFlagged: 0, episodes: 0, falseEpisodes: 0 };
}

function countsOf(tally: FlagTally | undefined): UcrFlagCounts | null {
  if (tally === undefined) return null;
  const share = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);
  return {
    healthyFlaggedShare: share(tally.healthyFlagged, tally.healthy),
    anomalyFlaggedShare: share(tally.anomalyFlagged, tally.anomaly),
    episodes: tally.episodes,
    falseEpisodes: tally.falseEpisodes,
  };
}

export interface UcrRunOptions {
  readonly ucrDir: string;
  readonly seriesIds?: readonly number[];
  readonly limit?: number;
  /** How baselines fine-tune (the packaged default when absent): eval-only, to compare training depths. */
  readonly fineTune?: FineTuneOptions;
  /** Which rows (default: all). */
  readonly groups?: readonly UcrRowGroup[];
  /** Only the series of one half. */
  readonly half?: 'A' | 'B';
  readonly progress?: (line: string) => void;
}

/** A model factory whose fine-tunes take `options` (for comparing fine-tune settings through the API). */
function modelWith(options: FineTuneOptions | undefined): NativeModelFactory {
  if (options === undefined) return loadPackagedModel;
  return async (): Promise<NativeModel> => {
    const model = await loadPackagedModel();
    return { ...model, fineTune: (values, given) => model.fineTune(values, { ...given, ...options }) };
  };
}

export async function runUcr(options: UcrRunOptions): Promise<{ rows: UcrRowResult[]; elapsedS: number }> {
  const started = performance.now();
  let infos = await listUcrSeries(options.ucrDir);
  if (options.seriesIds) infos = infos.filter((info) => options.seriesIds?.includes(info.id));
  if (options.half) infos = infos.filter((info) => ucrHalf(info.id) === options.half);
  if (options.limit !== undefined) infos = infos.slice(0, options.limit);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-ucr-'));
  const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', EMBEDDED_WORKER: 'false' });
  const app = await buildApp(config, { model: modelWith(options.fineTune) });
  const scored = new Map<string, UcrSeriesScore[]>();
  // Severity rows: flagged points (severity > 0) and episodes, over the test parts.
  const flagged = new Map<string, FlagTally>();
  try {
    for (const info of infos) {
      const series = await loadUcrSeries(options.ucrDir, info);
      const rows = await seriesRows(app, series, options.groups ?? UCR_ROW_GROUPS);
      const line: string[] = [];
      for (const [name, { scores, tiebreak, episodes }] of Object.entries(rows)) {
        const score = scoreUcrSeries(series.id, rankedBy(scores, tiebreak), series.trainEnd, series);
        scored.set(name, [...(scored.get(name) ?? []), score]);
        if (episodes !== undefined) {
          const tally = flagged.get(name) ?? emptyTally();
          tallyFlags(tally, scores, episodes, series);
          flagged.set(name, tally);
        }
        line.push(`${score.top1 ? 1 : 0}${score.top3 ? 1 : 0}`);
      }
      options.progress?.(`${series.file}: ${line.join(' ')}`);
    }
  } finally {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  const rows = [...scored.entries()].map(([name, scores]) => ({
    name,
    A: ucrAccuracy(scores.filter((score) => ucrHalf(score.id) === 'A')),
    B: ucrAccuracy(scores.filter((score) => ucrHalf(score.id) === 'B')),
    all: ucrAccuracy(scores),
    top1Hits: scores.filter((score) => score.top1).map((score) => score.id),
    flaggedShare: ((tally) => (tally === undefined || tally.points === 0 ? null : tally.flagged / tally.points))(flagged.get(name)),
    flags: countsOf(flagged.get(name)),
  }));
  return { rows, elapsedS: (performance.now() - started) / 1000 };
}

export function ucrTable(rows: readonly UcrRowResult[]): string {
  const f = (x: number): string => x.toFixed(3);
  const lines = [
    '| row | top-1 A | top-1 B | top-1 all | top-3 A | top-3 B | top-3 all | flagged | healthy flagged | anomaly flagged | episodes (false) | series |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((row) => {
      const percent = (share: number | null | undefined): string => (share === null || share === undefined ? '' : `${(share * 100).toFixed(2)} %`);
      const episodes = row.flags === null ? '' : `${row.flags.episodes.toLocaleString('en-US')} (${row.flags.falseEpisodes.toLocaleString('en-US')})`;
      return `| ${row.name} | ${f(row.A.top1)} | ${f(row.B.top1)} | ${f(row.all.top1)} | ${f(row.A.top3)} | ${f(row.B.top3)} | ${f(row.all.top3)} | ${percent(row.flaggedShare)} | ${percent(row.flags?.healthyFlaggedShare)} | ${percent(row.flags?.anomalyFlaggedShare)} | ${episodes} | ${row.all.series} |`;
    }),
    ...UCR_ANCHORS.map((anchor) => `| ${anchor.name} | | | ${f(anchor.top1)} | | | ${f(anchor.top3)} | | | | | 250 |`),
  ];
  return lines.join('\n');
}

/** The command line of `eval:ucr`. */
export interface UcrArgs {
  seriesIds?: number[];
  limit?: number;
  out?: string;
  data?: string;
  mode?: FineTuneOptions['mode'];
  groups?: UcrRowGroup[];
  half?: 'A' | 'B';
}

const FINE_TUNE_MODES = ['ridge', 'head', 'full'] as const;

/**
 * Reads `eval:ucr`'s options (each takes a value): `--series` series numbers, `--limit` a
 * positive count, `--rows` row groups, `--half` A or B, `--finetune-mode`, `--out`, `--data`.
 * Anything else is a RangeError that names what it accepts.
 */
export function parseUcrArgs(argv: readonly string[]): UcrArgs {
  const parsed: UcrArgs = {};
  const list = (flag: string, value: string): string[] => {
    const items = value.split(',').map((item) => item.trim());
    if (items.some((item) => item === '')) throw new RangeError(`${flag}: an empty item in ${JSON.stringify(value)}`);
    return items;
  };
  for (let index = 0; index < argv.length; index += 2) {
    const flag = argv[index]!;
    const value = argv[index + 1];
    if (!['--series', '--limit', '--out', '--data', '--rows', '--half', '--finetune-mode'].includes(flag)) {
      throw new RangeError(`unknown option ${flag} (--series, --limit, --rows, --half, --finetune-mode, --out, --data)`);
    }
    if (value === undefined || value.startsWith('--')) throw new RangeError(`${flag} needs a value`);
    if (flag === '--series') {
      parsed.seriesIds = list(flag, value).map((item) => {
        const id = Number(item);
        if (!Number.isInteger(id) || id < 1) throw new RangeError(`--series: ${item} is not a series number`);
        return id;
      });
    } else if (flag === '--limit') {
      const limit = Number(value);
      if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`--limit: ${value} is not a positive integer`);
      parsed.limit = limit;
    } else if (flag === '--out') parsed.out = value;
    else if (flag === '--data') parsed.data = value;
    else if (flag === '--rows') {
      parsed.groups = list(flag, value).map((group) => {
        if (!(UCR_ROW_GROUPS as readonly string[]).includes(group)) throw new RangeError(`--rows: ${group} is not one of ${UCR_ROW_GROUPS.join(', ')}`);
        return group as UcrRowGroup;
      });
    } else if (flag === '--half') {
      if (value !== 'A' && value !== 'B') throw new RangeError(`--half: ${value} is not A or B`);
      parsed.half = value;
    } else {
      if (!(FINE_TUNE_MODES as readonly string[]).includes(value)) throw new RangeError(`--finetune-mode: ${value} is not one of ${FINE_TUNE_MODES.join(', ')}`);
      parsed.mode = value as (typeof FINE_TUNE_MODES)[number];
    }
  }
  return parsed;
}

async function main(argv: readonly string[]): Promise<void> {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const args = parseUcrArgs(argv);
  const ucrDir = path.resolve(args.data ?? path.join(repoRoot, '..', 'shared', 'datasets', 'ucr_dev'));
  const filtered = args.seriesIds !== undefined || args.limit !== undefined || args.mode !== undefined || args.groups !== undefined || args.half !== undefined;
  const { rows, elapsedS } = await runUcr({
    ucrDir,
    ...(args.seriesIds ? { seriesIds: args.seriesIds } : {}),
    ...(args.limit !== undefined ? { limit: args.limit } : {}),
    ...(args.mode ? { fineTune: { mode: args.mode } } : {}),
    ...(args.groups ? { groups: args.groups } : {}),
    ...(args.half ? { half: args.half } : {}),
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${ucrTable(rows)}\n\nelapsed ${elapsedS.toFixed(1)} s\n`);
  const out = args.out ?? (filtered ? undefined : path.join(repoRoot, 'eval', 'ucr.json'));
  if (out === undefined) {
    process.stdout.write('filtered run: results not written (use --out FILE to keep them)\n');
    return;
  }
  await writeJson(out, {
    date: new Date().toISOString(),
    dataset: 'ucr_dev (100 even-numbered series of the UCR anomaly archive 2021)',
    split: 'A: series number mod 4 = 0 (constants chosen here), B: mod 4 = 2',
    metric: `top-1 / top-3 per ucr_dev/README.md; top-3 locations at least ${UCR_EXCLUSION_POINTS} points apart`,
    requests: `at most ${UCR_REQUEST_POINTS} points, ${UCR_CONTEXT_POINTS} context points before each; baselines from the training part's last ${UCR_REQUEST_POINTS} points`,
    fineTune: args.mode ?? 'default',
    elapsedS: Math.round(elapsedS),
    rows,
    anchors: UCR_ANCHORS,
  });
  process.stdout.write(`wrote ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main(process.argv.slice(2)).catch(stopOnMissingDataset).catch((err: unknown) => {
    process.stderr.write(`${err instanceof RangeError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
