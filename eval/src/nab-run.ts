// Streams every NAB file through one detector and scores the flags with every profile.
import type { StreamingDetector } from './detectors.js';
import type { NabCorpus } from './nab-data.js';
import { type NabLosses, scoreCorpus, type NabFileDetections, windowPrecisionRecall } from './nab-scorer.js';

export interface NabProfileScore {
  /** Normalised NAB score: null detector 0, perfect 100. */
  readonly score: number;
  readonly raw: number;
  readonly nullRaw: number;
  readonly perfectRaw: number;
  /** S_perfect − raw by cause: missed windows, late detections, false positives. */
  readonly lost: NabLosses;
}

export interface NabFileResult {
  readonly file: string;
  readonly rows: number;
  readonly windows: number;
  /** Detected rows after the probationary period. */
  readonly detections: number;
  readonly detectionsInWindows: number;
  readonly detectedWindows: number;
  readonly falsePositiveRows: number;
  /** Raw NAB score of this file per profile. */
  readonly raw: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
  /** Extra facts about the run (e.g. the engine's period and window). */
  readonly plan?: unknown;
  /** Set when the detector threw; the file then counts as never detecting. */
  readonly error?: string;
}

export interface NabDetectorResult {
  readonly detector: string;
  readonly elapsedMs: number;
  readonly profiles: Readonly<Record<string, NabProfileScore>>;
  /** Window-level precision and recall (see windowPrecisionRecall). */
  readonly precision: number | null;
  readonly recall: number | null;
  readonly files: readonly NabFileResult[];
  readonly errors: number;
}

export interface NabRunHooks {
  /** Called after each file, e.g. for progress output. */
  readonly onFile?: (file: string, elapsedMs: number, error: string | undefined) => void;
  /** Extra per-file facts to record once the detector has run on the file. */
  readonly planOf?: () => unknown;
}

/** One detector's flags on every NAB file, with each file's time, error and plan. */
export interface NabDetections {
  readonly detections: NabFileDetections[];
  readonly elapsedMs: number[];
  readonly errors: (string | undefined)[];
  readonly plans: unknown[];
}

export function detectNab(corpus: NabCorpus, detector: StreamingDetector, hooks: NabRunHooks = {}): NabDetections {
  const detections: NabFileDetections[] = [];
  const elapsedMs: number[] = [];
  const errors: (string | undefined)[] = [];
  const plans: unknown[] = [];
  for (const s of corpus.series) {
    const started = performance.now();
    let flags: boolean[];
    let error: string | undefined;
    try {
      flags = detector.flags(s.values, s.timestampsMs);
      if (flags.length !== s.values.length) throw new RangeError(`${flags.length} flags for ${s.values.length} rows`);
    } catch (err) {
      error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      flags = s.values.map(() => false);
    }
    const ms = performance.now() - started;
    detections.push({ file: s.file, rowCount: s.values.length, windows: s.windows, detections: flags });
    elapsedMs.push(ms);
    errors.push(error);
    plans.push(hooks.planOf?.());
    hooks.onFile?.(s.file, ms, error);
  }
  return { detections, elapsedMs, errors, plans };
}

export function runNab(corpus: NabCorpus, detector: StreamingDetector, hooks: NabRunHooks = {}): NabDetectorResult {
  const started = performance.now();
  const detected = detectNab(corpus, detector, hooks);
  return scoreNab(corpus, detector.name, detected, performance.now() - started);
}

/**
 * Scores detections (`detectNab`'s, here or in a thread) with every profile. `elapsed` is the
 * run's time; by default the sum of its files' times (a thread's run, timed there).
 */
export function scoreNab(
  corpus: NabCorpus,
  detector: string,
  detected: NabDetections,
  elapsed = detected.elapsedMs.reduce((sum, ms) => sum + ms, 0),
): NabDetectorResult {
  const { detections, elapsedMs, errors, plans } = detected;
  const byProfile = corpus.profiles.map((p) => scoreCorpus(detections, p));
  const profiles: Record<string, NabProfileScore> = {};
  for (const s of byProfile) {
    profiles[s.profile] = { score: s.score, raw: s.raw, nullRaw: s.nullRaw, perfectRaw: s.perfectRaw, lost: s.lost };
  }
  const files = detections.map((d, i): NabFileResult => {
    const first = byProfile[0]?.files[i];
    if (first === undefined) throw new RangeError('no profiles to score with');
    const raw: Record<string, number> = {};
    for (const s of byProfile) raw[s.profile] = s.files[i]?.raw ?? Number.NaN;
    const error = errors[i];
    const plan = plans[i];
    return {
      file: d.file,
      rows: d.rowCount,
      windows: first.windowCount,
      detections: first.detectionRows,
      detectionsInWindows: first.detectionRowsInWindows,
      detectedWindows: first.detectedWindows,
      falsePositiveRows: first.falsePositiveRows,
      raw,
      elapsedMs: Math.round(elapsedMs[i] ?? 0),
      ...(plan === undefined ? {} : { plan }),
      ...(error === undefined ? {} : { error }),
    };
  });
  const pr = windowPrecisionRecall(detections);
  return {
    detector,
    elapsedMs: Math.round(elapsed),
    profiles,
    precision: pr.precision,
    recall: pr.recall,
    files,
    errors: errors.filter((e) => e !== undefined).length,
  };
}
