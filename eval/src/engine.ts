// The detection engine as the harness sees it: loaded at run time, wrapped as detectors.
//
// Loaded with a dynamic import and checked export by export at run time, so a broken or partial
// engine is reported in the table rather than stopping the reference detectors; the signatures
// are checked against the engine's own types at compile time (asEngineApi).
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type {
  ChangePointOptions,
  ChangePointResult,
  DetectOptions,
  EntireResult,
  Granularity,
  LastResult,
  SeriesInput,
} from '@adp/detection';
import type { ChangePointDetector, StreamingDetector } from './detectors.js';
import { probationaryRows } from './nab-scorer.js';
import type { EngineVariant } from './variants.js';
import type * as detection from '@adp/detection';
import { STREAM_DEFAULTS as SHIPPED, vendorSuggestedWindow } from '@adp/detection';

export type StreamOptions = DetectOptions & { windowPoints: number; minHistory?: number };

/** The engine's functions the harness calls (pipelines/detection/src/types.ts contract). */
export interface EngineApi {
  detectStream(input: SeriesInput, opts: StreamOptions): readonly LastResult[];
  detectChangePointSeries(input: SeriesInput, opts: ChangePointOptions): ChangePointResult;
  suggestedWindow(period: number, granularity: Granularity): number;
  detectPeriod(values: readonly number[], granularity: Granularity, customInterval: number): number;
  /** Last-point detection, what POST .../last/detect calls (the headline's client row). */
  detectLastPoint?(input: SeriesInput, opts: DetectOptions): LastResult;
  /** Entire-series detection, what POST .../entire/detect calls (the headline's batch row). */
  detectEntireSeries?(input: SeriesInput, opts: DetectOptions): EntireResult;
  /** The incremental streaming judge over a series without timestamps (absent from older engines). */
  judgeStream?(values: readonly number[], opts: StreamOptions & { refitPoints?: number }): readonly LastResult[];
  /** The incremental judge whose window follows its own suggestion (absent from older engines). */
  judgeStreamFollowing?(values: readonly number[], opts: StreamOptions): readonly LastResult[];
  /** The anomaly detectors' rules by name, which a variant removes from (absent from older engines). */
  readonly DETECTION_RULE_NAMES?: readonly string[];
  /** The changepoint detector's rules by name (absent from older engines). */
  readonly CHANGEPOINT_RULE_NAMES?: readonly string[];
}

/** `names` less `removed`, or nothing to add when the variant removes nothing. */
function rulesWithout(
  names: readonly string[] | undefined,
  removed: readonly string[] | undefined,
): { rules?: readonly string[] } {
  if (removed === undefined || removed.length === 0) return {};
  if (names === undefined) throw new TypeError('this engine names no rules to remove');
  const unknown = removed.filter((name) => !names.includes(name));
  if (unknown.length > 0) throw new TypeError(`this engine has no rule ${unknown.join(', ')}`);
  return { rules: names.filter((name) => !removed.includes(name)) };
}

const REQUIRED_EXPORTS = ['detectStream', 'detectChangePointSeries', 'suggestedWindow', 'detectPeriod'] as const;

export type LoadedEngine =
  | { readonly kind: 'loaded'; readonly api: EngineApi; readonly version: string }
  | { readonly kind: 'missing'; readonly missing: readonly string[]; readonly version: string };

