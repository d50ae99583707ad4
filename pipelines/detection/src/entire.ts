// Entire-series detection: one model over all points, every input point judged against it.
import { decompose, seasonalAt, type Decomposition } from './decomposition.js';
import { prepareSeries } from './prepare.js';
import { medianInPlace, robustScale, scaleFloor, shoulderScale } from './robust.js';
import { anomalyCap, judgePoints, marginMultiplier, widenedMargin, type Verdicts } from './scoring.js';
import type { DetectOptions, EntireResult, SeriesInput } from './types.js';
import { rulesInForce } from './rules.js';
import { TUNING } from './tuning.js';

/**
 * Aligns and imputes the series, settles the period, fits the robust seasonal-trend model
 * (`decompose`) and flags the points outside expected ± z(sensitivity) × residual scale, at most
 * maxAnomalyRatio × n of them. Inside a transient level excursion (`excursionLevels`: an outage,
 * a pinned reading) the expected level is the one its surroundings hold, not the excursion's own.
 * The points outside the band then make events (`reportEvents`): an event as large as many others
 * of the series is routine and not reported, and a reported event is flagged at its first point.
 * Imputed points shape the fit but are not reported.
 */
export function detectEntireSeries(input: SeriesInput, opts: DetectOptions): EntireResult {
  const { prepared, period } = prepareSeries(input, opts.period);
  const rules = rulesInForce(opts);
  const model = decompose(prepared.values, prepared.slots, prepared.imputed, period);

  // One scale for the whole series, from the observed points only: imputed points sit on the
  // model by construction and would shrink it. The shoulders' width as well as the core's: real
  // residuals are rarely Gaussian (docs/evaluation.md, "Entire-series per file").
  const floor = scaleFloor(prepared.values);
  const scale =
    !rules.shoulder ? robustScale(model.scaleResiduals, floor) : shoulderScale(model.scaleResiduals, floor);
  const margin = marginMultiplier(opts.sensitivity) * scale;
  const levels =
    !rules.excursion ? null : excursionLevels(prepared.values, model, period, margin);

  const n = input.values.length;
  const expectedValues: number[] = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const j = prepared.inputIndex[i]!;
    const level = levels !== null && !Number.isNaN(levels[j]!) ? levels[j]! : model.trend[j]!;
    expectedValues[i] = level + seasonalAt(model, j);
  }
  const margins = new Float64Array(n).fill(margin);
  const phaseScale =
    !rules.phaseScale || model.phases === null
      ? null
      : phaseScales(input.values, expectedValues, prepared.inputIndex, model.phases, period, floor);
  if (phaseScale !== null) {
    const z = marginMultiplier(opts.sensitivity);
    for (let i = 0; i < n; i++) margins[i] = Math.max(margin, z * phaseScale[model.phases![prepared.inputIndex[i]!]!]!);
  }
  const verdicts = judgePoints(input.values, expectedValues, margins, anomalyCap(opts.maxAnomalyRatio, n));
  if (rules.routineEvent || rules.eventOnset) {
    reportEvents(input.values, expectedValues, verdicts, {
      routineCount: rules.routineEvent ? ROUTINE_EVENT_COUNT : Number.POSITIVE_INFINITY,
      gapPoints: Math.round(EVENT_GAP_SHARE * n),
      report: rules.eventOnset ? 'onset' : 'every',
    });
  }
  return { period, expectedValues, ...verdicts };
}

/**
 * Other events of the series that must reach an event's peak (in margins) for it to be routine:
 * a series whose noise has heavier tails than its band allows (a CPU that spikes every few hours,
 * a counter that bursts) makes such events all along, and one more of them is how the series
 * works, not something to page anyone for.
 */
export const ROUTINE_EVENT_COUNT = TUNING.ROUTINE_EVENT_COUNT.value;
/**
 * Share of the request's points that may lie within the band between two flagged points of one
 * event: flags that close are one burst on any chart of the request, and one page.
 */
export const EVENT_GAP_SHARE = TUNING.EVENT_GAP_SHARE.value;

