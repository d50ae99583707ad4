// A spike's echo. The model's energy at a point measures the point's whole window (64 points), so
// one extreme value raises the energy of every later point whose window still holds it: a single
// spike makes the next 64 points elevated although their own values are normal, and with a
// changepoint nearby that run of elevated points reads as a sustained shift (TRANSITION). The
// rules here attribute a window's excess energy to the value that caused it: a point with extreme
// energy whose own value also stands out from the line through its neighbours is replaced by that
// line, the later points' energies are measured again on the repaired series, and a later point
// keeps only the energy that remains. A spike's echo then vanishes (its later windows are normal
// once the spike is repaired), while a level shift keeps its elevation: only its first point
// stands out from its neighbours, and the shifted values after it still differ from the baseline.
// Pure, apart from the caller's model.
import { DEFAULT_REGIME_THRESHOLDS, validateThresholds, type RegimeThresholds } from './regimes.js';

/** A point whose value the echo check replaces, and the value it gets. */
export interface SpikeRepair {
  readonly index: number;
  readonly value: number;
}

export interface EchoInput {
  /** The energies' z-scores, one per point, as measured on the series itself. */
  readonly zScores: ArrayLike<number>;
  /** The series' values, one per point. */
  readonly values: ArrayLike<number>;
  /**
   * Points at the start whose energy is not comparable (as for classifyRegimes): a value there is
   * repaired on its departure alone. Default 0.
   */
  readonly warmupPoints?: number;
}

const MAD_TO_SIGMA = 1.4826;
const MEAN_ABS_TO_SIGMA = 1.2533;

/** Departure of each inner point from the line through its two neighbours (0 at both ends). */
function departures(values: ArrayLike<number>): Float64Array {
  const out = new Float64Array(values.length);
  for (let t = 1; t + 1 < values.length; t++) {
    out[t] = (values[t] ?? 0) - ((values[t - 1] ?? 0) + (values[t + 1] ?? 0)) / 2;
  }
  return out;
}

/**
 * Typical size of the inner points' departures, as a standard deviation: the larger of MAD x 1.4826
 * and the mean absolute departure x 1.2533 (both estimate it for Gaussian noise), never below
 * 1e-12. The MAD alone says almost nothing of a smooth or quantised series whose departures are
 * mostly near 0 but regularly larger (a sawtooth's wraps, a sensor's steps): every such step would
 * count as a spike. The mean sees those steps; that it also grows with the spikes themselves only
 * raises the bar a little, as a spike departs by far more than the bar.
 */
function departureScale(departure: Float64Array): number {
  const inner = departure.length - 2;
  if (inner <= 0) return 1e-12;
  const magnitudes = Float64Array.from(departure.subarray(1, departure.length - 1), Math.abs).sort();
  const mid = inner >> 1;
  const median = inner % 2 === 1 ? magnitudes[mid]! : (magnitudes[mid - 1]! + magnitudes[mid]!) / 2;
  const meanAbs = magnitudes.reduce((sum, value) => sum + value, 0) / inner;
  return Math.max(median * MAD_TO_SIGMA, meanAbs * MEAN_ABS_TO_SIGMA, 1e-12);
}

/**
 * The points whose own value carries an extreme energy: z >= shockZ, and a departure from the line
 * through its neighbours of at least `spikeDeparture` typical departures over the series. A spike's
 * later points have high energy too, but values on that line. A spike bends its neighbours' lines
 * too, so points are taken in order, the line starting from the point before as repaired, and a
 * point whose next neighbour departs further the other way is not one. Each run of consecutive
 * such points is replaced by the straight line between the points around it. The last point has no
 * later point to repair for and is never one.
 */
