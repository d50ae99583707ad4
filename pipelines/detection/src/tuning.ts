// Every tuned constant of the engine, in one table: its value, what it does and what it was
// tuned on. The modules that use a constant bind it by the same name from here; none keeps a
// value of its own. Not in the table: mathematical constants (MAD_TO_SIGMA, the normal tail's
// coefficients), the vendor's fixed values (minimum series length, default windows, granularity
// steps and candidate cycles, changepoint defaults) and memory or speed knobs that change no
// result (buffer slack, sorted-run widths).
//
// "NAB dev" is the 35-file NAB split in ../shared/datasets/nab_dev, scored as a whole by the
// evaluation (eval/README.md); "TCPD" the 25 univariate TCPD series in ../shared/datasets/tcpd.
// The current figures are in docs/evaluation.md, measured alternatives in docs/experiments.md, the
// history in CHANGELOG.md.

/** One tuned constant. */
export interface Tuned {
  readonly value: number;
  /** What it does, in a line. */
  readonly does: string;
  /** What it was tuned on (and the candidates tried, where there was a sweep). */
  readonly tunedOn: string;
  /**
   * What the leave-one-category-out folds of `npm run eval:tune` say of it, per row it is checked
   * on (row (a): the worker's judge; row (c): entire-series detection): `shipped`, `moves to`,
   * `leans to` or `split` (docs/evaluation.md, "Constants chosen by folds"; eval/tune.json).
   */
  readonly folds?: string;
}

const NAB = 'NAB dev (35 files), whole set';
const NAB_BATCH = 'NAB dev (35 files), whole set, through entire/detect (npm run eval:batch)';
const TUNE_FOLDS =
  "NAB dev through row (a), the worker's judge with its defaults, leave-one-category-out folds over its 4 categories, one constant at a time (npm run eval:tune: each fold's choice, eval/tune.json)";
const NAB_BATCH_FOLDS =
  'NAB dev through entire/detect, leave-one-category-out folds over its 4 categories (npm run eval:batch -- --folds: the grid, each fold\'s choice and held-out score)';

