// Entire-series detection on NAB: what a client of entire/detect sees when it sends a whole
// history at once (look-ahead allowed, unlike the streaming evaluation).
//
//   npm run eval:batch            # prints the table; writes eval/batch.json (summary) and eval/out/batch.json (per file)
//
// Each NAB dev file goes to the engine's entire-series detection as a series without timestamps
// (granularity none: some NAB files repeat or skip timestamps, which the vendor API refuses), with
// the endpoint's default options (sensitivity 95, maxAnomalyRatio 0.25), in requests of at most
// 8,640 rows (the vendor API's limit; a longer file is cut into equal consecutive parts). A run of consecutive flagged
// rows is one alert, as a dashboard or a pager shows it. Reported per row of the table:
//
//  - windows: NAB windows with at least one flagged row (of 55);
//  - false alerts: alerts that touch no window, over all files, and on the five files NAB labels
//    as having no anomaly at all;
//  - flagged: the share of all rows flagged.
//
// NAB's windows mark the anomalies its labellers agreed on, not every unusual row, so a false
// alert here is an alert on something NAB did not label: the figures compare detectors and
// settings on the same files, they are not a precision. Rows: the engine's defaults, its
// components switched off one at a time, and the default band widened by a constant factor
// (what lowering the sensitivity does), so a change can be told apart from a wider band.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as engine from '@adp/detection';
import type { DetectOptions, EntireResult, SeriesInput } from '@adp/detection';
import { stopOnMissingDataset } from './datasets.js';
import { engineSourceHash } from './engine.js';
import { nabCategory } from './folds.js';
import { loadNabCorpus, NAB_PROFILE_NAMES, type NabSeries } from './nab-data.js';
import { scoreCorpus, type NabFileDetections, type NabProfile, type NabWindow } from './nab-scorer.js';

/** Rows one request holds: the vendor API's limit. */
export const REQUEST_POINTS = 8640;
const OPTIONS: DetectOptions = { sensitivity: 95, maxAnomalyRatio: 0.25 };

/** A row of the table: a name and how to judge one request. */
export interface BatchDetector {
  readonly name: string;
  readonly flags: (input: SeriesInput) => readonly boolean[];
}

/** Runs of consecutive flagged rows, as [first, last] row pairs. */
export function alertRuns(flags: readonly boolean[]): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < flags.length; i++) {
    if (!flags[i]) continue;
    const last = runs[runs.length - 1];
    if (last !== undefined && last[1] === i - 1) last[1] = i;
    else runs.push([i, i]);
  }
  return runs;
}

export interface FileOutcome {
  readonly file: string;
  readonly rows: number;
  readonly flagged: number;
  readonly alerts: number;
  readonly falseAlerts: number;
  readonly windows: number;
  readonly windowsDetected: number;
}

/** Counts one file's alerts against its windows. */
export function fileOutcome(file: string, flags: readonly boolean[], windows: readonly NabWindow[]): FileOutcome {
  const runs = alertRuns(flags);
  const touches = (w: NabWindow, [a, b]: [number, number]): boolean => b >= w.startRow && a <= w.endRow;
  return {
    file,
    rows: flags.length,
    flagged: flags.reduce((n, f) => n + (f ? 1 : 0), 0),
    alerts: runs.length,
    falseAlerts: runs.filter((run) => !windows.some((w) => touches(w, run))).length,
    windows: windows.length,
    windowsDetected: windows.filter((w) => runs.some((run) => touches(w, run))).length,
  };
}

/** The file cut into equal consecutive requests of at most REQUEST_POINTS rows, flags joined. */
export function requestFlags(values: readonly number[], detector: BatchDetector): boolean[] {
  const n = values.length;
  const parts = Math.max(1, Math.ceil(n / REQUEST_POINTS));
  const flags: boolean[] = [];
  for (let p = 0; p < parts; p++) {
    const slice = values.slice(Math.floor((p * n) / parts), Math.floor(((p + 1) * n) / parts));
    flags.push(...detector.flags({ timestampsMs: null, values: slice, granularity: 'none', customInterval: 1, imputeMode: 'auto' }));
  }
  return flags;
}

export interface BatchRow {
  readonly detector: string;
  readonly windowsDetected: number;
  readonly windows: number;
  readonly falseAlerts: number;
  /** False alerts on the files NAB labels as having no anomaly (artificialNoAnomaly/). */
  readonly falseAlertsNoAnomaly: number;
  readonly flaggedShare: number;
  /** NAB scores per profile (standard, low FP, low FN), when the corpus has profiles. */
  readonly nab?: Readonly<Record<string, number>>;
  readonly files: readonly FileOutcome[];
}

/**
 * NAB scores of one detector's flags, per profile: the rows scored exactly as the streaming rows
 * are (nab-scorer.ts: the same windows and probationary rows), so the figures compare.
 */
