// The streaming defaults the product ships with, in one place: the worker's configuration
// defaults, the CLI's stream mode and the evaluation's streaming client all read them, so the
// figures `npm run eval` reports are those of what runs.
import { DEFAULT_MAX_ANOMALY_RATIO, DEFAULT_SENSITIVITY, MAX_SERIES_POINTS } from '@adp/domain';

export interface StreamDefaults {
  /**
   * Trailing window, the judged point included: each point is judged from the points before it
   * in this window. 720 points (12 hours of minutely data, 2.5 days of 5-minute data).
   */
  readonly windowPoints: number;
  /**
   * Points of a series' past a client keeps, the judged one included; the lowest and highest of
   * those older than the window are the request's past range. 8640, the most one last/detect
   * request may carry.
   */
  readonly memoryPoints: number;
  /** As the vendor's `sensitivity` default. */
  readonly sensitivity: number;
  /** As the vendor's `maxAnomalyRatio` default. */
  readonly maxAnomalyRatio: number;
}

export const STREAM_DEFAULTS: StreamDefaults = Object.freeze({
  windowPoints: 720,
  memoryPoints: MAX_SERIES_POINTS,
  sensitivity: DEFAULT_SENSITIVITY,
  maxAnomalyRatio: DEFAULT_MAX_ANOMALY_RATIO,
});
