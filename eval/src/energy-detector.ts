// The learned model's energy as a streaming NAB detector (issue 4), and the engine combined with it.
//
// Per file: the model is fitted on the learning prefix only (NAB's probationary rows), the energy
// of every point comes from the window of 64 points ending at it (past points only), and each
// energy is standardised against the prefix's energies. The model runs asynchronously
// (onnxruntime), the harness's detectors are synchronous: `computeEnergyTraces` runs the model
// once per file before the NAB pass, and the detectors below read those traces. The flag rules
// are pure functions of the z-scores.
import type { ModelRuntime, Normalisation, PredictorWeights } from '@adp/model';
import { MIN_FINETUNE_POINTS, robustNormalisation, WINDOW_POINTS } from '@adp/model';
import { zScoresOf } from '@adp/regimes';
import type { StreamingDetector } from './detectors.js';
import { ENERGY_DEFAULTS, type EnergyFit, type EnergyScale, type EnergySettings } from './energy-settings.js';
import { probationaryRows } from './nab-scorer.js';

export { ENERGY_DEFAULTS, ENERGY_FITS, ENERGY_SCALES, type EnergyFit, type EnergyScale, type EnergySettings } from './energy-settings.js';

/** The slice of the model runtime the energy detector needs (`ModelRuntime` fits it). */
export type EnergyModel = Pick<ModelRuntime, 'energies' | 'fineTune'>;

/** What the model said about one file, learnt from its prefix only. */
export interface EnergyTrace {
  /** NAB's probationary rows: the only rows the model and the baseline statistics see before scoring. */
  readonly learningPoints: number;
  readonly fit: EnergyFit;
  readonly normalisation: Normalisation;
  /** Mean and population standard deviation of the prefix's energies from WINDOW_POINTS on. */
  readonly baseline: { readonly energyMean: number; readonly energyStd: number; readonly windows: number };
  /** The model's energy per row (0 for the first WARMUP_POINTS rows). */
  readonly energies: Float64Array;
  /** Energy z-score per row against `baseline` (mean-std, the native API's z_scores). */
  readonly zScores: Float64Array;
  /** Wall time of the fit and the energies, ms. */
  readonly elapsedMs: number;
}

/**
 * Mean and standard deviation of the prefix's informative energies (those from WINDOW_POINTS on,
 * as the baseline endpoint's statistics): before that the model's window is partly padding.
 */
export function prefixBaseline(
  energies: ArrayLike<number>,
  learningPoints: number,
): { energyMean: number; energyStd: number; windows: number } {
  const end = Math.min(learningPoints, energies.length);
  const n = Math.max(0, end - WINDOW_POINTS);
  if (n === 0) return { energyMean: 0, energyStd: 0, windows: 0 };
  let sum = 0;
  for (let i = WINDOW_POINTS; i < end; i++) sum += energies[i] ?? 0;
  const mean = sum / n;
  let sq = 0;
  for (let i = WINDOW_POINTS; i < end; i++) sq += ((energies[i] ?? 0) - mean) ** 2;
  return { energyMean: mean, energyStd: Math.sqrt(sq / n), windows: n };
}

/**
 * The energy trace of a series. Nothing after the learning prefix reaches the fit, the
 * normalisation or the baseline; the energy of row t depends on rows t-64..t only, so the trace
 * of a prefix of the series is the prefix of its trace.
 */
export async function energyTrace(
  model: EnergyModel,
  values: readonly number[],
  fit: EnergyFit,
  learningPoints: number = probationaryRows(values.length),
): Promise<EnergyTrace> {
  const started = performance.now();
  const prefix = values.slice(0, learningPoints);
  let weights: PredictorWeights | undefined;
  let normalisation = robustNormalisation(prefix);
  let effectiveFit: EnergyFit = 'generic';
  if (fit === 'ridge' && prefix.length >= MIN_FINETUNE_POINTS) {
    const tuned = await model.fineTune(prefix, { mode: 'ridge' });
    weights = tuned.weights;
    normalisation = tuned.normalisation;
    effectiveFit = 'ridge';
  }
  const { energies } = await model.energies(values, { normalisation, ...(weights === undefined ? {} : { weights }) });
  const baseline = prefixBaseline(energies, learningPoints);
  // Without an informative prefix there is nothing to compare with: z = 0, no flags.
  const zScores =
    baseline.windows < 2 ? new Float64Array(values.length) : zScoresOf(energies, baseline.energyMean, baseline.energyStd);
  return { learningPoints, fit: effectiveFit, normalisation, baseline, energies, zScores, elapsedMs: performance.now() - started };
}

