// Leave-one-category-out folds for the detectors' tuned constants, on what ships.
//
//   npm run eval:tune                      # both rows' grids; writes eval/tune.json (summary) and eval/out/tune.json
//   npm run eval:tune -- --row shipped:entire --only SHOULDER_QUANTILE --threads 2 --out /tmp/tune.json
//   npm run eval:tune -- --set REFRACTORY_POINTS=150     # the folds around other values
//
// Two rows of the evaluation, each with its grid (`TUNE_ROWS`): row (a), the worker's judge with
// its defaults (`shipped:stream`), for the last-point detector's constants, and row (c),
// entire-series detection per file (`shipped:entire`), for entire/detect's; the constants every
// detector reads (period detection, the model's trend) on both. For each constant and each
// candidate value, the row streams every NAB dev file with that one constant changed and the
// others as shipped. Each setting runs in a thread of its own: the bootstrap sets the value in the
// engine's TUNING table before the engine's modules load, so the engine runs unmodified. Then, for
// each NAB category held out in turn, the value that the other categories score best with (NAB
// standard; a tie keeps the shipped value) is the fold's choice, and the held-out category is
// scored with it and with the shipped value. A constant's verdict:
//
//  - `shipped`: every fold chooses the shipped value;
//  - `moves`: every fold chooses the same other value;
//  - `leans`: the folds disagree, but another value scores at least as well as the shipped one
//    on every fold (the files of three categories) and better on one;
//  - `split`: the folds disagree and no value passes that test.
//
// A value changes only on `moves` (for a shared constant, on both rows), one constant at a time
// (the largest gain first, the grid then run again around the new values): what all four folds
// choose, each without seeing the category it leaves out.
//
// One constant at a time around the shipped values (coordinate-wise): it says whether each value
// sits where folds would put it, not what a joint search would find. `--set` moves the point the
// grids are taken around (every run gets those values; "shipped" then means them).
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { TUNING, type TunedName } from '@adp/detection';
import { nabScores } from './batch.js';
import { engineSourceHash } from './engine.js';
import { writeJson } from './harness.js';
import { nabCategory } from './folds.js';
import { stopOnMissingDataset } from './datasets.js';
import { loadNabCorpus, NAB_PROFILE_NAMES, type NabCorpus } from './nab-data.js';
import { type NabFileDetections, scoreCorpus } from './nab-scorer.js';

/** One constant of a grid and its candidate values (the shipped value among them). */
export interface GridConstant {
  readonly name: TunedName;
  readonly values: readonly number[];
}

/** The last-point detector's own constants (the streaming worker, last/detect, the CLI's stream mode). */
const LAST_POINT_GRID: readonly GridConstant[] = [
  { name: 'LAST_POINT_BAND_FACTOR', values: [1.3, 1.4, 1.45, 1.5, 1.6] },
  { name: 'LAST_POINT_MIN_CYCLES', values: [2, 3] },
  { name: 'SEASONAL_SCALE_RATIO', values: [0.5, 0.6, 0.7, 0.8, 0.9] },
  { name: 'FORECAST_POINTS', values: [21, 31, 41] },
  { name: 'ERROR_LEVEL_POINTS', values: [8, 16, 24] },
  { name: 'CALIBRATION_POINTS', values: [50, 75, 100, 150, 200] },
  { name: 'SIDE_MIN_ERRORS', values: [10, 20, 40] },
  { name: 'REFRACTORY_POINTS', values: [90, 120, 135, 150, 165, 180] },
  { name: 'NEW_EVENT_FACTOR', values: [10, 15, 20, 30, 50, 100] },
  { name: 'NEW_EVENT_RISE_POINTS', values: [1, 2, 3, 5] },
  { name: 'ECHO_POINTS', values: [1, 3, 5] },
  { name: 'SUSTAINED_POINTS', values: [20, 30, 45] },
  { name: 'SUSTAINED_Z', values: [4.5, 5, 5.5, 6] },
  { name: 'SUSTAINED_MIN_STRETCHES', values: [4, 6, 8] },
  { name: 'SUSTAINED_QUIET_SHARE', values: [0.05, 0.1, 0.2] },
  { name: 'NEW_LEVEL_MARGIN', values: [0.15, 0.2, 0.25, 0.3, 0.35] },
  { name: 'NEW_LEVEL_RECENT_SHARE', values: [1 / 3, 0.5, 2 / 3] },
  { name: 'NEW_LEVEL_MIN_POINTS', values: [50, 100, 200] },
  { name: 'MARGINAL_BAND_RATIO', values: [1.25, 1.5, 2] },
  { name: 'FAMILIAR_EDGE_SHARE', values: [0.15, 0.2, 0.25, 0.3] },
  { name: 'ROUTINE_MISS_COUNT', values: [5, 8, 12] },
];

