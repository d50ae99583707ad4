// The rows of `npm run eval` that measure what ships, each with the product's defaults
// (`STREAM_DEFAULTS` of @adp/detection) and nothing taken from NAB's scoring rules:
//
//  (a) `shipped:stream`: the streaming worker's judge as the worker runs it (judgeStreamFollowing:
//      window 720, or 4 periods + 1 once its verdicts find a longer period, past range over 8,640
//      points, every point judged from the 12th on);
//  (b) `shipped:last-client`: a client of last/detect sending the suggested window and the past
//      range (last-client.ts), judged by the function the route calls;
//  (c) `shipped:entire`: entire-series detection per file, in requests of at most 8,640 rows
//      (batch.ts), as a batch user of entire/detect gets it;
//
// and the window rows: a last/detect client that sends fixed windows (720, 1,441, 8,640 points)
// instead of the suggested one, each with the past range of the points it keeps, so the table
// shows how far the figure moves with the window a client chooses, and beside them the vendor's
// shorter suggestion (4 periods + 1) that the service no longer makes.
import { STREAM_DEFAULTS } from '@adp/detection';
import { REQUEST_POINTS, requestFlags } from './batch.js';
import type { StreamingDetector } from './detectors.js';
import { type EngineApi, engineStreamingDetector, SHIPPED_STREAM, type StreamSettings } from './engine.js';
import { lastDetectClient } from './last-client.js';

export interface ShippedRow {
  readonly id: string;
  /** The table's row label. */
  readonly name: string;
  readonly description: string;
}

/** The headline rows, in table order. */
export const HEADLINE_ROWS: readonly ShippedRow[] = [
  {
    id: 'shipped:stream',
    name: `(a) streaming worker, defaults (window ${STREAM_DEFAULTS.windowPoints} or 4 periods + 1, past ${STREAM_DEFAULTS.memoryPoints})`,
    description:
      "the worker's following judge (judgeStreamFollowing) with the worker's default window and memory, sensitivity and maxAnomalyRatio: the window grows to 4 periods + 1 once its verdicts find a longer period; no period given; points judged from the 12th on",
  },
  {
    id: 'shipped:last-client',
    name: '(b) last/detect client (suggestedWindow + pastRange)',
    description:
      'one detectLastPoint call per row: the first at the 12th row with all 12 points, then the newest suggestedWindow points of the previous answer (at least 12, at most 8,640 and what the client holds), with pastRange over the kept 8,640 points older than that window',
  },
  {
    id: 'shipped:entire',
    name: '(c) entire-series detection per file',
    description: `detectEntireSeries with the endpoint's defaults on each file, cut into equal consecutive requests of at most ${REQUEST_POINTS} rows`,
  },
];

/**
 * The window robustness row: a last/detect client sending these windows; `suggested` is row (b)
 * itself, which sends the window the previous answer suggests.
 */
export const ROBUSTNESS_WINDOWS = [STREAM_DEFAULTS.windowPoints, 1441, 'suggested', 8640] as const;
export type RobustnessWindow = (typeof ROBUSTNESS_WINDOWS)[number];

/** The row id of a robustness window (the suggested window is row (b)). */
export function windowRowId(window: RobustnessWindow): string {
  return window === 'suggested' ? 'shipped:last-client' : `window:${window}`;
}

/** The window rows besides row (b): fixed windows. */
export const WINDOW_ROWS: readonly ShippedRow[] = ROBUSTNESS_WINDOWS.filter((w): w is number => w !== 'suggested').map((window) => ({
  id: windowRowId(window),
  name: `last/detect client, fixed window ${window}`,
  description: `a client of last/detect sending the newest ${window} points for every row and the past range of the ${STREAM_DEFAULTS.memoryPoints} it keeps (detectStream: detectLastPoint over each window), whatever period the answers find`,
}));

/** The vendor's suggestion (4 periods + 1), a reference beside the window row, not in its spread. */
export const VENDOR_WINDOW_ROW: ShippedRow = {
  id: 'window:vendor',
  name: "last/detect client, the vendor's suggested window",
  description: `a last/detect client sending the vendor's suggestedWindow for the period detected in the file's first ${STREAM_DEFAULTS.windowPoints} points (4 periods + 1, or 1441 without a period)`,
};

export const SHIPPED_ROWS: readonly ShippedRow[] = [...HEADLINE_ROWS, ...WINDOW_ROWS, VENDOR_WINDOW_ROW];


/**
 * The streaming settings of a fixed window row ('vendor': the vendor's suggestion): exact
 * last-point detection over that window, with the past range of the kept points (the suggested
 * window is row (b), `lastDetectClient`).
 */
export function windowSettings(window: number | 'vendor'): StreamSettings {
  const fixed = { ...SHIPPED_STREAM, judge: { kind: 'exact' } } as const;
  if (window === 'vendor') return { ...fixed, window: { kind: 'vendor-at', points: STREAM_DEFAULTS.windowPoints } };
  return { ...fixed, window: { kind: 'fixed', points: window } };
}

/**
 * The detector of a shipped row, with a per-file plan for results.json where there is one;
 * `sensitivity` other than the default only for the sensitivity sweep.
 */
export function shippedDetector(
  api: EngineApi,
  id: string,
  sensitivity: number = STREAM_DEFAULTS.sensitivity,
): { detector: StreamingDetector; planOf?: () => unknown } {
  const row = SHIPPED_ROWS.find((r) => r.id === id);
  if (row === undefined) throw new RangeError(`unknown row ${id}`);
  if (id === 'shipped:last-client') {
    const detect = api.detectLastPoint;
    if (detect === undefined) throw new TypeError('this engine has no detectLastPoint');
    const detector = lastDetectClient(
      detect,
      {
        sensitivity,
        maxAnomalyRatio: STREAM_DEFAULTS.maxAnomalyRatio,
        memoryPoints: STREAM_DEFAULTS.memoryPoints,
        minPoints: 12,
        maxPoints: REQUEST_POINTS,
      },
      row.name,
    );
    return { detector, planOf: () => detector.lastPlan() };
  }
  if (id === 'shipped:entire') {
    const detect = api.detectEntireSeries;
    if (detect === undefined) throw new TypeError('this engine has no detectEntireSeries');
    const options = { sensitivity, maxAnomalyRatio: STREAM_DEFAULTS.maxAnomalyRatio };
    return {
      detector: {
        name: row.name,
        flags: (values) => requestFlags(values, { name: row.name, flags: (input) => detect(input, options).isAnomaly }),
      },
    };
  }
  const settings =
    id === 'shipped:stream'
      ? SHIPPED_STREAM
      : windowSettings(id === VENDOR_WINDOW_ROW.id ? 'vendor' : (ROBUSTNESS_WINDOWS.find((w) => windowRowId(w) === id) as number));
  const detector = engineStreamingDetector(
    api,
    { name: 'default', description: row.description },
    { ...settings, sensitivity },
    row.name,
  );
  return { detector, planOf: () => detector.lastPlan() };
}
