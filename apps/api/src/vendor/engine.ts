// The slice of the detection engine the vendor routes call. Kept as an interface so tests can
// put a recording or failing engine behind the real routes; the app always gets the real one.
import {
  detectChangePointSeries,
  detectEntireSeries,
  detectLastPoint,
  parseIsoTimestamp,
  type ChangePointOptions,
  type ChangePointResult,
  type DetectOptions,
  type EntireResult,
  type LastResult,
  type SeriesInput,
} from '@adp/detection';

export interface VendorEngine {
  /** Epoch milliseconds of an ISO 8601 date-time, or null when the text is not one. */
  parseIsoTimestamp(text: string): number | null;
  detectEntireSeries(input: SeriesInput, opts: DetectOptions): EntireResult;
  detectLastPoint(input: SeriesInput, opts: DetectOptions): LastResult;
  detectChangePointSeries(input: SeriesInput, opts: ChangePointOptions): ChangePointResult;
}

export const detectionEngine: VendorEngine = {
  parseIsoTimestamp,
  detectEntireSeries,
  detectLastPoint,
  detectChangePointSeries,
};