/** Entire-series detection's own constants (entire/detect). */
const ENTIRE_GRID: readonly GridConstant[] = [
  { name: 'SHOULDER_QUANTILE', values: [0.7, 0.75, 0.8, 0.85, 0.9] },
  { name: 'PHASE_POOL_MIN_POINTS', values: [15, 30, 60] },
  { name: 'PHASE_MIN_CYCLES', values: [3, 4, 6] },
  { name: 'EXCURSION_REFERENCE_SHARE', values: [0.05, 0.1, 0.2] },
  { name: 'EXCURSION_ENTRY_POINTS', values: [1, 2, 3] },
  { name: 'EXCURSION_MAX_SHARE', values: [0.025, 0.05, 0.1] },
  { name: 'ROUTINE_EVENT_COUNT', values: [8, 12, 16] },
  { name: 'EVENT_GAP_SHARE', values: [0.0025, 0.005, 0.01] },
];

/** Constants every anomaly detector reads (period detection, the model's trend): checked on both rows. */
const SHARED_GRID: readonly GridConstant[] = [
  { name: 'NON_SEASONAL_TREND_WINDOW', values: [11, 15, 21, 27] },
  { name: 'SEASONAL_TREND_MIN_WINDOW', values: [7, 9, 13] },
  { name: 'SEASONAL_TREND_MAX_WINDOW', values: [19, 25, 31] },
  { name: 'MIN_SEASONAL_FIT', values: [0.15, 0.25, 0.35] },
  { name: 'LONGER_PERIOD_GAIN', values: [0.7, 0.8, 0.9] },
  { name: 'FUNDAMENTAL_TOLERANCE', values: [0.02, 0.05, 0.1] },
  { name: 'MIN_PEAK_ACF', values: [0.05, 0.1, 0.2] },
  { name: 'PEAKS_TESTED', values: [3, 5, 8] },
];

/**
 * The rows the folds tune on, each with its grid: row (a), the worker's judge with its
 * defaults, for the last-point constants, and row (c), entire-series detection per file, for
 * entire/detect's; the shared constants on both (one moves only where both rows' folds move it).
 */
export const TUNE_ROWS: ReadonlyArray<{ readonly row: string; readonly grid: readonly GridConstant[] }> = [
  { row: 'shipped:stream', grid: [...LAST_POINT_GRID, ...SHARED_GRID] },
  { row: 'shipped:entire', grid: [...ENTIRE_GRID, ...SHARED_GRID] },
];

export interface TuneThreadData {
  readonly nabDir: string;
  /** Constants set before the engine loads, by name. */
  readonly overrides: Readonly<Record<string, number>>;
  readonly row: string;
}

export type TuneThreadMessage = { readonly kind: 'done'; readonly flags: readonly Uint8Array[] } | { readonly kind: 'failed'; readonly error: string };