export function spikeRepairs(input: EchoInput, thresholds: RegimeThresholds = DEFAULT_REGIME_THRESHOLDS): SpikeRepair[] {
  validateThresholds(thresholds);
  const { zScores, values } = input;
  if (values.length !== zScores.length) {
    throw new RangeError(`echoes: ${values.length} values for ${zScores.length} z-scores`);
  }
  const limit = thresholds.spikeDeparture * departureScale(departures(values));
  const value = (index: number): number => values[index] ?? 0;
  const repairs: SpikeRepair[] = [];
  const closeRun = (start: number, end: number): void => {
    const before = value(start - 1);
    const after = value(end + 1);
    const span = end - start + 2;
    for (let index = start; index <= end; index++) {
      repairs.push({ index, value: before + ((after - before) * (index - start + 1)) / span });
    }
  };
  const warmupPoints = input.warmupPoints ?? 0;
  let runStart = -1;
  for (let t = 1; t + 1 < values.length; t++) {
    // The point before as repaired if the open run ended there: on the line from before the run to t.
    const previous =
      runStart < 0
        ? value(t - 1)
        : value(runStart - 1) + ((value(t) - value(runStart - 1)) * (t - runStart)) / (t - runStart + 1);
    const z = zScores[t];
    const departure = value(t) - (previous + value(t + 1)) / 2;
    // A spike at t + 1 bends t's line by half its own size, the other way: then t's departure
    // is the next point's, and t is not a spike.
    const next = t + 2 < values.length ? value(t + 1) - (value(t) + value(t + 2)) / 2 : 0;
    // In the warm-up the energy is not comparable: the value alone decides (a spike there still
    // echoes into the points after it).
    const extreme = t < warmupPoints || (z !== undefined && Number.isFinite(z) && z >= thresholds.shockZ);
    const stands =
      extreme &&
      Math.abs(departure) >= limit &&
      !(Math.sign(next) === -Math.sign(departure) && Math.abs(next) > Math.abs(departure));
    if (stands) {
      if (runStart < 0) runStart = t;
    } else if (runStart >= 0) {
      closeRun(runStart, t - 1);
      runStart = -1;
    }
  }
  if (runStart >= 0) closeRun(runStart, values.length - 2);
  return repairs;
}

/**
 * The points whose energy the repairs change: up to `reach` points after each repaired point (the
 * model's window), the repaired points themselves left out (their energy is their own). Ascending.
 */
export function echoPoints(repairs: readonly SpikeRepair[], length: number, reach: number): number[] {
  const repaired = new Set(repairs.map((repair) => repair.index));
  const points = new Set<number>();
  for (const { index } of repairs) {
    for (let t = index + 1; t <= index + reach && t < length; t++) if (!repaired.has(t)) points.add(t);
  }
  return [...points].sort((a, b) => a - b);
}

/** The series with the repairs applied (a copy). */
export function repairedValues(values: ArrayLike<number>, repairs: readonly SpikeRepair[]): number[] {
  const out = Array.from(values);
  for (const { index, value } of repairs) out[index] = value;
  return out;
}

/**
 * z-scores with the echoes taken out: at each echo point the lower of its own z-score and the one
 * measured on the repaired series (`repairedZ`, read at the echo points only). The lower one, because
 * a repair can only explain energy away: where the repaired series scores higher, the repair (a
 * straight line) fits the data worse than the value it replaced, and the point keeps its own score.
 */
export function withoutEchoes(zScores: ArrayLike<number>, points: readonly number[], repairedZ: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(zScores);
  for (const t of points) {
    const repaired = repairedZ[t];
    if (repaired !== undefined && repaired < (out[t] ?? Number.NaN)) out[t] = repaired;
  }
  return out;
}

export interface EchoFreeInput extends EchoInput {
  /** Points after a value that its energy reaches: the model's window. */
  readonly reach: number;
  /**
   * Echo points before this index keep their z-scores as given (a caller that already took their
   * echoes out, such as a stream's judged window). Default 0.
   */
  readonly from?: number;
  /**
   * z-scores of the repaired series at `points` (the answer is read at those indices only), as
   * the caller's model and baseline score them.
   */
  readonly repairedZScores: (values: readonly number[], points: readonly number[]) => Promise<ArrayLike<number>>;
}

/**
 * The z-scores the regime rules judge: the series' own, with every spike's echo taken out. One call
 * of `repairedZScores` when the series has a spike with later points, none otherwise.
 */
export async function echoFreeZScores(
  input: EchoFreeInput,
  thresholds: RegimeThresholds = DEFAULT_REGIME_THRESHOLDS,
): Promise<Float64Array> {
  const repairs = spikeRepairs(input, thresholds);
  const from = input.from ?? 0;
  const points = echoPoints(repairs, input.zScores.length, input.reach).filter((point) => point >= from);
  if (points.length === 0) return Float64Array.from(input.zScores);
  const repairedZ = await input.repairedZScores(repairedValues(input.values, repairs), points);
  return withoutEchoes(input.zScores, points, repairedZ);
}
