// What the harness runs: streaming anomaly detectors (NAB) and change-point detectors (TCPD).
// Each is a pure function of the values; the engine and the reference detectors plug in alike.

/**
 * Flags one row per input row. Row i must be judged only from rows 0..i (the row itself against
 * a model of the rows before it): no look-ahead. Timestamps (epoch ms, one per row) are there
 * for detectors that read the data's spacing; most ignore them.
 */
export interface StreamingDetector {
  readonly name: string;
  flags(values: readonly number[], timestampsMs?: readonly number[]): boolean[];
}

/** Returns 0-based change-point indices of a whole series (offline, as the endpoint works). */
export interface ChangePointDetector {
  readonly name: string;
  changePoints(values: readonly number[]): number[];
}