/** How `reportEvents` groups and reports the points outside the band. */
export interface EventRules {
  /** An event that at least this many other events reach or pass at their peak is not reported (Infinity: every event is). */
  readonly routineCount: number;
  /** Most points within the band between two flagged points of one event. */
  readonly gapPoints: number;
  /**
   * Which points of a reported event stay flagged: `every` one, its first (`onset`: when it
   * began), or (`peak`) its most severe once it has ended (the first such point on a tie) and its
   * first while it is still under way at the series' end (a flag on the last point would join it).
   */
  readonly report: 'every' | 'onset' | 'peak';
}

/**
 * Turns the points outside the band into events: flagged points at most `gapPoints` points apart
 * are one event; its peak is its largest deviation in margins. An event that at least
 * `routineCount` other events reach or pass at their peak is routine and none of its points is
 * reported. With `report` 'onset' or 'peak', a reported event is flagged at one point only, with
 * the event's largest severity: the other points belong to the same event, already reported, and
 * a client paging on flags is paged once per event. 'peak' flags an event that has ended at its
 * most severe point, and one still under way at the end at its first: an excursion that holds to
 * the end (a level shift) is flagged at its jump, not at the series' last point, where its score
 * has grown the most. A point no longer reported gets its margins
 * widened to 1.01 × its deviation and severity 0, as the anomaly cap does, so that "outside the
 * band" and "anomaly" keep meaning the same thing. Mutates `verdicts`. O(n + e log e) for e events.
 */
