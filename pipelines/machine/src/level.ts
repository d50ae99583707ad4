// A single series' healthy level and spread, and the flags that hold while the series stays away
// from them. The series' verdict flags an event once (at its most severe point); a level that
// moved and stays moved is one departure, and should read as one for as long as it lasts.
import { judgeMachine } from './judge.js';
import { fitMachineModel, MACHINE_MODEL_TUNING, MIN_MACHINE_MODEL_ROWS, type MachineModel } from './model.js';

/** The one channel's name in a level model. */
export const LEVEL_CHANNEL = 'value';

/**
 * The model of a series' healthy level and spread: the joint model of one channel (the same fit,
 * drift and out-of-sample threshold as a machine's), its score averaged over the series' dominant
 * `cycle` (in points, where it has one) when that is longer than a machine's window: a cyclic
 * series' level is its mean over a cycle, and a shorter window reads a shifted level as coming and
 * going with the cycle's phase. Null unless the healthy values hold at least ten cycles: the
 * threshold is set on whole windows of held-out fifths, and a cycle longer than half a fifth
 * reads as drift in the fifths' means. Null too for fewer than MIN_MACHINE_MODEL_ROWS values or
 * any that are not finite.
 */
export function fitLevelModel(healthy: ArrayLike<number>, cycle = 0): MachineModel | null {
  if (healthy.length < MIN_MACHINE_MODEL_ROWS) return null;
  for (let i = 0; i < healthy.length; i++) if (!Number.isFinite(healthy[i])) return null;
  if (cycle > healthy.length / (2 * MACHINE_MODEL_TUNING.calibrationBlocks)) return null;
  const smoothingPoints = Math.max(MACHINE_MODEL_TUNING.smoothingPoints, Math.round(cycle));
  return fitMachineModel({ channels: [LEVEL_CHANNEL], values: [healthy] }, { smoothingPoints });
}

/** Where a level model finds the series out of its healthy state (judgeMachine's fields). */
export interface LevelVerdict {
  readonly isAnomaly: readonly boolean[];
  readonly severity: readonly number[];
  /** The model's smoothing window: how long its trailing score may take to see a departure. */
  readonly window: number;
}

/** The level model's verdict on a stretch of the series (judged as following the baseline), at `sensitivity`. */
export function levelVerdict(model: MachineModel, values: ArrayLike<number>, sensitivity: number): LevelVerdict {
  const { isAnomaly, severity } = judgeMachine(model, [values], sensitivity);
  return { isAnomaly, severity, window: model.smoothingPoints };
}

/**
 * The severities a series' flags hold on to while its level stays away. A flag at `i` holds over
 * the level model's run of out points that reaches into [i, i + window] (its trailing score sees
 * a departure up to a window late): from the run's start (a flag reported at an event's most
 * severe point may come after the departure began), or from the flag where the run starts after
 * it, to the run's end. A held point's severity is the level model's (before the run, the run's
 * first point's), never above the flag's, so the flag stays its departure's most severe point.
 * Zero where nothing is held; flagged points themselves are never held.
 */
export function levelCarry(flags: readonly boolean[], severity: readonly number[], level: LevelVerdict): Float64Array {
  const n = flags.length;
  const carried = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (!flags[i]) continue;
    let j = i;
    const reach = Math.min(n - 1, i + level.window);
    while (j <= reach && !level.isAnomaly[j]) j++;
    if (j > reach) continue;
    let start = j;
    while (start > 0 && level.isAnomaly[start - 1]) start--;
    let end = j;
    while (end + 1 < n && level.isAnomaly[end + 1]) end++;
    const cap = severity[i] ?? 0;
    for (let k = Math.min(start, i + 1); k <= end; k++) {
      if (flags[k]) continue;
      const held = Math.min(level.severity[Math.max(k, j)] ?? 0, cap);
      if (held > carried[k]!) carried[k] = held;
    }
  }
  return carried;
}

/** What a baseline record holds that its level model is fitted from (@adp/store's BaselineRecord). */
export interface LevelSource {
  /** A multichannel baseline's channels: such a baseline has its joint model instead. */
  readonly channels?: readonly string[] | null;
  /** The healthy values kept for the baseline's shapes, and their cycle (the shape length). */
  readonly shapeReference?: { readonly values: ArrayLike<number>; readonly length: number } | null;
}

/**
 * A single series' baseline's level model (fitLevelModel on the healthy values it keeps for its
 * shapes, averaged over their cycle); null for a multichannel baseline, one without shapes, or
 * one too short for the model. The one rule POST /v1/detect and the stream workers apply.
 */
export function baselineLevelModel(baseline: LevelSource): MachineModel | null {
  if ((baseline.channels?.length ?? 0) > 0) return null;
  const reference = baseline.shapeReference ?? null;
  return reference === null ? null : fitLevelModel(reference.values, reference.length);
}

/**
 * What a stream keeps between batches to hold its flags as levelCarry does (JSON-safe). Point
 * numbers count from the level model's first streamed point.
 */
export interface LevelHoldState {
  /**
   * Flags whose reach has met no out point yet: [the last point that may start a run they hold,
   * their severity]. Later flags reach further; one whose severity a later one matches or exceeds
   * adds nothing, so severities fall along the list.
   */
  readonly pending: readonly (readonly [number, number])[];
  /** The severity cap of the run of out points under way; 0: none, or not held. */
  readonly runCap: number;
}

export const NO_LEVEL_HOLD: LevelHoldState = { pending: [], runCap: 0 };

/**
 * levelCarry for a stream, one batch at a time: `flags`, `severity` and `level` are the batch's
 * points, the first of them point number `from`. A stream cannot flag what it has already
 * reported, so a flag holds forward only: over the run of out points that meets its reach, from
 * the flag (or the run's start, where the run starts after it) to the run's end, across batches.
 * Each held point is as severe as the level model finds it, never more than the flags that hold
 * it; flagged points themselves are never held. Batches of any sizes give the same result.
 */
export function streamLevelCarry(
  flags: readonly boolean[],
  severity: readonly number[],
  level: LevelVerdict,
  state: LevelHoldState,
  from: number,
): { carried: Float64Array; state: LevelHoldState } {
  const n = flags.length;
  const carried = new Float64Array(n);
  const pending = state.pending.map(([until, cap]) => [until, cap] as [number, number]);
  let runCap = state.runCap;
  for (let t = 0; t < n; t++) {
    const index = from + t;
    while (pending.length > 0 && pending[0]![0] < index) pending.shift();
    if (flags[t]) {
      const cap = severity[t] ?? 0;
      while (pending.length > 0 && pending[pending.length - 1]![1] <= cap) pending.pop();
      pending.push([index + level.window, cap]);
    }
    if (!level.isAnomaly[t]) {
      runCap = 0;
      continue;
    }
    // The first out point within the pending flags' reach: the run it is part of is theirs.
    for (const [, cap] of pending) runCap = Math.max(runCap, cap);
    pending.length = 0;
    if (!flags[t] && runCap > 0) carried[t] = Math.min(level.severity[t] ?? 0, runCap);
  }
  return { carried, state: { pending, runCap } };
}