export async function engineVersion(repoRoot: string): Promise<string> {
  const pkg = JSON.parse(
    await readFile(path.join(repoRoot, 'pipelines', 'detection', 'package.json'), 'utf8'),
  ) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/**
 * SHA-256 over the engine's source files (name and content, sorted by name): the version in
 * package.json does not move with every change, the figures should still name the code.
 */
export async function engineSourceHash(repoRoot: string): Promise<string> {
  const dir = path.join(repoRoot, 'pipelines', 'detection', 'src');
  const names = (await readdir(dir, { recursive: true })).filter((n) => n.endsWith('.ts')).sort();
  const hash = createHash('sha256');
  for (const name of names) {
    hash.update(`${name}\0`);
    hash.update(await readFile(path.join(dir, name)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

type DetectionModule = typeof detection;

/** Type-checks, at compile time, that the engine's exports fit the slice the harness calls. */
function asEngineApi(mod: DetectionModule): EngineApi {
  return mod;
}

export async function loadEngine(repoRoot: string): Promise<LoadedEngine> {
  const version = await engineVersion(repoRoot);
  const mod = await import('@adp/detection');
  const exported = mod as unknown as Record<string, unknown>;
  const missing = REQUIRED_EXPORTS.filter((name) => typeof exported[name] !== 'function');
  if (missing.length > 0) return { kind: 'missing', missing, version };
  return { kind: 'loaded', api: asEngineApi(mod), version };
}

/**
 * How the harness streams a series through the engine: the same rule for every file. The
 * shipped rows (`SHIPPED_STREAM`) judge as the streaming worker does with its defaults; the
 * harness window (`HARNESS_STREAM`, not shipped) takes the window from the period detected on
 * the series' learning prefix (NAB's probationary rows).
 */
export interface StreamSettings {
  /** The service's default, 95. */
  readonly sensitivity: number;
  /** The service's default, 0.25. */
  readonly maxAnomalyRatio: number;
  /**
   * `suggested`: engine.suggestedWindow(period, the prefix's granularity), at least `minPoints`,
   * and with `atLeastLearning` never fewer points than the learning prefix (a client sends all
   * the history it has learnt from; the suggested window is the least the model needs);
   * `fixed`: this many trailing points for every file;
   * `vendor-at`: the vendor's suggestion (4 periods + 1, 1,441 without a period), whatever the
   * engine suggests, for the period the engine detects in the series' first `points` rows as a
   * request without timestamps (granularity none), at least 12.
   */
  readonly window:
    | { readonly kind: 'suggested'; readonly minPoints: number; readonly atLeastLearning?: boolean }
    | { readonly kind: 'fixed'; readonly points: number }
    | { readonly kind: 'vendor-at'; readonly points: number };
  /**
   * `prefix`: the period detected once on the learning prefix is passed to the engine;
   * `engine`: no period is passed, the engine detects it in each trailing window.
   */
  readonly period: 'prefix' | 'engine';
  /**
   * Which streaming detector judges the points: `exact` = detectStream (every point's model
   * refitted over its window, the endpoint's semantics); `incremental` = the engine's
   * incremental judge (judgeStream; the model refitted every `refitPoints` points, default the
   * engine's) over a fixed window; `following` = the incremental judge whose window follows
   * what its verdicts suggest, never below the planned window (judgeStreamFollowing), what the
   * streaming worker runs. Default `exact`.
   */
  readonly judge?:
    | { readonly kind: 'exact' }
    | { readonly kind: 'incremental'; readonly refitPoints?: number }
    | { readonly kind: 'following' };
  /**
   * Points the client keeps, the judged one included (`StreamOptions.memoryPoints`): those
   * before the window are sent as the request's past range (their lowest and highest value).
   * 0: no past range.
   */
  readonly memoryPoints: number;
}

/**
 * The streaming worker with its defaults (`STREAM_DEFAULTS` of @adp/detection, which the
 * worker's WORKER_WINDOW_POINTS and WORKER_MEMORY_POINTS default to): the incremental judge over
 * the trailing 720 points or, once a period is found, the 4 periods + 1 its verdicts suggest
 * (judgeStreamFollowing), the range of the 8,640 points kept as the past range, no period given
 * (detected in the window), every point judged from the 12th on (the judge's least history), as
 * the worker's judge does for a new series.
 */
export const SHIPPED_STREAM: StreamSettings = {
  sensitivity: SHIPPED.sensitivity,
  maxAnomalyRatio: SHIPPED.maxAnomalyRatio,
  window: { kind: 'fixed', points: SHIPPED.windowPoints },
  period: 'engine',
  judge: { kind: 'following' },
  memoryPoints: SHIPPED.memoryPoints,
};

/**
 * The harness window (not shipped, kept as a reference and as the ablation's base): exact
 * last-point detection over a window taken from the file's first 15 % (NAB's probationary
 * length), which no client has.
 */
export const HARNESS_STREAM: StreamSettings = {
  sensitivity: SHIPPED.sensitivity,
  maxAnomalyRatio: SHIPPED.maxAnomalyRatio,
  // At least the learning prefix: the suggested 4 periods + 1 is what the model needs, not all
  // it can use (with 49 points for a 12-point period, its noise scale and refractory stretch
  // rest on a few dozen points).
  window: { kind: 'suggested', minPoints: 12, atLeastLearning: true },
  // A last/detect request carries no period by default: the engine finds it in the window.
  period: 'engine',
  // A client keeps as many points as one request may carry (the API's 8,640) and sends the range
  // of those older than its window as the past range (the no-past-range variant measures it).
  memoryPoints: SHIPPED.memoryPoints,
};

/**
 * The series as the endpoint would receive it. Granularity `none` for every file: NAB's rows are
 * not on a clean grid (duplicate stamps, gaps, a clock jump), and a grid would make the engine
 * align and impute, so its points would no longer be the file's rows.
 */
export function seriesInput(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

/**
 * The granularity a client would declare for rows spaced like these: from the median spacing,
 * the coarsest of day/hour/minute/second that divides it, times the multiple. Only the period
 * detection of the window rule uses it (its candidate cycles: a day of 5-minute points, ...).
 */
export function granularityOfSpacing(timestampsMs: readonly number[] | undefined): {
  granularity: Granularity;
  customInterval: number;
} {
  const steps: number[] = [];
  for (let i = 1; i < (timestampsMs?.length ?? 0); i += 1) {
    const step = (timestampsMs?.[i] as number) - (timestampsMs?.[i - 1] as number);
    if (step > 0) steps.push(step);
  }
  if (steps.length === 0) return { granularity: 'none', customInterval: 1 };
  steps.sort((a, b) => a - b);
  const seconds = Math.max(1, Math.round((steps[Math.floor(steps.length / 2)] as number) / 1000));
  const units = [
    ['daily', 86_400],
    ['hourly', 3_600],
    ['minutely', 60],
    ['secondly', 1],
  ] as const;
  for (const [granularity, unit] of units) {
    if (seconds % unit === 0) return { granularity, customInterval: seconds / unit };
  }
  return { granularity: 'secondly', customInterval: seconds };
}

/** What the engine was asked for one series: recorded in results.json. */
export interface StreamPlan {
  /** NAB's probationary rows when the window or the period comes from them, else 0. */
  readonly learningPoints: number;
  /** Granularity of the rows' spacing, for the period detection of the window rule only. */
  readonly granularity: Granularity;
  readonly customInterval: number;
  /** The period the window rule detected; null when none was (the engine detects it per window). */
  readonly period: number | null;
  readonly windowPoints: number;
}

export function planStream(
  api: EngineApi,
  values: readonly number[],
  timestampsMs: readonly number[] | undefined,
  settings: StreamSettings,
): StreamPlan {
  const window = settings.window;
  if (window.kind === 'vendor-at') {
    const head = values.slice(0, window.points);
    const period = api.detectPeriod(head, 'none', 1);
    // The vendor's rule is fixed: the current engine's copy of it serves every engine compared.
    const suggested = vendorSuggestedWindow(period, 'none');
    const windowPoints = Math.max(suggested, 12);
    return { learningPoints: 0, granularity: 'none', customInterval: 1, period, windowPoints };
  }
  if (window.kind === 'fixed' && settings.period === 'engine') {
    return { learningPoints: 0, granularity: 'none', customInterval: 1, period: null, windowPoints: window.points };
  }
  const learningPoints = probationaryRows(values.length);
  const { granularity, customInterval } = granularityOfSpacing(timestampsMs?.slice(0, learningPoints));
  const period = api.detectPeriod(values.slice(0, learningPoints), granularity, customInterval);
  const windowPoints =
    window.kind === 'fixed'
      ? window.points
      : Math.max(
          api.suggestedWindow(period, granularity),
          window.minPoints,
          window.atLeastLearning === true ? learningPoints : 0,
        );
  return { learningPoints, granularity, customInterval, period, windowPoints };
}

export interface EngineStreamingDetector extends StreamingDetector {
  /** The plan of the last series run, for the per-file record. */
  lastPlan(): StreamPlan | undefined;
}

export function engineStreamingDetector(
  api: EngineApi,
  variant: EngineVariant,
  settings: StreamSettings = HARNESS_STREAM,
  name = `engine: ${variant.name}`,
): EngineStreamingDetector {
  let plan: StreamPlan | undefined;
  const effective: StreamSettings = { ...settings, ...variant.stream };
  return {
    name,
    lastPlan: () => plan,
    flags(values, timestampsMs) {
      plan = planStream(api, values, timestampsMs, effective);
      const options = {
        sensitivity: effective.sensitivity,
        maxAnomalyRatio: effective.maxAnomalyRatio,
        windowPoints: plan.windowPoints,
        ...(effective.memoryPoints > 0 ? { memoryPoints: effective.memoryPoints } : {}),
        ...(effective.period === 'prefix' && plan.period !== null ? { period: plan.period } : {}),
        ...rulesWithout(api.DETECTION_RULE_NAMES, variant.removeRules),
        ...variant.detect,
      } as StreamOptions;
      const judge = effective.judge ?? { kind: 'exact' };
      let records: readonly LastResult[];
      if (judge.kind === 'following') {
        if (api.judgeStreamFollowing === undefined) throw new TypeError('this engine has no following judge (judgeStreamFollowing)');
        records = api.judgeStreamFollowing(values, options);
      } else if (judge.kind === 'incremental') {
        if (api.judgeStream === undefined) throw new TypeError('this engine has no incremental judge (judgeStream)');
        records = api.judgeStream(values, {
          ...options,
          ...(judge.refitPoints !== undefined ? { refitPoints: judge.refitPoints } : {}),
        });
      } else {
        records = api.detectStream(seriesInput(values), options);
      }
      if (records.length !== values.length) {
        throw new RangeError(`detectStream returned ${records.length} records for ${values.length} points`);
      }
      return records.map((r) => r.isAnomaly);
    },
  };
}

export function engineChangePointDetector(api: EngineApi, variant: EngineVariant): ChangePointDetector {
  return {
    name: `engine: ${variant.name}`,
    changePoints(values) {
      const result = api.detectChangePointSeries(seriesInput(values), {
        ...rulesWithout(api.CHANGEPOINT_RULE_NAMES, variant.removeChangePointRules),
        ...variant.changePoint,
      } as ChangePointOptions);
      if (result.isChangePoint.length !== values.length) {
        throw new RangeError(
          `detectChangePointSeries returned ${result.isChangePoint.length} flags for ${values.length} points`,
        );
      }
      return result.isChangePoint.flatMap((flag, i) => (flag ? [i] : []));
    },
  };
}