/** Median of a non-empty sorted array. */
function medianOf(sorted: Float64Array): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Below this an energy counts as this in the log scale (a perfectly predicted point). */
const LOG_ENERGY_FLOOR = 1e-12;

/**
 * z-scores of log energies against the median and 1.4826 x MAD of the prefix's informative log
 * energies (rows WINDOW_POINTS..learningPoints-1); all 0 without at least 2 such rows.
 */
export function logRobustZScores(energies: ArrayLike<number>, learningPoints: number): Float64Array {
  const n = energies.length;
  const out = new Float64Array(n);
  const end = Math.min(learningPoints, n);
  if (end - WINDOW_POINTS < 2) return out;
  const logOf = (e: number | undefined): number => Math.log(Math.max(e ?? 0, LOG_ENERGY_FLOOR));
  const prefix = new Float64Array(end - WINDOW_POINTS);
  for (let i = WINDOW_POINTS; i < end; i++) prefix[i - WINDOW_POINTS] = logOf(energies[i]);
  prefix.sort();
  const centre = medianOf(prefix);
  const deviations = prefix.map((v) => Math.abs(v - centre)).sort();
  const scale = Math.max(medianOf(deviations) * 1.4826, 1e-6);
  for (let t = 0; t < n; t++) out[t] = (logOf(energies[t]) - centre) / scale;
  return out;
}

/** The trace's z-scores under a scale. */
export function traceZScores(trace: EnergyTrace, scale: EnergyScale): Float64Array {
  return scale === 'mean-std' ? trace.zScores : logRobustZScores(trace.energies, trace.learningPoints);
}

/**
 * Flags from energy z-scores: row t >= learningPoints is flagged when z[t] >= threshold and no row
 * among the `refractoryPoints` before it reached the threshold (one flag per event). An event is a
 * chain of such rows; a row at least `escalation` times the event's largest z so far starts a new
 * event (as the engine's refractory exception: a large deviation is not hidden by an earlier
 * marginal one). Prefix rows are never flagged but count for the refractory rule. Each flag
 * depends on z[0..t] only.
 */
export function energyFlags(
  zScores: ArrayLike<number>,
  learningPoints: number,
  settings: Pick<EnergySettings, 'threshold' | 'refractoryPoints' | 'escalation'>,
): boolean[] {
  const flags = new Array<boolean>(zScores.length).fill(false);
  let lastElevated = Number.NEGATIVE_INFINITY;
  let eventMax = 0;
  for (let t = 0; t < zScores.length; t++) {
    const z = zScores[t] ?? Number.NaN;
    if (!(z >= settings.threshold)) continue;
    const newEvent = t - lastElevated > settings.refractoryPoints || z >= settings.escalation * eventMax;
    if (newEvent) {
      if (t >= learningPoints) flags[t] = true;
      eventMax = z;
    } else {
      eventMax = Math.max(eventMax, z);
    }
    lastElevated = t;
  }
  return flags;
}

/**
 * The engine's flags with the energy's added: every engine flag, and an energy flag where neither
 * detector flagged in the `refractoryPoints` rows before it (an event the engine already reported
 * is not reported again because the energy noticed it a few rows later).
 */
export function engineOrEnergy(engine: readonly boolean[], energy: readonly boolean[], refractoryPoints: number): boolean[] {
  const out = new Array<boolean>(engine.length).fill(false);
  let lastFlag = Number.NEGATIVE_INFINITY;
  for (let t = 0; t < engine.length; t++) {
    if (engine[t] === true || (energy[t] === true && t - lastFlag > refractoryPoints)) {
      out[t] = true;
      lastFlag = t;
    }
  }
  return out;
}

/**
 * The engine's flags kept only where the energy agrees: some row among the `lookbackPoints`
 * before t, or t itself, has z >= `minZ`. Meant to drop the engine's false alarms on points the
 * learned model finds ordinary.
 */
export function engineConfirmedByEnergy(
  engine: readonly boolean[],
  zScores: ArrayLike<number>,
  minZ: number,
  lookbackPoints: number,
): boolean[] {
  return engine.map((flag, t) => {
    if (!flag) return false;
    for (let j = Math.max(0, t - lookbackPoints); j <= t; j++) if ((zScores[j] ?? Number.NaN) >= minZ) return true;
    return false;
  });
}