/** One setting's flags per file (corpus order), from a fresh thread. */
export function detectWithOverrides(nabDir: string, overrides: Readonly<Record<string, number>>, row: string): Promise<Uint8Array[]> {
  return new Promise((resolve, reject) => {
    const data: TuneThreadData = { nabDir, overrides, row };
    const worker = new Worker(new URL('./tune-thread-bootstrap.mjs', import.meta.url), { workerData: data });
    let settled = false;
    const finish = (error: Error | undefined, flags?: Uint8Array[]): void => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      if (error === undefined) resolve(flags!);
      else reject(error);
    };
    worker.on('message', (message: TuneThreadMessage) => {
      if (message.kind === 'done') finish(undefined, [...message.flags]);
      else finish(new Error(`tuning thread (${JSON.stringify(overrides)}): ${message.error}`));
    });
    worker.on('error', (error) => finish(error));
    worker.on('exit', (code) => finish(new Error(`tuning thread (${JSON.stringify(overrides)}) exited with code ${code} before answering`)));
  });
}

/** NAB scores by profile name. */
export type ProfileScores = Readonly<Record<string, number>>;

export interface FoldChoice {
  /** The category held out. */
  readonly heldOut: string;
  /** The value the other categories' files score best with (NAB standard; ties keep the shipped value, else the first). */
  readonly chosen: number;
  /** Those files' NAB standard score at each value, in the grid's order. */
  readonly trainStandard: readonly number[];
  /** The held-out category's NAB scores at the chosen and at the shipped value; null without windows. */
  readonly heldOutChosen: ProfileScores | null;
  readonly heldOutShipped: ProfileScores | null;
  /** Its false-positive rows (flags after the probationary rows outside every window) at the chosen and the shipped value. */
  readonly heldOutFalsePositiveRowsChosen: number;
  readonly heldOutFalsePositiveRowsShipped: number;
}

export type Verdict = 'shipped' | 'moves' | 'leans' | 'split';

export interface ConstantOutcome {
  readonly name: string;
  readonly shipped: number;
  readonly values: readonly number[];
  /** All files' NAB scores at each value, in the grid's order. */
  readonly whole: readonly ProfileScores[];
  readonly folds: readonly FoldChoice[];
  readonly verdict: Verdict;
  /** For `moves`, the value every fold chose; for `leans`, the value every fold scores at least as well with (the best of them by the whole set). */
  readonly movesTo?: number;
}

function falsePositiveRows(detections: readonly NabFileDetections[], corpus: Pick<NabCorpus, 'profiles'>): number {
  return scoreCorpus(detections, corpus.profiles[0]!).files.reduce((n, f) => n + f.falsePositiveRows, 0);
}

/**
 * The folds' verdict on one constant from each value's detections (`byValue[i]` for
 * `values[i]`, every file of the corpus, in its order). Categories are held out in name order.
 */
export function foldConstant(
  name: string,
  shipped: number,
  values: readonly number[],
  byValue: readonly (readonly NabFileDetections[])[],
  corpus: Pick<NabCorpus, 'profiles'>,
): ConstantOutcome {
  const at = values.indexOf(shipped);
  if (at < 0) throw new RangeError(`${name}: the grid lacks the shipped value ${shipped}`);
  if (byValue.length !== values.length) throw new RangeError(`${name}: ${byValue.length} runs for ${values.length} values`);
  const standard = corpus.profiles[0]!;
  const files = byValue[at]!;
  const categories = [...new Set(files.map((d) => nabCategory(d.file)))].sort();
  const folds = categories.map((heldOut): FoldChoice => {
    const train = byValue.map((run) => scoreCorpus(run.filter((d) => nabCategory(d.file) !== heldOut), standard).score);
    const top = Math.max(...train);
    const chosenAt = train[at] === top ? at : train.indexOf(top);
    const held = (i: number): NabFileDetections[] => byValue[i]!.filter((d) => nabCategory(d.file) === heldOut);
    const windows = held(at).reduce((n, d) => n + d.windows.length, 0);
    return {
      heldOut,
      chosen: values[chosenAt]!,
      trainStandard: train,
      heldOutChosen: windows === 0 ? null : nabScores(held(chosenAt), corpus.profiles),
      heldOutShipped: windows === 0 ? null : nabScores(held(at), corpus.profiles),
      heldOutFalsePositiveRowsChosen: falsePositiveRows(held(chosenAt), corpus),
      heldOutFalsePositiveRowsShipped: falsePositiveRows(held(at), corpus),
    };
  });
  const whole = byValue.map((run) => nabScores(run, corpus.profiles));
  // Values at least as good as the shipped one on every fold and better on one: the fold rule's candidates.
  const passing = values
    .map((_, i) => i)
    .filter((i) => i !== at && folds.every((f) => f.trainStandard[i]! >= f.trainStandard[at]!) && folds.some((f) => f.trainStandard[i]! > f.trainStandard[at]!));
  const best = passing.sort((x, y) => (whole[y]![standard.name] ?? 0) - (whole[x]![standard.name] ?? 0))[0];
  const first = folds[0]?.chosen;
  const unanimous = first !== undefined && folds.every((f) => f.chosen === first);
  if (unanimous && first === shipped) return { name, shipped, values, whole, folds, verdict: 'shipped' };
  if (unanimous) return { name, shipped, values, whole, folds, verdict: 'moves', movesTo: first };
  if (best !== undefined) return { name, shipped, values, whole, folds, verdict: 'leans', movesTo: values[best]! };
  return { name, shipped, values, whole, folds, verdict: 'split' };
}