export function reportEvents(values: readonly number[], expected: readonly number[], verdicts: Verdicts, rules: EventRules): void {
  const { isAnomaly, isPositiveAnomaly, isNegativeAnomaly, severity, upperMargins, lowerMargins } = verdicts;
  const n = values.length;
  const starts: number[] = [];
  const ends: number[] = [];
  const peaks: number[] = [];
  for (let i = 0; i < n; i++) {
    if (!isAnomaly[i]) continue;
    const excess = Math.abs(values[i]! - expected[i]!) / upperMargins[i]!;
    const e = ends.length - 1;
    if (e >= 0 && i - ends[e]! <= rules.gapPoints + 1) {
      ends[e] = i;
      if (excess > peaks[e]!) peaks[e] = excess;
    } else {
      starts.push(i);
      ends.push(i);
      peaks.push(excess);
    }
  }
  // Peaks in descending order: the events at or above a peak are those before the first smaller one.
  const descending = Float64Array.from(peaks).sort().reverse();
  const reaching = (peak: number): number => {
    let lo = 0;
    let hi = descending.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (descending[mid]! >= peak) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const unflag = (i: number): void => {
    if (!isAnomaly[i]) return;
    const widened = widenedMargin(values[i]!, expected[i]!);
    upperMargins[i] = widened;
    lowerMargins[i] = widened;
    severity[i] = 0;
    isAnomaly[i] = false;
    isPositiveAnomaly[i] = false;
    isNegativeAnomaly[i] = false;
  };
  for (let e = 0; e < starts.length; e++) {
    const start = starts[e]!;
    const end = ends[e]!;
    // `reaching` counts the event itself.
    if (reaching(peaks[e]!) - 1 >= rules.routineCount) {
      for (let i = start; i <= end; i++) unflag(i);
      continue;
    }
    if (rules.report === 'every') continue;
    let worst = 0;
    let worstAt = start;
    for (let i = start; i <= end; i++) {
      if (severity[i]! > worst) {
        worst = severity[i]!;
        worstAt = i;
      }
    }
    // Still under way: a flag on the last point would join the event.
    const underWay = n - 1 - end <= rules.gapPoints + 1;
    const kept = rules.report === 'peak' && !underWay ? worstAt : start;
    for (let i = start; i <= end; i++) if (i !== kept) unflag(i);
    severity[kept] = worst;
  }
}

/** Fewest residuals a phase's pool holds: the phase's own across the cycles, and its neighbours' when the cycles are few. */
export const PHASE_POOL_MIN_POINTS = TUNING.PHASE_POOL_MIN_POINTS.value;
/**
 * Fewest whole cycles for phase scales: neighbouring phases of one cycle are neighbouring points
 * in time, not independent draws, so a pool is only as good as the cycles it spans.
 */
export const PHASE_MIN_CYCLES = TUNING.PHASE_MIN_CYCLES.value;

/**
 * The noise scale of each seasonal phase: `robustScale` (the MAD) of the residuals value −
 * expected of the input points of that phase in every cycle, pooled with the nearest phases
 * until the pool holds PHASE_POOL_MIN_POINTS; null with fewer than PHASE_MIN_CYCLES cycles. A
 * point's band is the wider of the series' and its phase's: a cycle whose noise is larger in one
 * phase (a CPU that spikes to a varying height at the same minute of every hour, a busy daytime)
 * keeps the ordinary readings of that phase inside the band, while quiet phases keep the series'
 * band. The MAD, not the shoulders: an anomaly that fills one cycle's stretch of a pool (a reading
 * pinned for an hour in six days of minutely data: a sixth of its phases' pools) must not widen
 * the band it is judged by.
 */
function phaseScales(
  values: readonly number[],
  expected: readonly number[],
  inputIndex: ArrayLike<number>,
  phases: Int32Array,
  period: number,
  floor: number,
): Float64Array | null {
  const n = values.length;
  const cycles = Math.floor(n / period);
  if (cycles < PHASE_MIN_CYCLES) return null;
  // The fewest neighbouring phases (a phase and `half` on each side) whose cycles hold
  // PHASE_POOL_MIN_POINTS points: the phase alone in a long series of short cycles.
  const half = Math.max(0, Math.ceil((PHASE_POOL_MIN_POINTS / cycles - 1) / 2));
  const width = Math.min(period, 2 * half + 1);
  // Residuals grouped by phase (counting sort), then each phase's pool copied out of its neighbours.
  const offsets = new Int32Array(period + 1);
  for (let i = 0; i < n; i++) offsets[phases[inputIndex[i]!]! + 1]!++;
  for (let k = 0; k < period; k++) offsets[k + 1]! += offsets[k]!;
  const grouped = new Float64Array(n);
  const cursor = offsets.slice(0, period);
  for (let i = 0; i < n; i++) grouped[cursor[phases[inputIndex[i]!]!]!++] = values[i]! - expected[i]!;
  const scales = new Float64Array(period);
  const pool = new Float64Array(n);
  for (let k = 0; k < period; k++) {
    let size = 0;
    for (let d = -Math.floor(width / 2); d < width - Math.floor(width / 2); d++) {
      const phase = (((k + d) % period) + period) % period;
      for (let j = offsets[phase]!; j < offsets[phase + 1]!; j++) pool[size++] = grouped[j]!;
    }
    // A pool thinned by gaps keeps the series' scale (0 here: the margin is the wider of the two).
    scales[k] = size < PHASE_POOL_MIN_POINTS ? 0 : robustScale(pool.subarray(0, size), floor);
  }
  return scales;
}

/**
 * Share of the series the excursion reference spans (at least two periods): a level held for
 * less than half of it, entered by a jump, is an excursion; a longer one is the series' new level
 * (changepoint detection's business).
 */
export const EXCURSION_REFERENCE_SHARE = TUNING.EXCURSION_REFERENCE_SHARE.value;
/** Points after a jump of the trend within which its excursion must begin. */
const EXCURSION_ENTRY_POINTS = TUNING.EXCURSION_ENTRY_POINTS.value;
/**
 * Most of the series that candidate excursions may cover together: beyond this share the series
 * changes level routinely (a machine cycling on and off without a detected period) and none is
 * reported.
 */
export const EXCURSION_MAX_SHARE = TUNING.EXCURSION_MAX_SHARE.value;

/**
 * The trend is a running median over at most 25 points, which keeps a step's edges: a level held
 * for longer than about half that window (a machine reading 0 for an hour, a CPU pinned at 100)
 * becomes trend and leaves no residual. This finds such transient excursions and returns, per
 * model position, the level the surroundings hold there (NaN outside excursions), or null when
 * there are none.
 *
 * An excursion begins where the trend jumps by more than `margin` from one point to the next
 * (within EXCURSION_ENTRY_POINTS of it) and lasts while the trend stays more than `margin` away
 * from the reference level: the median of the deseasonalised values over a centred window of
 * EXCURSION_REFERENCE_SHARE of the series (at least two periods; clipped at the ends). A level
 * held for more than half that window is the reference's own by then, so a lasting shift is no
 * excursion. It must also be the only abrupt change in its reference window (no other jump of the
 * trend there but its own entry and exit), and all candidate excursions together (reported or
 * not) may cover at most EXCURSION_MAX_SHARE of the series: a machine that cycles on and off
 * changes level again and again, and its "on" stretches are how it works. A wandering level (a
 * random walk) makes no jumps. O(n) without jumps; otherwise one median of the reference window
 * for each point examined: at most EXCURSION_ENTRY_POINTS + 1 per jump plus EXCURSION_MAX_SHARE
 * of the series.
 */
export function excursionLevels(
  values: Float64Array,
  model: Decomposition,
  period: number,
  margin: number,
): Float64Array | null {
  const trend = model.trend;
  const m = trend.length;
  if (!(margin > 0) || m < 3) return null;
  const jumps: number[] = [];
  for (let k = 1; k < m; k++) if (Math.abs(trend[k]! - trend[k - 1]!) > margin) jumps.push(k);
  if (jumps.length === 0) return null;

  const deseasonalised = new Float64Array(m);
  for (let j = 0; j < m; j++) deseasonalised[j] = values[j]! - seasonalAt(model, j);
  const half = Math.max(1, Math.floor(Math.max(2 * period, Math.round(EXCURSION_REFERENCE_SHARE * m)) / 2));
  const scratch = new Float64Array(2 * half + 1);
  const reference = (j: number): number => {
    const lo = Math.max(0, j - half);
    const hi = Math.min(m, j + half + 1);
    scratch.set(deseasonalised.subarray(lo, hi));
    return medianInPlace(scratch, 0, hi - lo - 1);
  };

  const runs: { start: number; levels: number[] }[] = [];
  let covered = 0;
  let free = 0;
  for (const k of jumps) {
    if (k < free) continue;
    let start = -1;
    let level = 0;
    for (let j = k; j <= Math.min(m - 1, k + EXCURSION_ENTRY_POINTS); j++) {
      level = reference(j);
      if (Math.abs(trend[j]! - level) > margin) {
        start = j;
        break;
      }
    }
    if (start < 0) continue;
    const run: number[] = [level];
    let end = start + 1;
    for (; end < m; end++) {
      const next = reference(end);
      if (!(Math.abs(trend[end]! - next) > margin)) break;
      run.push(next);
    }
    free = end;
    covered += run.length;
    // Past the share, nothing will be reported: stop (this also bounds the medians computed).
    if (covered > EXCURSION_MAX_SHARE * m) return null;
    // Its own entry and exit aside (jumps from k to EXCURSION_ENTRY_POINTS past its start, and
    // within EXCURSION_ENTRY_POINTS of its end: a reading halfway between the levels makes a
    // two-step edge), no other jump in the reference window around it.
    const own = (j: number): boolean =>
      (j >= k && j <= start + EXCURSION_ENTRY_POINTS) || Math.abs(j - end) <= EXCURSION_ENTRY_POINTS;
    const from = Math.max(0, start - half);
    const to = Math.min(m, end + half);
    if (jumps.some((j) => j >= from && j < to && !own(j))) continue;
    runs.push({ start, levels: run });
  }
  if (runs.length === 0) return null;
  const levels = new Float64Array(m).fill(Number.NaN);
  for (const run of runs) levels.set(run.levels, run.start);
  return levels;
}