/** Traces by series, keyed by the series' values array (the harness passes the corpus's own arrays). */
export type EnergyTraces = WeakMap<readonly number[], EnergyTrace>;

/** Runs the model once per series (sequentially: the machine is shared) and keeps the traces. */
export async function computeEnergyTraces(
  model: EnergyModel,
  series: readonly { readonly file: string; readonly values: readonly number[] }[],
  fit: EnergyFit,
  onFile?: (file: string, trace: EnergyTrace) => void,
): Promise<EnergyTraces> {
  const traces: EnergyTraces = new WeakMap();
  for (const s of series) {
    const trace = await energyTrace(model, s.values, fit);
    traces.set(s.values, trace);
    onFile?.(s.file, trace);
  }
  return traces;
}

function traceOf(traces: EnergyTraces, values: readonly number[]): EnergyTrace {
  const trace = traces.get(values);
  if (trace === undefined) throw new RangeError('no energy trace for this series (computeEnergyTraces was not run on it)');
  if (trace.zScores.length !== values.length) {
    throw new RangeError(`energy trace has ${trace.zScores.length} points for ${values.length} values`);
  }
  return trace;
}

/** Summary of the last series run, for results.json. */
function planOfTrace(trace: EnergyTrace | undefined): unknown {
  if (trace === undefined) return undefined;
  return {
    learningPoints: trace.learningPoints,
    fit: trace.fit,
    normalisation: trace.normalisation,
    baseline: trace.baseline,
    modelMs: Math.round(trace.elapsedMs),
  };
}

export interface TraceDetector extends StreamingDetector {
  lastPlan(): unknown;
}

export function energyStreamingDetector(traces: EnergyTraces, settings: EnergySettings): TraceDetector {
  let last: EnergyTrace | undefined;
  return {
    name: energyDetectorName(settings),
    lastPlan: () => planOfTrace(last),
    flags(values) {
      last = traceOf(traces, values);
      return energyFlags(traceZScores(last, settings.scale), last.learningPoints, settings);
    },
  };
}

export type Combination =
  | { readonly kind: 'or' }
  | { readonly kind: 'confirmed'; readonly minZ: number; readonly lookbackPoints: number };

export function combinedStreamingDetector(
  engine: StreamingDetector,
  traces: EnergyTraces,
  settings: EnergySettings,
  combination: Combination,
): TraceDetector {
  let last: EnergyTrace | undefined;
  return {
    name: combinedDetectorName(settings, combination),
    lastPlan: () => planOfTrace(last),
    flags(values, timestampsMs) {
      last = traceOf(traces, values);
      const engineFlags = engine.flags(values, timestampsMs);
      const zScores = traceZScores(last, settings.scale);
      if (combination.kind === 'confirmed') {
        return engineConfirmedByEnergy(engineFlags, zScores, combination.minZ, combination.lookbackPoints);
      }
      const energy = energyFlags(zScores, last.learningPoints, settings);
      return engineOrEnergy(engineFlags, energy, settings.refractoryPoints);
    },
  };
}

/** Runs a detector once per series and hands the same flags to every later caller (the engine's default pass, shared). */
export function memoisedDetector(detector: StreamingDetector): StreamingDetector {
  const cache = new WeakMap<readonly number[], boolean[]>();
  return {
    name: detector.name,
    flags(values, timestampsMs) {
      let flags = cache.get(values);
      if (flags === undefined) {
        flags = detector.flags(values, timestampsMs);
        cache.set(values, flags);
      }
      return [...flags];
    },
  };
}

/** Names carry the settings that differ from the defaults (ridge fit, mean-std scale, new event at 16x). */
const suffix = (settings: EnergySettings): string =>
  (settings.fit === 'ridge' ? '' : ', generic predictor') +
  (settings.scale === 'mean-std' ? '' : `, ${settings.scale}`) +
  (settings.escalation === ENERGY_DEFAULTS.escalation
    ? ''
    : Number.isFinite(settings.escalation)
      ? `, new event at ${settings.escalation}x`
      : ', no new-event exception');

export function energyDetectorName(settings: EnergySettings): string {
  return `energy: z>=${settings.threshold}${suffix(settings)}`;
}

export function combinedDetectorName(settings: EnergySettings, combination: Combination): string {
  return combination.kind === 'or'
    ? `engine+energy: z>=${settings.threshold}${suffix(settings)}`
    : `engine confirmed by energy: z>=${combination.minZ} within ${combination.lookbackPoints}${suffix(settings)}`;
}