const fmt = (x: number): string => (Number.isInteger(x) ? String(x) : String(Number(x.toFixed(3))));

/** A verdict as the table and the engine's TUNING table (`folds`) say it: `shipped`, `split`, or `moves to` / `leans to` a value. */
export function verdictText(o: Pick<ConstantOutcome, 'verdict' | 'movesTo'>): string {
  return o.verdict === 'moves' || o.verdict === 'leans' ? `${o.verdict} to ${fmt(o.movesTo!)}` : o.verdict;
}

/** The outcomes as a markdown table: one line per constant. */
export function tuneTable(outcomes: readonly ConstantOutcome[]): string {
  const folds = outcomes[0]?.folds.map((f) => f.heldOut) ?? [];
  const lines = [
    `| constant | shipped | NAB standard by value | folds' choices (held out: ${folds.join(' / ')}) | held-out standard, chosen vs shipped (mean over categories with windows) | verdict |`,
    '|---|---:|---|---|---:|---|',
  ];
  for (const o of outcomes) {
    const byValue = o.values.map((v, i) => `${fmt(v)}: ${(o.whole[i]!['standard'] ?? Number.NaN).toFixed(1)}`).join(', ');
    const held = o.folds.filter((f) => f.heldOutChosen !== null);
    const mean = (pick: (f: FoldChoice) => ProfileScores | null): number =>
      held.reduce((s, f) => s + (pick(f)?.['standard'] ?? 0), 0) / Math.max(1, held.length);
    const verdict = verdictText(o);
    lines.push(
      `| ${o.name} | ${fmt(o.shipped)} | ${byValue} | ${o.folds.map((f) => fmt(f.chosen)).join(' / ')} | ${mean((f) => f.heldOutChosen).toFixed(1)} vs ${mean((f) => f.heldOutShipped).toFixed(1)} | ${verdict} |`,
    );
  }
  return lines.join('\n');
}

/** `NAME=VALUE,...` as overrides, each name a tuned constant and each value a finite number. */
export function parseSettings(text: string): Partial<Record<TunedName, number>> {
  const out: Partial<Record<TunedName, number>> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    const name = part.slice(0, eq).trim();
    const value = Number(part.slice(eq + 1));
    if (eq < 1 || !(name in TUNING)) throw new RangeError(`--set: ${part} does not name a tuned constant (NAME=VALUE)`);
    if (part.slice(eq + 1).trim() === '' || !Number.isFinite(value)) throw new RangeError(`--set: ${part} has no finite value`);
    out[name as TunedName] = value;
  }
  return out;
}

