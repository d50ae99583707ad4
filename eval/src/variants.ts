import type { StreamSettings } from './engine.js';

// Engine configurations the harness compares (the ablation). One row of the table per variant.
//
// A variant only overrides options; everything else is the service's defaults. When the engine
// grows switches for its components (as extra fields of its option objects), an ablation is a
// variant per switch, e.g. { name: 'no-sr', detect: { components: { spectralResidual: false } } }.

export interface EngineVariant {
  readonly name: string;
  /** What the variant changes, for the README and results.json. */
  readonly description: string;
  /** Overrides of the harness's streaming rule (window, period handling, sensitivity) for NAB. */
  readonly stream?: Partial<StreamSettings>;
  /** Extra fields of the engine's detectStream options for NAB (component switches). */
  readonly detect?: Readonly<Record<string, unknown>>;
  /** Merged over the changepoint endpoint's defaults (no options) for TCPD. */
  readonly changePoint?: Readonly<Record<string, unknown>>;
}

export const ENGINE_VARIANTS: readonly EngineVariant[] = [
  { name: 'default', description: "the service's defaults" },
  // The last-point detector's components switched off one at a time (DetectOptions.components,
  // internal and evaluation-only): they act on NAB's streaming only.
  {
    name: 'no-calibration',
    description: 'noise scale from the model only, not widened to the spread of the recent one-step errors',
    detect: { components: { calibration: false } },
  },
  {
    name: 'no-refractory',
    description: 'points of an event already under way in the window are flagged again',
    detect: { components: { refractory: false } },
  },
  {
    name: 'no-asymmetric-band',
    description: "the band as wide above the forecast as below it (the calibrated scale, not widened on the side where the recent one-step errors spread wider)",
    detect: { components: { asymmetricBand: false } },
  },
  {
    name: 'no-echo',
    description: 'a point outside its band right after one the band reported is reported again (when the one-step errors miss that report)',
    detect: { components: { echo: false } },
  },
  {
    name: 'no-new-level',
    description: "no alarm for a value leaving the range of the window's older half (a slow drift, a spike past every earlier value while the refractory rule holds)",
    detect: { components: { newLevel: false } },
  },
  {
    name: 'no-familiar-range',
    description: "a point just outside its band (under 1.5 margins) is reported even when its value lies well inside the range of the window's older half",
    detect: { components: { familiarRange: false } },
  },
  {
    name: 'no-routine-miss',
    description: 'a point just outside its band (under 1.5 margins) is reported even when the window missed that far, in its local noise, 8 times or more',
    detect: { components: { routineMiss: false } },
  },
  {
    name: 'no-sustained-quiet',
    description: 'the sustained-error alarm is raised on its point even when the forecast meets that point (within a tenth of the band)',
    detect: { components: { sustainedQuiet: false } },
  },
  {
    name: 'no-stuck',
    description: "no stuck-value alarm (12 equal values in a row outside the range of the window's older half, or anywhere when that half never repeated a value)",
    detect: { components: { stuck: false } },
  },
  {
    name: 'no-period-stability',
    description: "data-driven period from the sinusoid's lag only, without the seasonal-fit check of nearby lags",
    detect: { components: { periodStability: false } },
  },
  {
    name: 'no-two-cycle-period',
    description: 'last-point period detection asks for 3 full cycles in the window, as the batch detectors do, instead of 2',
    detect: { components: { twoCyclePeriod: false } },
  },
  {
    name: 'no-sustained-error',
    description: 'no alarm when the mean of the recent one-step errors becomes unusual for the window (single-point deviations only)',
    detect: { components: { sustainedError: false } },
  },
  {
    name: 'no-seasonal-check',
    description: 'a period detected in the window is always used, even when the forecast without it errs clearly less',
    detect: { components: { seasonalCheck: false } },
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
    changePoint: { components: { refine: false } },
  },
  {
    name: 'cp-no-detrend',
    description: 'changepoint gradients over the error without its robust straight line removed',
    changePoint: { components: { detrend: false } },
  },
  {
    name: 'cp-no-split-trend',
    description: 'changepoint splits tested as a step against a level only, not against a curve within the segment',
    changePoint: { components: { splitTrend: false } },
  },
];