export function nabScores(detections: readonly NabFileDetections[], profiles: readonly NabProfile[]): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const p of profiles) scores[p.name] = scoreCorpus(detections, p).score;
  return scores;
}

export function batchRow(name: string, files: readonly FileOutcome[], nab?: Readonly<Record<string, number>>): BatchRow {
  const sum = (pick: (f: FileOutcome) => number): number => files.reduce((n, f) => n + pick(f), 0);
  return {
    detector: name,
    windowsDetected: sum((f) => f.windowsDetected),
    windows: sum((f) => f.windows),
    falseAlerts: sum((f) => f.falseAlerts),
    falseAlertsNoAnomaly: sum((f) => (f.file.startsWith('artificialNoAnomaly/') ? f.falseAlerts : 0)),
    flaggedShare: sum((f) => f.flagged) / Math.max(1, sum((f) => f.rows)),
    ...(nab === undefined ? {} : { nab }),
    files,
  };
}

/** Each file's flags from one detector. */
export function batchDetections(corpus: { series: readonly NabSeries[] }, detector: BatchDetector): NabFileDetections[] {
  return corpus.series.map((s) => ({ file: s.file, rowCount: s.values.length, windows: s.windows, detections: requestFlags(s.values, detector) }));
}

export function runBatch(corpus: { series: readonly NabSeries[]; profiles?: readonly NabProfile[] }, detector: BatchDetector): BatchRow {
  const detections = batchDetections(corpus, detector);
  return batchRow(
    detector.name,
    detections.map((d) => fileOutcome(d.file, d.detections, d.windows)),
    corpus.profiles === undefined ? undefined : nabScores(detections, corpus.profiles),
  );
}

type EntireApi = (input: SeriesInput, opts: DetectOptions) => EntireResult;

/**
 * The engine's defaults, its entire-series components off one at a time, the event rules off
 * (every point outside the band flagged), the band with both noise scales off (the MAD alone) as
 * it is and widened, and the band without event rules widened.
 */
export function batchDetectors(detect: EntireApi = engine.detectEntireSeries): BatchDetector[] {
  const flagsOf = (opts: DetectOptions) => (input: SeriesInput) => detect(input, opts).isAnomaly;
  const noEvents = { ...OPTIONS, components: { routineEvent: false, eventOnset: false } } as const;
  const before = { ...OPTIONS, components: { ...noEvents.components, shoulder: false, phaseScale: false } } as const;
  // The band of `opts` times `factor`: margins are symmetric before the cap widens any.
  const widened = (opts: DetectOptions, factor: number) => (input: SeriesInput) => {
    const r = detect(input, opts);
    return input.values.map((v, i) => Math.abs(v - r.expectedValues[i]!) > factor * Math.min(r.upperMargins[i]!, r.lowerMargins[i]!));
  };
  return [
    { name: 'engine: default', flags: flagsOf(OPTIONS) },
    { name: 'engine: no-routine-event', flags: flagsOf({ ...OPTIONS, components: { routineEvent: false } }) },
    { name: 'engine: no-event-onset', flags: flagsOf({ ...OPTIONS, components: { eventOnset: false } }) },
    { name: 'engine: neither event rule (every point outside the band)', flags: flagsOf(noEvents) },
    { name: 'engine: no-phase-scale', flags: flagsOf({ ...OPTIONS, components: { phaseScale: false } }) },
    { name: 'engine: no-shoulder', flags: flagsOf({ ...OPTIONS, components: { shoulder: false } }) },
    { name: 'engine: no-excursion', flags: flagsOf({ ...OPTIONS, components: { excursion: false } }) },
    { name: 'engine: neither scale nor event rule (engine 0.10.0: the MAD alone)', flags: flagsOf(before) },
    ...[1.5, 2, 3].map((factor) => ({ name: `engine 0.10.0, band x${factor}`, flags: widened(before, factor) })),
    { name: 'engine: no event rules, band x1.5', flags: widened(noEvents, 1.5) },
  ];
}

/** One cell of the event rules' grid: the constants the folds choose among. */
export interface EventCell {
  readonly routineCount: number;
  readonly gapShare: number;
}

/** The grid the folds search: ROUTINE_EVENT_COUNT × EVENT_GAP_SHARE (Infinity: no routine rule). */
export const FOLD_GRID: readonly EventCell[] = [2, 4, 6, 8, 10, 12, 16, 24, 32, Number.POSITIVE_INFINITY].flatMap((routineCount) =>
  [0, 0.0025, 0.005, 0.01, 0.02, 0.04].map((gapShare) => ({ routineCount, gapShare })),
);