/** Runs `tasks` with at most `threads` at once, keeping their order. */
async function pooled<T>(tasks: readonly (() => Promise<T>)[], threads: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(threads, tasks.length)) }, lane));
  return results;
}

/** What a run of `eval:tune` does: its rows with their grids, the --set point, threads and paths. */
export interface TuneRun {
  readonly rows: ReadonlyArray<{ readonly row: string; readonly grid: readonly GridConstant[] }>;
  readonly base: Partial<Record<TunedName, number>>;
  readonly threads: number;
  readonly nabDir: string;
  /** The full results (every value's scores, each fold's figures): --out, else eval/out/tune.json (ignored by git). */
  readonly out: string;
  /** The committed summary (eval/tune.json): a run of every grid around the shipped values without --out only. */
  readonly summary: string | undefined;
}

/**
 * The command line of `eval:tune` as a run: `--row` picks rows of TUNE_ROWS, `--only` constants of
 * their grids, `--set` the point the folds are taken around, `--threads` 1 to 64 (default: the
 * cores, at most 4). Anything it does not know is a RangeError naming what it knows.
 */
export function tuneRun(argv: readonly string[], repoRoot: string, cores: number): TuneRun {
  const { values: args } = parseArgs({
    args: [...argv],
    options: {
      row: { type: 'string' },
      only: { type: 'string' },
      set: { type: 'string' },
      threads: { type: 'string' },
      out: { type: 'string' },
      datasets: { type: 'string' },
    },
  });
  const base = parseSettings(args.set ?? '');
  const rowIds = args.row?.split(',').map((s) => s.trim());
  const badRows = (rowIds ?? []).filter((r) => !TUNE_ROWS.some((t) => t.row === r));
  if (badRows.length > 0) throw new RangeError(`--row: ${badRows.join(', ')} (the rows: ${TUNE_ROWS.map((t) => t.row).join(', ')})`);
  const only = args.only?.split(',').map((s) => s.trim());
  const rows = TUNE_ROWS.filter((t) => rowIds === undefined || rowIds.includes(t.row))
    .map((t) => ({ row: t.row, grid: only === undefined ? t.grid : t.grid.filter((g) => only.includes(g.name)) }))
    .filter((t) => t.grid.length > 0 || only === undefined);
  const unknown = (only ?? []).filter((n) => !rows.some((t) => t.grid.some((g) => g.name === n)));
  if (unknown.length > 0) throw new RangeError(`--only: not in the grids: ${unknown.join(', ')}`);
  const threads = args.threads === undefined ? Math.min(4, Math.max(1, cores)) : Number(args.threads);
  if (!(Number.isInteger(threads) && threads >= 1 && threads <= 64)) throw new RangeError(`--threads: ${args.threads} is not an integer from 1 to 64`);
  const nabDir = path.join(args.datasets ?? path.resolve(repoRoot, '..', 'shared', 'datasets'), 'nab_dev');
  const out = args.out ?? path.join(repoRoot, 'eval', 'out', 'tune.json');
  const filtered = args.row !== undefined || args.only !== undefined || args.set !== undefined;
  const summary = args.out === undefined && !filtered ? path.join(repoRoot, 'eval', 'tune.json') : undefined;
  return { rows, base, threads, nabDir, out, summary };
}

