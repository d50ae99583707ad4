import type { StreamSettings } from './engine.js';

// Engine configurations the harness compares (the ablation). One row of the table per variant.
//
// A variant only overrides options; everything else is the service's defaults. An ablation row
// removes rules from the engine's own list of them (pipelines/detection/src/rules.ts), e.g.
// { name: 'no-echo', removeRules: ['echo'] }: the engine is then called with the rest in force.

export interface EngineVariant {
  readonly name: string;
  /** What the variant changes, for the README and results.json. */
  readonly description: string;
  /** Overrides of the harness's streaming rule (window, period handling, sensitivity) for NAB. */
  readonly stream?: Partial<StreamSettings>;
  /** Extra fields of the engine's detectStream options for NAB. */
  readonly detect?: Readonly<Record<string, unknown>>;
  /**
   * Rules removed from the engine's list (`DETECTION_RULE_NAMES`) for NAB: the engine is called
   * with `rules` = the rest.
   */
  readonly removeRules?: readonly string[];
  /** Likewise for TCPD, from `CHANGEPOINT_RULE_NAMES`. */
  readonly removeChangePointRules?: readonly string[];
  /** Merged over the changepoint endpoint's defaults (no options) for TCPD. */
  readonly changePoint?: Readonly<Record<string, unknown>>;
}

export const ENGINE_VARIANTS: readonly EngineVariant[] = [
  { name: 'default', description: "the service's defaults" },
  // The last-point detector's rules removed one at a time (DetectOptions.rules, internal and
  // evaluation-only): they act on NAB's streaming only.
  {
    name: 'no-calibration',
    description: 'noise scale from the model only, not widened to the spread of the recent one-step errors',
    removeRules: ['calibration'],
  },
  {
    name: 'no-refractory',
    description: 'points of an event already under way in the window are flagged again',
    removeRules: ['refractory'],
  },
  {
    name: 'no-asymmetric-band',
    description: "the band as wide above the forecast as below it (the calibrated scale, not widened on the side where the recent one-step errors spread wider)",
    removeRules: ['asymmetricBand'],
  },
  {
    name: 'no-echo',
    description: 'a point outside its band right after one the band reported is reported again (when the one-step errors miss that report)',
    removeRules: ['echo'],
  },
  {
    name: 'no-new-level',
    description: "no alarm for a value leaving the range of the window's older half (a slow drift, a spike past every earlier value while the refractory rule holds)",
    removeRules: ['newLevel'],
  },
  {
    name: 'no-familiar-range',
    description: "a point just outside its band (under 1.5 margins) is reported even when its value lies well inside the range of the window's older half",
    removeRules: ['familiarRange'],
  },
  {
    name: 'no-routine-miss',
    description: 'a point just outside its band (under 1.5 margins) is reported even when the window missed that far, in its local noise, 8 times or more',
    removeRules: ['routineMiss'],
  },
  {
    name: 'no-sustained-quiet',
    description: 'the sustained-error alarm is raised on its point even when the forecast meets that point (within a tenth of the band)',
    removeRules: ['sustainedQuiet'],
  },
  {
    name: 'no-stuck',
    description: "no stuck-value alarm (12 equal values in a row outside the range of the window's older half, or anywhere when that half never repeated a value)",
    removeRules: ['stuck'],
  },
  {
    name: 'no-period-stability',
    description: "data-driven period from the sinusoid's lag only, without the seasonal-fit check of nearby lags",
    removeRules: ['periodStability'],
  },
  {
    name: 'no-two-cycle-period',
    description: 'last-point period detection asks for 3 full cycles in the window, as the batch detectors do, instead of 2',
    removeRules: ['twoCyclePeriod'],
  },
  {
    name: 'no-sustained-error',
    description: 'no alarm when the mean of the recent one-step errors becomes unusual for the window (single-point deviations only)',
    removeRules: ['sustainedError'],
  },
  {
    name: 'no-seasonal-check',
    description: 'a period detected in the window is always used, even when the forecast without it errs clearly less',
    removeRules: ['seasonalCheck'],
  },
  {
    name: 'no-suggested-span',
    description:
      "a client sending 8,640 points is judged from all of them, not from the newest suggestedWindow with the older ones as the past range (the incremental judge over a fixed 8,640-point window, which judges its whole window; the exact one would take hours)",
    stream: { window: { kind: 'fixed', points: 8640 }, judge: { kind: 'incremental' } },
    removeRules: ['suggestedSpan'],
  },
  {
    name: 'no-past-range',
    description:
      "the client sends its window alone, not the range of the points it keeps before the window: a new level is judged against the window's older half only",
    stream: { memoryPoints: 0 },
  },
  {
    name: 'window-suggested-only',
    description: 'NAB streamed with the suggested window alone (4 periods + 1), even when the learning prefix is longer',
    stream: { window: { kind: 'suggested', minPoints: 12, atLeastLearning: false } },
  },
  // The streaming worker's incremental judge (pipelines/detection/src/stream-judge.ts): the model's
  // fitted parts refitted every 64 points and near decisions instead of for every point. NAB only.
  // Other settings (refit every 8, 16, 64 points; period schedules) were measured with ad-hoc
  // variants: pipelines/detection/README.md, "Incremental streaming judge".
  {
    name: 'incremental',
    description:
      "NAB judged by the engine's incremental streaming judge as the worker runs it (model refitted every 64 points and near decisions, period re-detected every half window once the window is full)",
    stream: { judge: { kind: 'incremental' } },
  },
  {
    name: 'cp-no-refine',
    description: "changepoints by the seed's gradient rules alone (largest first, local maximum within ±k, gradient confidence), no segmentation test",
    removeChangePointRules: ['refine'],
  },
  {
    name: 'cp-no-detrend',
    description: 'changepoint gradients over the error without its robust straight line removed',
    removeChangePointRules: ['detrend'],
  },
  {
    name: 'cp-no-split-trend',
    description: 'changepoint splits tested as a step against a level only, not against a curve within the segment',
    removeChangePointRules: ['splitTrend'],
  },
];