export interface FoldOutcome {
  /** The held-out category. */
  readonly heldOut: string;
  /** The cell the other categories' files chose (their NAB standard score, highest; ties: the earlier cell). */
  readonly chosen: EventCell;
  readonly trainStandard: number;
  /** The held-out category's NAB scores at the chosen cell; null for a category without windows. */
  readonly heldOutNab: Readonly<Record<string, number>> | null;
  /** Flagged rows after the probationary rows outside every window, in the held-out category. */
  readonly heldOutFalsePositiveRows: number;
  /** The held-out category's NAB scores at the shipped cell. */
  readonly heldOutNabShipped: Readonly<Record<string, number>> | null;
  /** The held-out category's NAB scores without the event rules (every point outside the band flagged). */
  readonly heldOutNabWithoutEvents: Readonly<Record<string, number>> | null;
}

/**
 * Leave-one-category-out folds for the event rules' constants: each request's verdicts computed
 * once with the event rules off, then `reportEvents` applied with every cell of `grid`; for each
 * category, the cell the other categories score best with (NAB standard) and the held-out
 * category's scores with it.
 */
export function eventFolds(
  corpus: { series: readonly NabSeries[]; profiles: readonly NabProfile[] },
  shipped: EventCell,
  grid: readonly EventCell[] = FOLD_GRID,
): { folds: FoldOutcome[]; wholeSetChoice: EventCell } {
  const noEvents = { ...OPTIONS, components: { routineEvent: false, eventOnset: false } } as const;
  const requests = corpus.series.map((s) => {
    const parts: { values: number[]; result: EntireResult }[] = [];
    requestFlags(s.values, {
      name: 'verdicts',
      flags: (input) => {
        const result = engine.detectEntireSeries(input, noEvents);
        parts.push({ values: [...input.values], result });
        return result.isAnomaly;
      },
    });
    return parts;
  });
  const cells = [...grid, shipped];
  const detectionsByCell = cells.map((cell) =>
    corpus.series.map((s, f): NabFileDetections => ({
      file: s.file,
      rowCount: s.values.length,
      windows: s.windows,
      detections: requests[f]!.flatMap(({ values, result }) => {
        const verdicts = {
          upperMargins: [...result.upperMargins],
          lowerMargins: [...result.lowerMargins],
          isAnomaly: [...result.isAnomaly],
          isPositiveAnomaly: [...result.isPositiveAnomaly],
          isNegativeAnomaly: [...result.isNegativeAnomaly],
          severity: [...result.severity],
        };
        engine.reportEvents(values, result.expectedValues, verdicts, {
          routineCount: cell.routineCount,
          gapPoints: Math.round(cell.gapShare * values.length),
          report: 'onset',
        });
        return verdicts.isAnomaly;
      }),
    })),
  );
  const standard = corpus.profiles[0]!;
  const best = (keep: (file: string) => boolean): number => {
    let at = 0;
    let top = Number.NEGATIVE_INFINITY;
    grid.forEach((_, c) => {
      const score = scoreCorpus(detectionsByCell[c]!.filter((d) => keep(d.file)), standard).score;
      if (score > top) [top, at] = [score, c];
    });
    return at;
  };
  const categories = [...new Set(corpus.series.map((s) => nabCategory(s.file)))];
  const folds = categories.map((heldOut): FoldOutcome => {
    const inFold = (file: string): boolean => nabCategory(file) === heldOut;
    const c = best((file) => !inFold(file));
    const held = (cell: number) => detectionsByCell[cell]!.filter((d) => inFold(d.file));
    const windows = held(c).reduce((n, d) => n + d.windows.length, 0);
    return {
      heldOut,
      chosen: grid[c]!,
      trainStandard: scoreCorpus(detectionsByCell[c]!.filter((d) => !inFold(d.file)), standard).score,
      heldOutNab: windows === 0 ? null : nabScores(held(c), corpus.profiles),
      heldOutFalsePositiveRows: scoreCorpus(held(c), standard).files.reduce((n, f) => n + f.falsePositiveRows, 0),
      heldOutNabShipped: windows === 0 ? null : nabScores(held(cells.length - 1), corpus.profiles),
      heldOutNabWithoutEvents:
        windows === 0
          ? null
          : nabScores(
              corpus.series.flatMap((s, f): NabFileDetections[] =>
                inFold(s.file)
                  ? [{ file: s.file, rowCount: s.values.length, windows: s.windows, detections: requests[f]!.flatMap((r) => r.result.isAnomaly) }]
                  : [],
              ),
              corpus.profiles,
            ),
    };
  });
  return { folds, wholeSetChoice: grid[best(() => true)]! };
}