async function main(argv: readonly string[]): Promise<void> {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const { rows, base, threads, nabDir, out, summary: summaryPath } = tuneRun(argv, repoRoot, os.cpus().length);
  const corpus = await loadNabCorpus(nabDir);
  const started = performance.now();

  // Per row, one run with every constant as shipped (or as --set) and one per other value.
  const centre = (name: TunedName): number => base[name] ?? TUNING[name].value;
  const valuesOf = (g: GridConstant): number[] => [...new Set([...g.values, centre(g.name)])].sort((x, y) => x - y);
  const settings: Array<{ row: string; name: string | null; value: number }> = [];
  for (const { row, grid } of rows) {
    settings.push({ row, name: null, value: Number.NaN });
    for (const g of grid) for (const value of valuesOf(g)) if (value !== centre(g.name)) settings.push({ row, name: g.name, value });
  }
  let done = 0;
  const flags = await pooled(
    settings.map((s) => async () => {
      const result = await detectWithOverrides(nabDir, s.name === null ? base : { ...base, [s.name]: s.value }, s.row);
      done += 1;
      process.stderr.write(`\r${done} / ${settings.length} settings`);
      return result;
    }),
    threads,
  );
  process.stderr.write('\n');
  const detectionsOf = (runFlags: readonly Uint8Array[]): NabFileDetections[] =>
    corpus.series.map((s, i) => ({ file: s.file, rowCount: s.values.length, windows: s.windows, detections: Array.from(runFlags[i]!, (x) => x === 1) }));
  const runOf = (row: string, name: string | null, value: number): NabFileDetections[] =>
    detectionsOf(flags[settings.findIndex((s) => s.row === row && s.name === name && (name === null || s.value === value))]!);
  const setText = Object.entries(base).map(([n, v]) => `${n}=${fmt(v)}`).join(', ');
  const results = rows.map(({ row, grid }) => {
    const shippedRun = runOf(row, null, Number.NaN);
    const constants = grid.map((g) => {
      const values = valuesOf(g);
      const byValue = values.map((v) => (v === centre(g.name) ? shippedRun : runOf(row, g.name, v)));
      return foldConstant(g.name, centre(g.name), values, byValue, corpus);
    });
    const table = tuneTable(constants);
    const shipped = nabScores(shippedRun, corpus.profiles);
    console.log(`\nrow ${row}, every constant as shipped${setText === '' ? '' : ` but ${setText}`}: ${NAB_PROFILE_NAMES.map((p) => (shipped[p] ?? Number.NaN).toFixed(1)).join(' / ')}`);
    console.log(table);
    return { row, shipped, constants, table };
  });
  const elapsedMs = performance.now() - started;
  console.log(`${settings.length} settings in ${(elapsedMs / 60000).toFixed(1)} min (${threads} threads)`);
  const summary = {
    engine: { sourceSha256: await engineSourceHash(repoRoot) },
    date: new Date().toISOString(),
    elapsedMs: Math.round(elapsedMs),
    set: base,
    rows: results,
  };
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(summary, null, 2)}\n`);
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
  if (summaryPath !== undefined) {
    await writeJson(summaryPath, tuneSummary(summary));
    console.log(`wrote ${path.relative(process.cwd(), summaryPath)}`);
  }
}

/** A run of eval:tune as it writes its full results. */
export interface TuneResults {
  readonly engine: { readonly sourceSha256: string };
  readonly date: string;
  readonly elapsedMs: number;
  readonly set: Partial<Record<string, number>>;
  readonly rows: readonly { readonly row: string; readonly shipped: ProfileScores; readonly constants: readonly ConstantOutcome[]; readonly table: string }[];
}

/**
 * The committed summary of a run (eval/tune.json): per row, the table docs/evaluation.md prints and
 * each constant's values, NAB standard by value, each fold's choice (in the order of
 * `categories`, the category held out) and verdict; the folds' per-category scores stay in the full results.
 */
export function tuneSummary(results: TuneResults): unknown {
  return {
    engine: results.engine,
    date: results.date,
    elapsedMs: results.elapsedMs,
    set: results.set,
    categories: results.rows[0]?.constants[0]?.folds.map((f) => f.heldOut) ?? [],
    rows: results.rows.map((r) => ({
      row: r.row,
      shipped: r.shipped,
      constants: r.constants.map((c) => ({
        name: c.name,
        shipped: c.shipped,
        values: c.values,
        standard: c.whole.map((w) => w['standard'] ?? null),
        chosen: c.folds.map((f) => f.chosen),
        verdict: c.verdict,
        ...(c.movesTo === undefined ? {} : { movesTo: c.movesTo }),
      })),
      table: r.table,
    })),
  };
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch(stopOnMissingDataset).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