export const TUNING = {
  // Last-point detection: the model and the band.
  LAST_POINT_MIN_CYCLES: {
    value: 2,
    does: 'fewest full cycles a data-driven period needs in a last-point history (the batch detectors need 3)',
    tunedOn: `${NAB}; against 3 (the no-two-cycle-period variant)`,
    folds: 'row (a): shipped',
  },
  FEW_CYCLES: {
    value: 3,
    does: "a seasonal last-point history with fewer cycles than this is deseasonalised with each point's phase value over the other cycles (leave one out), not with the phase median the point is part of",
    tunedOn: 'not tuned: the fewest cycles the batch detectors need for a period; with two, a phase median is the mean of its two values and hides half of their difference',
  },
  MAX_PERIOD_RECHECK_POINTS: {
    value: 100,
    does: 'longest stretch detectStream goes without re-detecting the period (else a tenth of the window)',
    tunedOn: NAB,
  },
  FORECAST_POINTS: {
    value: 31,
    does: "newest points the forecast's Theil–Sen line runs through (two trend windows)",
    tunedOn: NAB,
    folds: 'row (a): shipped',
  },
  LINE_MEDIAN_PENALTY: {
    value: 1.57,
    does: "variance penalty of a median against a mean in the forecast line's widening sqrt(1 + 1.57/R + 1.1·d²/Sxx)",
    tunedOn: 'not tuned: the asymptotic efficiency of the median (π/2)',
  },
  LINE_SLOPE_PENALTY: {
    value: 1.1,
    does: "variance penalty of the Theil–Sen slope against least squares in the forecast line's widening",
    tunedOn: 'not tuned: the asymptotic efficiency of Theil–Sen under Gaussian noise',
  },
  ERROR_LEVEL_POINTS: {
    value: 16,
    does: "points before a history point whose median (calibration, refractory) or mean (sustained alarm) is its one-step level",
    tunedOn: NAB,
    folds: 'row (a): split',
  },
  LAST_POINT_BAND_FACTOR: {
    value: 1.45,
    does: 'the last-point band in noise scales is this × the batch band z(sensitivity) (about 6 scales at 95)',
    tunedOn: `${NAB}; among 1, 1.2, 1.45, 1.7, 2`,
    folds: 'row (a): split',
  },
  SEASONAL_SCALE_RATIO: {
    value: 0.7,
    does: "a detected period is dropped when the forecast without it has a noise scale under this share of the seasonal one's, weighed on the whole history and cycle by cycle (cycleMedianScale)",
    tunedOn: `${NAB}; among 1, 0.9, 0.8, 0.7, 0.6, 0.5 (a plateau from 0.8 to 0.5)`,
    folds: 'row (a): shipped',
  },
  CALIBRATION_POINTS: {
    value: 100,
    does: 'newest one-step errors whose spread calibrates (widens) the noise scale',
    tunedOn: NAB,
    folds: 'row (a): split',
  },
  SIDE_MIN_ERRORS: {
    value: 20,
    does: 'fewest calibration errors from which the band gets its own spread on each side',
    tunedOn: NAB,
    folds: 'row (a): shipped',
  },
  // The refractory rule and the echo rule.
  REFRACTORY_SENSITIVITY: {
    value: 95,
    does: "the refractory rule's fixed reference band is the last-point band at this sensitivity (the service's default)",
    tunedOn: "not tuned: the service's default sensitivity, fixed so that sensitivity acts monotonically",
  },
  REFRACTORY_POINTS: {
    value: 150,
    does: 'one-step errors before the judged point that the refractory rule looks back over, whatever the window',
    tunedOn: `${TUNE_FOLDS}: every fold chose it among 90, 120, 135, 150, 165, 180 (120 before, a sixth of the worker's 720-point window); fixed in points, not a share of the window: the window row in docs/evaluation.md, "Window robustness"`,
    folds: 'row (a): shipped',
  },
  LEARNED_ONSET_POINTS: {
    value: 120,
    does: "points before a streamed point within which a learned excursion (beyond the learned band) makes it part of that excursion, not a new one (the worker's baselined verdict)",
    tunedOn: "not tuned: the engine's refractory stretch (REFRACTORY_POINTS) when the worker's learned verdict was written; kept when that stretch went to 150, which the folds chose on the engine's verdicts alone",
  },
  NEW_EVENT_FACTOR: {
    value: 20,
    does: 'a deviation this many times the largest error of the event under way is a new event, reported despite the refractory rule',
    tunedOn: `${NAB}; among 8, 10, 20, 40`,
    folds: 'row (a): leans to 30',
  },
  NEW_EVENT_RISE_POINTS: {
    value: 3,
    does: 'newest one-step errors that belong to an event still rising (no new-event exception while its largest error is among them)',
    tunedOn: `${NAB}; among 0 (no such rule), 1, 2, 3, 5 (a plateau from 2)`,
    folds: 'row (a): shipped',
  },
  ECHO_POINTS: {
    value: 3,
    does: 'points before the judged one whose band report makes a point outside its band an echo, not reported again',
    tunedOn: `${NAB}; among 1, 3, 5`,
    folds: 'row (a): shipped',
  },
  // The sustained-error alarm.
  SUSTAINED_POINTS: {
    value: 30,
    does: 'one-step errors averaged for the sustained-error alarm (its stretch)',
    tunedOn: NAB,
    folds: 'row (a): shipped',
  },
  SUSTAINED_Z: {
    value: 5,
    does: "standard deviations above the window's usual stretch mean at which the sustained-error alarm fires",
    tunedOn: `${NAB}; among 4.5, 5, 6 (a narrow optimum)`,
    folds: 'row (a): split',
  },
  SUSTAINED_MIN_STRETCHES: {
    value: 6,
    does: 'fewest stretches of SUSTAINED_POINTS errors the sustained-error alarm needs (its reference)',
    tunedOn: `${NAB}; fewer fired on stationary noise while a window was filling`,
    folds: 'row (a): leans to 8',
  },
  SUSTAINED_QUIET_SHARE: {
    value: 0.1,
    does: "the sustained-error alarm's point must deviate from its forecast by at least this share of its band",
    tunedOn: `${NAB}; 0.05 to 0.3 all gained. ${TUNE_FOLDS}: every fold chose 0.2 (among 0.05, 0.1, 0.2) once REFRACTORY_POINTS was 150, not taken: the alarm fires once per rise, so a wider gate loses more rises (an oscillation of ±3 noise scales after 600 quiet points, 60 seeds: 46 caught without the gate, 41 at 0.1, 33 at 0.2) to remove 4 of NAB's false-positive rows`,
    folds: 'row (a): moves to 0.2 (not taken: see tunedOn)',
  },
  // The new-level alarm, the familiar-range and routine-miss rules, the stuck-value alarm.
  NEW_LEVEL_MARGIN: {
    value: 0.25,
    does: "a new level must lie beyond the range of the window's older points by this share of that range",
    tunedOn: `${NAB}; among 0.15, 0.2, 0.25, 0.3, 0.35 (a plateau)`,
    folds: 'row (a): split',
  },
  NEW_LEVEL_RECENT_SHARE: {
    value: 0.5,
    does: "share of the history, its newest points, that the new-level alarm's reference range leaves out",
    tunedOn: `${NAB}; among 1/3, 1/2, 2/3`,
    folds: 'row (a): leans to 0.333',
  },
  NEW_LEVEL_MIN_POINTS: {
    value: 100,
    does: 'fewest history points the new-level alarm (and the rules reading the older range) needs',
    tunedOn: NAB,
    folds: 'row (a): shipped',
  },
  MARGINAL_BAND_RATIO: {
    value: 1.5,
    does: 'a deviation under this many margins is marginal: the familiar-range and routine-miss rules may hold it back',
    tunedOn: `${NAB}; among 1.25, 1.5, 2, 2.5`,
    folds: 'row (a): split',
  },
  FAMILIAR_EDGE_SHARE: {
    value: 0.25,
    does: "a marginal miss deeper inside the older half's range than this share of it from both edges is familiar",
    tunedOn: `${NAB}; among 0.15, 0.2, 0.25, 0.3, 0.35`,
    folds: 'row (a): split',
  },
  ROUTINE_MISS_COUNT: {
    value: 8,
    does: 'a marginal miss is routine when at least this many window points jumped as far in their local noise',
    tunedOn: `${NAB}; among 3, 5, 8, 12 (the middle of the plateau)`,
    folds: 'row (a): shipped',
  },
  STUCK_POINTS: {
    value: 12,
    does: 'equal values in a row that make a stuck run (an hour of 5-minute points)',
    tunedOn: `${NAB}: the figures cannot choose it (two runs qualify); the delay it costs in npm run eval:inject`,
  },
  // The incremental streaming judge.
  DEFAULT_REFIT_POINTS: {
    value: 64,
    does: "points between refits of the judge's model (seasonal profile, noise scale)",
    tunedOn: `${NAB}, through the judge; among 8, 16, 32, 48, 64 (the same from 32 with near-decision refits)`,
  },
  DEFAULT_FULL_PERIOD_RECHECK_SHARE: {
    value: 0.5,
    does: 'once the window is full, the judge re-detects the period every this share of the window; a followed window (createFollowingJudge, followSuggestedWindow) is kept this share of itself before it may change',
    tunedOn: `${NAB}, through the judge; against 3/4 and 1 window and detectStream's rule`,
  },
  DEFAULT_ERROR_REFRESH_POINTS: {
    value: 8,
    does: "points for which the judge reuses the one-step errors' summaries before computing them again",
    tunedOn: `${NAB}, through the judge; among 4, 8, 16, 32 (32 drifted past the judge tests' tolerance)`,
  },
  FRESH_ERRORS_SHARE: {
    value: 0.5,
    does: 'a deviation beyond this share of the band always gets fresh one-step errors in the judge',
    tunedOn: NAB,
  },
  NEAR_BAND_SHARE: {
    value: 0.7,
    does: 'a deviation beyond this share of its stale-model margin is judged again on a model refitted on its own history',
    tunedOn: `${NAB}, through the judge, against detectStream`,
  },
  NEAR_SUSTAINED_SHARE: {
    value: 0.85,
    does: 'a sustained score above this share of SUSTAINED_Z is judged again on a refitted model',
    tunedOn: `${NAB}, through the judge; among 0.7, 0.8, 0.85, 0.9 (all the same)`,
  },
  SCORE_GATE_Z: {
    value: 2,
    does: "below this many standard deviations (the newest stretch against the last full pass's reference) the judge skips the sustained scores' full pass",
    tunedOn: `${NAB} and the streaming benchmark series: every flag the same`,
  },
  SCORE_GATE_AGE: {
    value: 32,
    does: "oldest reference (points) the judge's sustained-score gate may use",
    tunedOn: `${NAB} and the streaming benchmark series: every flag the same`,
  },
  // Entire-series detection.
  SHOULDER_QUANTILE: {
    value: 0.8,
    does: "quantile of |residual − median| that the entire series' shoulder scale reads",
    tunedOn: `${NAB_BATCH}; among 0.7, 0.75, 0.8, 0.85, 0.9`,
    folds: 'row (c): split',
  },
  PHASE_POOL_MIN_POINTS: {
    value: 30,
    does: "fewest residuals a seasonal phase's pool holds (its neighbours' added when the cycles are few)",
    tunedOn: NAB_BATCH,
    folds: 'row (c): leans to 15',
  },
  PHASE_MIN_CYCLES: {
    value: 4,
    does: 'fewest whole cycles for per-phase noise scales',
    tunedOn: NAB_BATCH,
    folds: 'row (c): leans to 3',
  },
  EXCURSION_REFERENCE_SHARE: {
    value: 0.1,
    does: 'share of the series the excursion reference (a centred median) spans, at least two periods',
    tunedOn: NAB_BATCH,
    folds: 'row (c): leans to 0.2',
  },
  EXCURSION_ENTRY_POINTS: {
    value: 2,
    does: 'points after a jump of the trend within which its excursion must begin',
    tunedOn: NAB_BATCH,
    folds: 'row (c): leans to 1',
  },
  EXCURSION_MAX_SHARE: {
    value: 0.05,
    does: 'most of the series that candidate excursions may cover together (beyond: none is reported)',
    tunedOn: NAB_BATCH,
    folds: 'row (c): shipped',
  },
  ROUTINE_EVENT_COUNT: {
    value: 12,
    does: 'an event (flags outside the band) is routine, and not reported, when at least this many other events of the series reach its peak (in margins)',
    tunedOn: `${NAB_BATCH_FOLDS}, jointly with EVENT_GAP_SHARE`,
    folds: 'row (c): shipped',
  },
  EVENT_GAP_SHARE: {
    value: 0.005,
    does: "share of the request's points (rounded) that may lie within the band between two flagged points of one event (a burst is one event)",
    tunedOn: `${NAB_BATCH_FOLDS}, jointly with ROUTINE_EVENT_COUNT`,
    folds: 'row (c): shipped',
  },
  // The model and the margins (every detector).
  NON_SEASONAL_TREND_WINDOW: {
    value: 15,
    does: 'running-median trend window of a non-seasonal series (bursts of up to 7 points ignored)',
    tunedOn: NAB,
    folds: "row (a): split; row (c): moves to 21 (not taken: a shared constant, and at 21 a quantized metric's entire-series noise scale collapses; docs/evaluation.md, Constants chosen by folds)",
  },
  SEASONAL_TREND_MIN_WINDOW: {
    value: 9,
    does: 'shortest trend window on a deseasonalised series (about one period, at least this)',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): shipped',
  },
  SEASONAL_TREND_MAX_WINDOW: {
    value: 25,
    does: 'longest trend window on a deseasonalised series (long periods still follow level changes)',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): split',
  },
  NARROWEST_Z: {
    value: 2.5,
    does: 'margin multiplier at sensitivity 100: z(s) = 2.5 + 0.5 × (100 − s)^0.75 robust standard deviations',
    tunedOn: "not tuned on a benchmark: chosen with the curve's shape for Gaussian noise (z(95) ≈ 4.17)",
  },
  // Period detection.
  MIN_SEASONAL_FIT: {
    value: 0.25,
    does: 'share of the detrended variance a seasonal profile must explain out of sample for its period to be accepted',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): shipped',
  },
  LONGER_PERIOD_GAIN: {
    value: 0.8,
    does: 'a longer candidate that is a multiple of a shorter one must leave under this share of its unexplained variance',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): shipped',
  },
  FUNDAMENTAL_TOLERANCE: {
    value: 0.05,
    does: "a divisor of the chosen lag whose fit is within this of the lag's replaces it (the fundamental)",
    tunedOn: NAB,
    folds: 'row (a): split; row (c): shipped',
  },
  MIN_DATA_PERIOD: {
    value: 3,
    does: 'smallest period the data-driven search reports',
    tunedOn: NAB,
  },
  MIN_PEAK_ACF: {
    value: 0.1,
    does: 'autocorrelation peaks lower than this are not period candidates',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): shipped',
  },
  PEAKS_TESTED: {
    value: 5,
    does: 'highest autocorrelation peaks that get a seasonal-fit test',
    tunedOn: NAB,
    folds: 'row (a): shipped; row (c): leans to 3',
  },
  // Changepoints.
  GRADIENT_PERCENTILE: {
    value: 0.95,
    does: "share of |gradients| a changepoint's must exceed (the seed's 95th percentile)",
    tunedOn: "not tuned: the seed's rule, kept; the segmentation test chooses among the points it admits (TCPD)",
  },
  MIN_CHANGE_WINDOW: {
    value: 5,
    does: "smallest default gradient window (the seed's max(period, 5))",
    tunedOn: "not tuned: the seed's rule, kept (TCPD)",
  },
  CHANGE_WINDOW_SHARE: {
    value: 1 / 20,
    does: 'the default gradient window is at most this share of the series, and the long-run noise is also measured at this scale',
    tunedOn: 'TCPD (25 univariate series), whole set',
  },
  WIDE_BLOCKS: {
    value: 8,
    does: "blocks per gradient window when a wide window's noise is estimated on block means",
    tunedOn: 'TCPD (25 univariate series), whole set, and the changepoint benchmark (speed)',
  },
  MAX_DIRECT_SPAN: {
    value: 128,
    does: 'longest gradient window whose noise is estimated point by point',
    tunedOn: 'TCPD (25 univariate series), whole set, and the changepoint benchmark (speed)',
  },
} as const satisfies Readonly<Record<string, Tuned>>;

export type TunedName = keyof typeof TUNING;