/** The folds as a table: each held-out category's choice and scores, then the mean and range over the categories with windows. */
export function foldTable(folds: readonly FoldOutcome[]): string {
  const cell = (c: EventCell): string => `${c.routineCount} / ${c.gapShare}`;
  const nab = (r: Readonly<Record<string, number>> | null): string =>
    r === null ? 'no windows' : NAB_PROFILE_NAMES.map((p) => (r[p] ?? Number.NaN).toFixed(1)).join(' / ');
  const lines = [
    '| held-out category | chosen routine count / gap share | others\' standard | held-out NAB standard / low FP / low FN | held-out false-positive rows | without event rules |',
    '|---|---:|---:|---:|---:|---:|',
    ...folds.map(
      (f) =>
        `| ${f.heldOut} | ${cell(f.chosen)} | ${f.trainStandard.toFixed(1)} | ${nab(f.heldOutNab)} | ${f.heldOutFalsePositiveRows} | ${nab(f.heldOutNabWithoutEvents)} |`,
    ),
  ];
  const spread = (pick: (f: FoldOutcome) => Readonly<Record<string, number>> | null): string => {
    const scored = folds.flatMap((f) => {
      const r = pick(f);
      return r === null ? [] : [r];
    });
    return NAB_PROFILE_NAMES.map((p) => {
      const xs = scored.map((r) => r[p] ?? Number.NaN);
      return `${(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)).toFixed(1)} (${Math.min(...xs).toFixed(1)} to ${Math.max(...xs).toFixed(1)})`;
    }).join(' / ');
  };
  lines.push(`| mean (min to max) of the held-out categories with windows | | | ${spread((f) => f.heldOutNab)} | | ${spread((f) => f.heldOutNabWithoutEvents)} |`);
  return lines.join('\n');
}

export function batchTable(rows: readonly BatchRow[]): string {
  const lines = [
    '| detector | NAB standard / low FP / low FN | windows detected | false alerts | of them on no-anomaly files | rows flagged |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const nab = r.nab === undefined ? '' : NAB_PROFILE_NAMES.map((p) => (r.nab?.[p] ?? Number.NaN).toFixed(1)).join(' / ');
    lines.push(
      `| ${r.detector} | ${nab} | ${r.windowsDetected} / ${r.windows} | ${r.falseAlerts.toLocaleString('en-US')} | ${r.falseAlertsNoAnomaly} | ${(100 * r.flaggedShare).toFixed(2)} % |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const repoRoot = path.resolve(here, '../..');
  const corpus = await loadNabCorpus(path.resolve(repoRoot, '../shared/datasets/nab_dev')).catch(stopOnMissingDataset);
  const started = performance.now();
  const rows = batchDetectors().map((detector) => runBatch(corpus, detector));
  const table = batchTable(rows);
  console.log(`\nentire-series detection on NAB's 35 dev files (${corpus.series.length} files)\n\n${table}\n`);
  const shipped = { routineCount: engine.ROUTINE_EVENT_COUNT, gapShare: engine.EVENT_GAP_SHARE };
  const { folds, wholeSetChoice } = eventFolds(corpus, shipped);
  const folded = foldTable(folds);
  console.log(
    `leave-one-category-out folds for ROUTINE_EVENT_COUNT / EVENT_GAP_SHARE (shipped ${shipped.routineCount} / ${shipped.gapShare}; ` +
      `the whole set chooses ${wholeSetChoice.routineCount} / ${wholeSetChoice.gapShare})\n\n${folded}\n`,
  );
  const out = path.join(repoRoot, 'eval/batch.json');
  const full = path.join(repoRoot, 'eval/out/batch.json');
  const { version } = JSON.parse(await readFile(path.join(repoRoot, 'pipelines/detection/package.json'), 'utf8')) as { version: string };
  const run = (withFiles: boolean): string =>
    `${JSON.stringify(
      {
        engine: { package: '@adp/detection', version, sourceSha256: engineHash },
        date: new Date().toISOString().slice(0, 10),
        options: OPTIONS,
        requestPoints: REQUEST_POINTS,
        elapsedMs: Math.round(performance.now() - started),
        rows: withFiles ? rows : rows.map(({ files: _files, ...row }) => row),
        folds: { shipped, wholeSetChoice, grid: { routineCount: [...new Set(FOLD_GRID.map((c) => c.routineCount))].map(String), gapShare: [...new Set(FOLD_GRID.map((c) => c.gapShare))] }, folds },
        table,
        foldTable: folded,
      },
      null,
      1,
    )}\n`;
  const engineHash = await engineSourceHash(repoRoot);
  // The committed summary holds what docs/evaluation.md prints (its tables, checked by a test); the
  // per-file counts go to eval/out/, which git ignores.
  await writeFile(out, run(false));
  await mkdir(path.dirname(full), { recursive: true });
  await writeFile(full, run(true));
  console.log(`wrote ${path.relative(process.cwd(), out)} and ${path.relative(process.cwd(), full)}`);
}
