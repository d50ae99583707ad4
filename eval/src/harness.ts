// The evaluation as a function of its configuration: loads the benchmarks, runs the selected
// detectors, builds the table and the results object. run.ts only wires it to the process.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { STREAM_DEFAULTS } from '@adp/detection';
import { ANCHORS } from './anchors.js';
import type { EvalConfig } from './config.js';
import type { ChangePointDetector, StreamingDetector } from './detectors.js';
import type { EnergyTracesByFit } from './energy-run.js';
import {
  engineChangePointDetector,
  engineSourceHash,
  engineStreamingDetector,
  type LoadedEngine,
  loadEngine,
  HARNESS_STREAM,
  SHIPPED_STREAM,
} from './engine.js';
import { type FoldSummary, foldCell, leaveOneCategoryOut } from './folds.js';
import { loadNabCorpus, NAB_PROFILE_NAMES, type NabCorpus } from './nab-data.js';
import type { NabProfile } from './nab-scorer.js';
import { type NabDetectorResult, runNab, scoreNab } from './nab-run.js';
import { detectVariantsInThreads, type NabThreadRequest, runKey } from './nab-threads.js';
import { type CommittedPeerNab, committedPeerNab } from './peers.js';
import { nullDetector, zeroChangePoints } from './reference/null.js';
import { spectralResidual, SPECTRAL_RESIDUAL_DEFAULTS } from './reference/spectral-residual.js';
import { ROLLING_ZSCORE_DEFAULTS, rollingZScore } from './reference/zscore.js';
import { runSweep, SWEEP_ROW, type SweepPoint, sweepChartPng, sweepPoint } from './sweep.js';
import { HEADLINE_ROWS, ROBUSTNESS_WINDOWS, type RobustnessWindow, SHIPPED_ROWS, shippedDetector, VENDOR_WINDOW_ROW, windowRowId } from './shipped.js';
import { markdownTable, type TableRow } from './table.js';
import { loadTcpdSeries, TCPD_SERIES } from './tcpd-data.js';
import { runTcpd, type TcpdDetectorResult } from './tcpd-run.js';
import { ENGINE_VARIANTS, type EngineVariant } from './variants.js';

export interface Io {
  /** Progress and diagnostics (stderr). */
  readonly progress: (line: string) => void;
  /** The table and the summary (stdout). */
  readonly out: (text: string) => void;
}

/** One row group of the run: what ran, under which table name, and its results. */
interface Entry {
  readonly id: string;
  readonly name: string;
  nab?: NabDetectorResult;
  /** Leave-one-category-out folds of the NAB figures, per profile. */
  folds?: Readonly<Record<string, FoldSummary>>;
  tcpd?: TcpdDetectorResult;
  note?: string;
}

/** The NAB result's leave-one-category-out folds under every profile. */
export function nabFolds(nab: NabDetectorResult, profiles: readonly NabProfile[]): Record<string, FoldSummary> {
  const folds: Record<string, FoldSummary> = {};
  for (const p of profiles) folds[p.name] = leaveOneCategoryOut(nab.files, p);
  return folds;
}

/**
 * Rough cost of a NAB pass in one core's seconds on the 2-core machine, to start the slowest
 * first: the last/detect client calls the engine afresh for every row.
 */
function runCost(run: NabThreadRequest): number {
  if (!('row' in run)) return run.variant === 'no-suggested-span' ? 60 : 30;
  return { 'shipped:last-client': 120, 'window:720': 45, 'window:1441': 40, 'window:8640': 60, 'shipped:entire': 5 }[run.row] ?? 15;
}

/** NAB standard of a last/detect client per window of the robustness row, with the spread. */
export interface WindowRobustness {
  readonly windows: readonly { readonly window: RobustnessWindow; readonly id: string; readonly standard: number; readonly folds?: FoldSummary }[];
  /** Largest minus smallest standard score over the windows. */
  readonly spread: number;
  /** The vendor's suggested window (4 periods + 1), shown beside the windows, not in the spread. */
  readonly vendor?: { readonly standard: number; readonly folds?: FoldSummary };
}

