// A single series' healthy level and spread, and the flags that hold while the series stays away
// from them. The series' verdict flags an event once (at its most severe point); a level that
// moved and stays moved is one departure, and should read as one for as long as it lasts.
import { fitMachineModel, MACHINE_MODEL_TUNING, MIN_MACHINE_MODEL_ROWS, type MachineModel } from './model.js';

/** The one channel's name in a level model. */
export const LEVEL_CHANNEL = 'value';

/**
 * The model of a series' healthy level and spread: the joint model of one channel (the same fit,
 * drift and out-of-sample threshold as a machine's), its score averaged over at least one `cycle`
 * (the series' dominant cycle in points, where it has one): a cyclic series' level is its mean
 * over a cycle, and a shorter window would read its troughs and crests as departures and a
 * shifted level as coming and going. Null for fewer than MIN_MACHINE_MODEL_ROWS values or any that
 * are not finite.
 */
export function fitLevelModel(healthy: ArrayLike<number>, cycle = 0): MachineModel | null {
  if (healthy.length < MIN_MACHINE_MODEL_ROWS) return null;
  for (let i = 0; i < healthy.length; i++) if (!Number.isFinite(healthy[i])) return null;
  const smoothingPoints = Math.max(MACHINE_MODEL_TUNING.smoothingPoints, Math.round(cycle));
  return fitMachineModel({ channels: [LEVEL_CHANNEL], values: [healthy] }, { smoothingPoints });
}

/** Where a level model finds the series out of its healthy state (judgeMachine's fields). */
export interface LevelVerdict {
  readonly isAnomaly: readonly boolean[];
  readonly severity: readonly number[];
  /**
   * How many points after a flag the level model's run may start and still be the flag's
   * departure: the points after which the flag's episode would have closed.
   */
  readonly reach: number;
}

/**
 * The severities a series' flags hold on to while its level stays away: a flag at `i` carries
 * over the level model's run of out points that reaches into [i, i + reach] (so what it carries
 * stays in the flag's episode), from the run's start (a flag reported at an event's most severe
 * point may come after the departure began) to its end. A carried point's severity
 * is the level model's, never above the flag that carries it, so the flag stays its departure's
 * most severe point. Zero where nothing is carried; flagged points themselves are never carried.
 */
export function levelCarry(flags: readonly boolean[], severity: readonly number[], level: LevelVerdict): Float64Array {
  const n = flags.length;
  const carried = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (!flags[i]) continue;
    let j = i;
    const reach = Math.min(n - 1, i + level.reach);
    while (j <= reach && !level.isAnomaly[j]) j++;
    if (j > reach) continue;
    let start = j;
    while (start > 0 && level.isAnomaly[start - 1]) start--;
    let end = j;
    while (end + 1 < n && level.isAnomaly[end + 1]) end++;
    const cap = severity[i] ?? 0;
    for (let k = start; k <= end; k++) {
      if (flags[k]) continue;
      const held = Math.min(level.severity[k] ?? 0, cap);
      if (held > carried[k]!) carried[k] = held;
    }
  }
  return carried;
}
