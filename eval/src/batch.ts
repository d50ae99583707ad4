// Entire-series detection on NAB: what a client of entire/detect sees when it sends a whole
// history at once (look-ahead allowed, unlike the streaming evaluation).
//
//   npm run eval:batch            # prints the table and writes eval/batch.json
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
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as engine from '@adp/detection';
import type { DetectOptions, EntireResult, SeriesInput } from '@adp/detection';
import { engineSourceHash } from './engine.js';
import { loadNabCorpus, type NabSeries } from './nab-data.js';
import type { NabWindow } from './nab-scorer.js';

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
  readonly files: readonly FileOutcome[];
}

export function batchRow(name: string, files: readonly FileOutcome[]): BatchRow {
  const sum = (pick: (f: FileOutcome) => number): number => files.reduce((n, f) => n + pick(f), 0);
  return {
    detector: name,
    windowsDetected: sum((f) => f.windowsDetected),
    windows: sum((f) => f.windows),
    falseAlerts: sum((f) => f.falseAlerts),
    falseAlertsNoAnomaly: sum((f) => (f.file.startsWith('artificialNoAnomaly/') ? f.falseAlerts : 0)),
    flaggedShare: sum((f) => f.flagged) / Math.max(1, sum((f) => f.rows)),
    files,
  };
}

export function runBatch(corpus: { series: readonly NabSeries[] }, detector: BatchDetector): BatchRow {
  return batchRow(
    detector.name,
    corpus.series.map((s) => fileOutcome(s.file, requestFlags(s.values, detector), s.windows)),
  );
}

type EntireApi = (input: SeriesInput, opts: DetectOptions) => EntireResult;

/**
 * The engine's defaults, its entire-series components off one at a time, the band with both noise
 * scales off (the MAD alone) as it is and widened, and the default band widened.
 */
export function batchDetectors(detect: EntireApi = engine.detectEntireSeries): BatchDetector[] {
  const flagsOf = (opts: DetectOptions) => (input: SeriesInput) => detect(input, opts).isAnomaly;
  const before = { ...OPTIONS, components: { shoulder: false, phaseScale: false } } as const;
  // The band of `opts` times `factor`: margins are symmetric before the cap widens any.
  const widened = (opts: DetectOptions, factor: number) => (input: SeriesInput) => {
    const r = detect(input, opts);
    return input.values.map((v, i) => Math.abs(v - r.expectedValues[i]!) > factor * Math.min(r.upperMargins[i]!, r.lowerMargins[i]!));
  };
  return [
    { name: 'engine: default', flags: flagsOf(OPTIONS) },
    { name: 'engine: no-phase-scale', flags: flagsOf({ ...OPTIONS, components: { phaseScale: false } }) },
    { name: 'engine: no-shoulder', flags: flagsOf({ ...OPTIONS, components: { shoulder: false } }) },
    { name: 'engine: no-excursion', flags: flagsOf({ ...OPTIONS, components: { excursion: false } }) },
    { name: 'engine: neither scale (engine 0.10.0: the MAD alone)', flags: flagsOf(before) },
    ...[1.5, 2, 3].map((factor) => ({ name: `engine 0.10.0, band x${factor}`, flags: widened(before, factor) })),
    { name: 'engine: default, band x1.5', flags: widened(OPTIONS, 1.5) },
  ];
}

export function batchTable(rows: readonly BatchRow[]): string {
  const lines = [
    '| detector | windows detected | false alerts | of them on no-anomaly files | rows flagged |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.detector} | ${r.windowsDetected} / ${r.windows} | ${r.falseAlerts.toLocaleString('en-US')} | ${r.falseAlertsNoAnomaly} | ${(100 * r.flaggedShare).toFixed(2)} % |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const repoRoot = path.resolve(here, '../..');
  const corpus = await loadNabCorpus(path.resolve(repoRoot, '../shared/datasets/nab_dev'));
  const started = performance.now();
  const rows = batchDetectors().map((detector) => runBatch(corpus, detector));
  const table = batchTable(rows);
  console.log(`\nentire-series detection on NAB's 35 dev files (${corpus.series.length} files)\n\n${table}\n`);
  const out = path.join(repoRoot, 'eval/batch.json');
  const { version } = JSON.parse(await readFile(path.join(repoRoot, 'pipelines/detection/package.json'), 'utf8')) as { version: string };
  await writeFile(
    out,
    `${JSON.stringify(
      {
        engine: { package: '@adp/detection', version, sourceSha256: await engineSourceHash(repoRoot) },
        date: new Date().toISOString().slice(0, 10),
        options: OPTIONS,
        requestPoints: REQUEST_POINTS,
        elapsedMs: Math.round(performance.now() - started),
        rows,
        table,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
}
