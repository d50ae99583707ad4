// The detectors' rules by name, in one list each: what the evaluation's ablation removes one at a
// time (`DetectOptions.rules`, `ChangePointOptions.rules`). Every detector resolves the rules in
// force once per call (`rulesInForce`, `changePointRulesInForce`) and reads that record; the
// last-point detector and the incremental judge resolve the same list the same way, so a rule
// removed for one is removed for the other (`suggestedSpan` acts in detectLastPoint and
// detectStream only: the incremental judge judges its whole window, and the following judge's
// windows are the suggestion already).
import type { ChangePointOptions, DetectOptions } from './types.js';

/** One rule: its name and what it does. `requires`: a rule it only acts through (removed with it). */
export interface Rule<Name extends string = string> {
  readonly name: Name;
  readonly does: string;
  readonly requires?: Name;
}

/**
 * The rules of last-point detection (`detectLastPoint`, `detectStream`, the incremental judge) in
 * the order a verdict applies them: the judged span and the model's period, the band's scale, the band and what holds
 * a report of it back, then the alarms that need no band report.
 */
export const LAST_POINT_RULES = [
  {
    name: 'suggestedSpan',
    does: 'judge a window longer than the suggestion for its period (suggestedWindow) from its newest suggestedWindow points, the older ones joining the past range',
  },
  { name: 'periodStability', does: "prefer the lag that removes the most residual variance among lags close to the sinusoid's" },
  { name: 'twoCyclePeriod', does: 'accept a data-driven period with 2 full cycles in the history (without: 3, as the batch detectors)' },
  { name: 'seasonalCheck', does: 'drop a data-driven period when the forecast without it errs clearly less' },
  { name: 'calibration', does: "widen the noise scale to the spread of the window's recent one-step errors" },
  {
    name: 'asymmetricBand',
    does: 'widen the band on the side where the recent one-step errors spread wider',
    requires: 'calibration',
  },
  { name: 'refractory', does: 'no new band report while an event is under way in the window, unless a deviation dwarfs it' },
  { name: 'echo', does: 'no band report for a point right after one the band reported', requires: 'refractory' },
  { name: 'familiarRange', does: "hold back a marginal miss whose value lies well inside the range of the window's older half" },
  { name: 'routineMiss', does: 'hold back a marginal miss the window made, in its local noise, again and again' },
  { name: 'sustainedError', does: 'alarm once when the mean of the recent one-step errors becomes unusual for the window' },
  { name: 'sustainedQuiet', does: 'no sustained-error alarm on a point the forecast meets (within a tenth of its band)' },
  { name: 'newLevel', does: "alarm once when the value leaves the range of the window's older half" },
  { name: 'stuck', does: 'alarm once when the value has repeated exactly for STUCK_POINTS points where the older points never stood still' },
] as const satisfies readonly Rule[];

/** The rules of entire-series detection (`detectEntireSeries`). */
export const ENTIRE_SERIES_RULES = [
  { name: 'excursion', does: 'inside a transient level excursion, expect the level its surroundings hold' },
  { name: 'shoulder', does: "the noise scale also follows the residuals' shoulders (without: the MAD alone)" },
  { name: 'phaseScale', does: "a seasonal phase whose noise is wider than the series' gets its own band" },
  { name: 'routineEvent', does: 'no report of an excursion beyond the band that ROUTINE_EVENT_COUNT other excursions of the series reach' },
  { name: 'eventOnset', does: 'an excursion beyond the band (consecutive points outside it) is reported once, at its first point' },
] as const satisfies readonly Rule[];

/** The rules of changepoint detection (`detectChangePointSeries`). */
export const CHANGEPOINT_RULES = [
  { name: 'detrend', does: 'remove a robust straight line from the error before taking gradients' },
  {
    name: 'refine',
    does: "choose among the candidates by significance-tested segmentation (without: the seed's gradient rules alone)",
  },
  {
    name: 'splitTrend',
    does: 'test each split against a parabola fitted to its segment (without: against a level)',
    requires: 'refine',
  },
] as const satisfies readonly Rule[];

export type LastPointRuleName = (typeof LAST_POINT_RULES)[number]['name'];
export type EntireSeriesRuleName = (typeof ENTIRE_SERIES_RULES)[number]['name'];
export type DetectionRuleName = LastPointRuleName | EntireSeriesRuleName;
export type ChangePointRuleName = (typeof CHANGEPOINT_RULES)[number]['name'];

/** Every rule of the anomaly detectors (last point and entire series): `DetectOptions.rules`' default. */
export const DETECTION_RULE_NAMES: readonly DetectionRuleName[] = [...LAST_POINT_RULES, ...ENTIRE_SERIES_RULES].map((r) => r.name);
export const CHANGEPOINT_RULE_NAMES: readonly ChangePointRuleName[] = CHANGEPOINT_RULES.map((r) => r.name);

/** Which rules act in one call: true for a rule in force. */
export type RulesInForce = { readonly [Name in DetectionRuleName]: boolean };
export type ChangePointRulesInForce = { readonly [Name in ChangePointRuleName]: boolean };

/**
 * The anomaly detectors' rules in force under `opts`: those `opts.rules` lists (absent: every
 * rule), less any its `components` switches off, less any whose `requires` is not in force.
 */
export function rulesInForce(opts: Pick<DetectOptions, 'rules' | 'components'>): RulesInForce {
  return resolve<DetectionRuleName>([...LAST_POINT_RULES, ...ENTIRE_SERIES_RULES], opts.rules, opts.components);
}

/** `rulesInForce` for changepoint detection. */
export function changePointRulesInForce(opts: Pick<ChangePointOptions, 'rules' | 'components'>): ChangePointRulesInForce {
  return resolve<ChangePointRuleName>(CHANGEPOINT_RULES, opts.rules, opts.components);
}

function resolve<Name extends string>(
  rules: readonly Rule<Name>[],
  listed: readonly Name[] | undefined,
  switches: { readonly [N in Name]?: boolean } | undefined,
): { readonly [N in Name]: boolean } {
  const inForce = {} as { [N in Name]: boolean };
  for (const rule of rules) {
    inForce[rule.name] = (listed === undefined || listed.includes(rule.name)) && switches?.[rule.name] !== false;
  }
  for (const rule of rules) {
    if (rule.requires !== undefined && !inForce[rule.requires]) inForce[rule.name] = false;
  }
  return inForce;
}

/** The list of `names`' rules without `removed`: how an ablation variant composes its rule set. */
export function withoutRules<Name extends string>(names: readonly Name[], removed: readonly string[]): Name[] {
  return names.filter((name) => !removed.includes(name));
}