/** The robustness row from the entries, when every window ran. */
export function windowRobustness(entries: readonly { id: string; nab?: NabDetectorResult; folds?: Readonly<Record<string, FoldSummary>> }[]): WindowRobustness | undefined {
  /** A row's NAB standard score and its folds, when it ran. */
  const standardOf = (id: string): { standard: number; folds?: FoldSummary } | undefined => {
    const entry = entries.find((e) => e.id === id);
    const standard = entry?.nab?.profiles['standard']?.score;
    if (entry === undefined || standard === undefined) return undefined;
    const folds = entry.folds?.['standard'];
    return { standard, ...(folds === undefined ? {} : { folds }) };
  };
  const windows = ROBUSTNESS_WINDOWS.map((window) => {
    const figures = standardOf(windowRowId(window));
    return figures === undefined ? undefined : { window, id: windowRowId(window), ...figures };
  });
  if (windows.some((w) => w === undefined)) return undefined;
  const present = windows as NonNullable<(typeof windows)[number]>[];
  const scores = present.map((w) => w.standard);
  const vendor = standardOf(VENDOR_WINDOW_ROW.id);
  return { windows: present, spread: Math.max(...scores) - Math.min(...scores), ...(vendor === undefined ? {} : { vendor }) };
}

export function robustnessTable(r: WindowRobustness): string {
  const vendor = r.vendor === undefined ? [] : [r.vendor];
  const header = [
    'last/detect client, NAB standard',
    ...r.windows.map((w) => (w.window === 'suggested' ? 'window suggested: row (b)' : `fixed window ${w.window}`)),
    'spread',
    ...vendor.map(() => "vendor's window (4 periods + 1; not in the spread)"),
  ];
  const cells = ['by window', ...r.windows.map((w) => w.standard.toFixed(1)), r.spread.toFixed(1), ...vendor.map((v) => v.standard.toFixed(1))];
  const folds = ['folds: mean (min–max)', ...r.windows.map((w) => foldCell(w.folds)), '', ...vendor.map((v) => foldCell(v.folds))];
  const line = (c: readonly string[]): string => `| ${c.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? '---' : '---:'))), line(cells), line(folds)].join('\n');
}

export interface EvalResults {
  readonly engine: {
    readonly package: '@adp/detection';
    readonly version: string;
    /** SHA-256 of pipelines/detection/src at the start of the run. */
    readonly sourceSha256: string;
    readonly status: string;
  };
  readonly date: string;
  readonly elapsedMs: number;
  readonly machine: { readonly node: string; readonly cpus: number };
  readonly settings: unknown;
  readonly nab: unknown;
  readonly tcpd: unknown;
  readonly anchors: typeof ANCHORS;
  /** The peers' NAB figures from the committed eval/peers.json, as the table prints them. */
  readonly peers: readonly CommittedPeerNab[];
  readonly table: string;
  /** The ablation's figures (--ablation), also written to eval/ablation.json; null without it. */
  readonly ablation: AblationSummary | null;
}

/** The ablation in short (eval/ablation.json): each variant's NAB and TCPD figures. */
export interface AblationSummary {
  readonly engine: { readonly package: '@adp/detection'; readonly version: string; readonly sourceSha256: string };
  readonly date: string;
  readonly base: string;
  readonly variants: readonly {
    readonly variant: string;
    readonly nab: Readonly<Record<string, number>> | null;
    readonly tcpd: { readonly f1: number; readonly cover: number } | null;
  }[];
}

function selectedVariants(config: EvalConfig): EngineVariant[] {
  if (config.variants === undefined) {
    return config.ablation ? [...ENGINE_VARIANTS] : ENGINE_VARIANTS.filter((v) => v.name === 'default');
  }
  const unknown = config.variants.filter((v) => !ENGINE_VARIANTS.some((e) => e.name === v));
  if (unknown.length > 0) throw new RangeError(`unknown variant(s): ${unknown.join(', ')}`);
  return ENGINE_VARIANTS.filter((v) => config.variants?.includes(v.name));
}

/** The default variant is the harness window's row (not shipped); the others its ablation. */
function variantRowName(v: EngineVariant): string {
  return v.name === 'default' ? HARNESS_ROW_NAME : `engine: ${v.name}`;
}

/** The table's label of the harness window (the default variant): a reference, not what ships. */
export const HARNESS_ROW_NAME = 'harness window (not shipped): first 15 % of each file';

function engineStatus(engine: LoadedEngine): string {
  return engine.kind === 'loaded' ? 'loaded' : `not ready: missing ${engine.missing.join(', ')}`;
}

function fileProgress(io: Io, detector: string): (file: string, ms: number, error: string | undefined) => void {
  return (file, ms, error) =>
    io.progress(`  ${detector} · ${file} · ${(ms / 1000).toFixed(1)} s${error === undefined ? '' : ` · ERROR ${error}`}`);
}

export async function runEvaluation(config: EvalConfig, io: Io): Promise<EvalResults> {
  const started = performance.now();
  const sourceSha256 = await engineSourceHash(config.repoRoot);
  const engine = await loadEngine(config.repoRoot);
  if (engine.kind === 'missing') io.progress(`engine ${engineStatus(engine)}; running the rest`);
  const variants = config.detectors.includes('engine') ? selectedVariants(config) : [];
  const shippedRows = config.detectors.includes('engine')
    ? SHIPPED_ROWS.filter((r) => config.rows === undefined || config.rows.includes(r.id))
    : [];
  const notReady = engine.kind === 'missing' ? { note: 'engine not ready' } : {};
  const entries: Entry[] = [];
  for (const r of shippedRows) entries.push({ id: r.id, name: r.name, ...notReady });
  // The changepoint endpoint's defaults on TCPD (no streaming: one row, whatever the window).
  if (config.detectors.includes('engine') && config.benchmarks.includes('tcpd')) {
    entries.push({ id: 'changepoint', name: 'changepoint/detect, defaults', ...notReady });
  }
  for (const v of variants) entries.push({ id: `engine:${v.name}`, name: variantRowName(v), ...notReady });
  if (config.detectors.includes('zscore')) entries.push({ id: 'zscore', name: 'rolling z-score (reference)' });
  if (config.detectors.includes('sr')) entries.push({ id: 'sr', name: 'spectral residual (reference)' });
  if (config.detectors.includes('null')) entries.push({ id: 'null', name: 'null / zero (never fires)' });
  // Opt-in (--energy): the learned model's rows, NAB only; the model package loads only then.
  const energyModule = config.energy.enabled ? await import('./energy-run.js') : undefined;
  const energy = energyModule?.energyRows(config.energy) ?? [];
  for (const row of energy) entries.push({ id: row.id, name: row.name });
  // With energy rows, the engine's default pass runs once and serves its own row and the combined rows.
  let engineDefault: { detector: StreamingDetector; planOf: () => unknown } | undefined;
  const engineDefaultRun = (): { detector: StreamingDetector; planOf: () => unknown } | undefined => {
    if (engine.kind !== 'loaded') return undefined;
    if (engineDefault === undefined) {
      const variant = ENGINE_VARIANTS.find((v) => v.name === 'default') as EngineVariant;
      const detector = engineStreamingDetector(engine.api, variant, HARNESS_STREAM);
      engineDefault = {
        detector: energyModule === undefined ? detector : energyModule.memoisedDetector(detector),
        planOf: () => detector.lastPlan(),
      };
    }
    return engineDefault;
  };

  const streamingFor = (entry: Entry): { detector: StreamingDetector; planOf?: () => unknown } | undefined => {
    if (shippedRows.some((r) => r.id === entry.id)) {
      return engine.kind === 'loaded' ? shippedDetector(engine.api, entry.id) : undefined;
    }
    if (entry.id.startsWith('engine:')) {
      if (engine.kind !== 'loaded') return undefined;
      const variant = variants.find((v) => `engine:${v.name}` === entry.id) as EngineVariant;
      if (variant.name === 'default') return engineDefaultRun();
      const detector = engineStreamingDetector(engine.api, variant, HARNESS_STREAM);
      return { detector, planOf: () => detector.lastPlan() };
    }
    if (entry.id === 'zscore') return { detector: rollingZScore() };
    if (entry.id === 'sr') return { detector: spectralResidual() };
    if (entry.id === 'null') return { detector: nullDetector() };
    const energyRow = energy.find((r) => r.id === entry.id);
    if (energyRow !== undefined && energyTraces !== undefined) {
      const detector = energyRow.detector(energyTraces, engineDefaultRun()?.detector);
      return detector === undefined ? undefined : { detector, planOf: () => detector.lastPlan() };
    }
    return undefined;
  };
  const changePointFor = (entry: Entry): ChangePointDetector | undefined => {
    if (entry.id === 'changepoint') {
      if (engine.kind !== 'loaded') return undefined;
      return engineChangePointDetector(engine.api, ENGINE_VARIANTS.find((v) => v.name === 'default') as EngineVariant);
    }
    // The changepoint variants are the ablation's, beside the default variant's figures.
    if (entry.id.startsWith('engine:') && variants.length > 1) {
      if (engine.kind !== 'loaded') return undefined;
      return engineChangePointDetector(engine.api, variants.find((v) => `engine:${v.name}` === entry.id) as EngineVariant);
    }
    return entry.id === 'null' ? zeroChangePoints() : undefined;
  };

  let nabCorpus: NabCorpus | undefined;
  let energyTraces: EnergyTracesByFit | undefined;
  if (config.benchmarks.includes('nab')) {
    nabCorpus = await loadNabCorpus(path.join(config.datasetsDir, 'nab_dev'));
    if (energyModule !== undefined && energy.length > 0) {
      energyTraces = await energyModule.prepareEnergy(nabCorpus, config.energy.fits, io.progress);
    }
    // The shipped rows and the engine variants in threads (the energy rows reuse the default
    // variant's in-process pass). The slowest runs go first, so the threads finish together.
    const runs: NabThreadRequest[] = [
      ...shippedRows.map((r) => ({ row: r.id })),
      ...(energyModule === undefined ? variants.map((v) => ({ variant: v.name })) : []),
    ].sort((a, b) => runCost(b) - runCost(a));
    const threaded =
      engine.kind === 'loaded' && config.threads > 1 && runs.length > 1
        ? await detectVariantsInThreads({
            repoRoot: config.repoRoot,
            nabDir: path.join(config.datasetsDir, 'nab_dev'),
            corpus: nabCorpus,
            runs,
            threads: config.threads,
            onFile: (run, file, ms, error) => fileProgress(io, run)(file, ms, error),
          })
        : undefined;
    for (const entry of entries) {
      const detected = threaded?.get(entry.id.startsWith('engine:') ? entry.id.slice('engine:'.length) : entry.id);
      if (detected !== undefined) {
        entry.nab = scoreNab(nabCorpus, entry.name, detected);
        io.progress(`NAB · ${entry.name} · ${(entry.nab.elapsedMs / 1000).toFixed(1)} s of one thread`);
        continue;
      }
      const run = streamingFor(entry);
      if (run === undefined) continue;
      io.progress(`NAB · ${entry.name}`);
      entry.nab = runNab(nabCorpus, run.detector, {
        ...(run.planOf === undefined ? {} : { planOf: run.planOf }),
        ...(entry.id.includes(':') ? { onFile: fileProgress(io, entry.name) } : {}),
      });
      io.progress(`NAB · ${entry.name} · ${(entry.nab.elapsedMs / 1000).toFixed(1)} s`);
    }
    for (const entry of entries) {
      if (entry.nab !== undefined) entry.folds = nabFolds(entry.nab, nabCorpus.profiles);
    }
  }
  if (config.benchmarks.includes('tcpd')) {
    const series = await loadTcpdSeries(path.join(config.datasetsDir, 'tcpd'));
    for (const entry of entries) {
      const detector = changePointFor(entry);
      if (detector === undefined) continue;
      io.progress(`TCPD · ${entry.name}`);
      entry.tcpd = runTcpd(series, detector);
      for (const s of entry.tcpd.series) if (s.error !== undefined) io.progress(`  ${s.series}: ERROR ${s.error}`);
    }
  }

  const rows: TableRow[] = entries.map((e) => {
    const nab = e.nab;
    const notes = [
      e.note,
      nab !== undefined && nab.errors > 0 ? `${nab.errors} NAB file(s) failed` : undefined,
      e.tcpd !== undefined && e.tcpd.errors > 0 ? `${e.tcpd.errors} TCPD series failed (scored 0)` : undefined,
    ].filter((n): n is string => n !== undefined);
    return {
      name: e.name,
      nab:
        nab === undefined
          ? undefined
          : (NAB_PROFILE_NAMES.map((p) => nab.profiles[p]?.score ?? Number.NaN) as [number, number, number]),
      folds: e.folds === undefined ? undefined : foldCell(e.folds.standard),
      tcpdF1: e.tcpd?.f1,
      tcpdCover: e.tcpd?.cover,
      note: notes.join('; '),
    };
  });
  // The peers' NAB figures of the last `npm run eval:peers` (they need Python; not run here).
  const peers = nabCorpus === undefined ? [] : await committedPeerNab(path.join(config.repoRoot, 'eval/peers.json'));
  for (const p of peers) rows.push({ name: p.name, nab: p.nab, note: `peer: npm run eval:peers, ${p.date} (eval/peers.json)` });
  for (const a of ANCHORS) rows.push({ name: a.name, nab: a.nab, tcpdF1: a.tcpdF1, tcpdCover: a.tcpdCover, note: 'anchor' });
  const robustness = windowRobustness(entries);
  const table = [
    markdownTable(rows),
    ...(robustness === undefined ? [] : ['', robustnessTable(robustness)]),
  ].join('\n');
  const elapsedMs = Math.round(performance.now() - started);

  return {
    engine: { package: '@adp/detection', version: engine.version, sourceSha256, status: engineStatus(engine) },
    date: new Date().toISOString(),
    elapsedMs,
    machine: { node: process.version, cpus: os.cpus().length },
    settings: {
      nab: {
        shipped: { stream: SHIPPED_STREAM, defaults: STREAM_DEFAULTS, rows: SHIPPED_ROWS },
        harnessWindow: { stream: HARNESS_STREAM, learningPrefix: 'NAB probationary rows: min(floor(0.15 N), 750)' },
        granularity: 'none (each CSV row is one point)',
        detections: "the engine's isAnomaly flags; no threshold sweep",
        folds: "leave one category (folder of nab_dev/data) out: normalised NAB score over the other categories' files",
      },
      tcpd: {
        granularity: 'none',
        options: 'changepoint endpoint defaults (no options passed)',
        missingValues: 'linear interpolation between observed neighbours, nearest value at the ends',
        failures: "a failed series scores 0 (TCPDBench's rule)",
      },
      variants,
      ...(config.energy.enabled ? { energy: { ...config.energy, rows: energy.map((r) => r.settings) } } : {}),
      reference: { zscore: ROLLING_ZSCORE_DEFAULTS, spectralResidual: SPECTRAL_RESIDUAL_DEFAULTS },
    },
    nab:
      nabCorpus === undefined
        ? null
        : {
            files: nabCorpus.series.length,
            windows: nabCorpus.series.reduce((n, s) => n + s.windows.length, 0),
            profiles: nabCorpus.profiles,
            headline: HEADLINE_ROWS.flatMap((r) => {
              const e = entries.find((x) => x.id === r.id);
              if (e?.nab === undefined) return [];
              const scores = Object.fromEntries(NAB_PROFILE_NAMES.map((p) => [p, e.nab!.profiles[p]?.score ?? null]));
              const folds = Object.fromEntries(
                NAB_PROFILE_NAMES.map((p) => [p, e.folds?.[p] === undefined ? null : { mean: e.folds[p].mean, min: e.folds[p].min, max: e.folds[p].max }]),
              );
              return [{ id: r.id, name: r.name, scores, folds }];
            }),
            windowRobustness: robustness ?? null,
            detectors: entries.flatMap((e) =>
              e.nab === undefined ? [] : [{ id: e.id, name: e.name, ...e.nab, folds: e.folds ?? null }],
            ),
          },
    tcpd: config.benchmarks.includes('tcpd')
      ? {
          series: TCPD_SERIES.length,
          detectors: entries.flatMap((e) => (e.tcpd === undefined ? [] : [{ id: e.id, name: e.name, ...e.tcpd }])),
        }
      : null,
    anchors: ANCHORS,
    peers,
    table,
    ablation:
      variants.length > 1
        ? {
            engine: { package: '@adp/detection', version: engine.version, sourceSha256 },
            date: new Date().toISOString(),
            base: 'harness window (first 15 % of each file, not shipped)',
            variants: variants.map((v) => {
              const e = entries.find((x) => x.id === `engine:${v.name}`);
              const nab = e?.nab;
              return {
                variant: v.name,
                nab: nab === undefined ? null : Object.fromEntries(NAB_PROFILE_NAMES.map((p) => [p, nab.profiles[p]?.score ?? Number.NaN])),
                tcpd: e?.tcpd === undefined ? null : { f1: e.tcpd.f1, cover: e.tcpd.cover },
              };
            }),
          }
        : null,
  };
}

export async function writeJson(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  // Short number arrays (change points) on one line keep the committed file readable.
  const text = JSON.stringify(value, null, 2).replace(/\[\s+([-\d.,\s]*?)\s+\]/g, (_m, inner: string) => `[${inner.split(/,\s*/).join(', ')}]`);
  await writeFile(file, `${text}\n`);
}

export async function runSweepCommand(config: EvalConfig, io: Io): Promise<SweepPoint[]> {
  const sourceSha256 = await engineSourceHash(config.repoRoot);
  const engine = await loadEngine(config.repoRoot);
  if (engine.kind !== 'loaded') throw new Error(`the sweep needs the engine, which is ${engineStatus(engine)}`);
  const corpus = await loadNabCorpus(path.join(config.datasetsDir, 'nab_dev'));
  const fmt = (v: number | null): string => (v === null ? '—' : v.toFixed(3));
  const report = (p: SweepPoint): void =>
    io.progress(
      `sensitivity ${p.sensitivity}: precision ${fmt(p.precision)} recall ${fmt(p.recall)} · ${(p.elapsedMs / 1000).toFixed(1)} s`,
    );
  let points: SweepPoint[];
  if (config.threads > 1 && config.sweepSensitivities.length > 1) {
    // One NAB pass per sensitivity, spread over threads like the evaluation's rows.
    const runs = config.sweepSensitivities.map((sensitivity) => ({ row: SWEEP_ROW, sensitivity }));
    const detected = await detectVariantsInThreads({
      repoRoot: config.repoRoot,
      nabDir: path.join(config.datasetsDir, 'nab_dev'),
      corpus,
      runs,
      threads: config.threads,
    });
    points = runs.map((run) => {
      const point = sweepPoint(run.sensitivity, scoreNab(corpus, SWEEP_ROW, detected.get(runKey(run))!));
      report(point);
      return point;
    });
  } else {
    points = runSweep(corpus, engine.api, config.sweepSensitivities, report);
  }
  const lines = [
    '| sensitivity | precision | recall | detections | windows recalled | NAB standard | NAB low FP | NAB low FN |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...points.map(
      (p) =>
        `| ${p.sensitivity} | ${fmt(p.precision)} | ${fmt(p.recall)} | ${p.detections} | ${p.recalledWindows}/${p.windows} | ` +
        NAB_PROFILE_NAMES.map((n) => (p.nab[n] ?? Number.NaN).toFixed(1)).join(' | ') +
        ' |',
    ),
  ];
  io.out(lines.join('\n'));
  await writeJson(path.join(config.repoRoot, 'eval', 'sweep.json'), {
    engine: { package: '@adp/detection', version: engine.version, sourceSha256 },
    row: SWEEP_ROW,
    date: new Date().toISOString(),
    definitions: {
      precision: 'detected rows inside windows / all detected rows, after each file\'s probationary period; null without detections',
      recall: 'windows holding at least one detection (after probation) / all 55 windows',
    },
    settings: SHIPPED_STREAM,
    points,
  });
  const chart = path.join(config.repoRoot, 'docs', 'sensitivity-sweep.png');
  await mkdir(path.dirname(chart), { recursive: true });
  await writeFile(chart, sweepChartPng(points));
  return points;
}
