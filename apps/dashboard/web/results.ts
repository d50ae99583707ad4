// One shape for what a chart and a table show, whichever route produced it (entire detection,
// the native per-point detection, changepoints, or a machine's stored results), and the CSV and
// JSON a user downloads. Pure: no DOM; unit-tested in ../test.
import type { ChangePointDetectResponse, DetectResponse, EntireDetectResponse, JobResultRowBody, MachineVerdictBody, ResultRowBody } from './api-types.js';
import type { SeriesPoint } from './csv.js';

export type DetectMode = 'entire' | 'streaming' | 'changepoint';

export interface ResultRow {
  /** Position in the uploaded series (or in the loaded results), from 0. */
  readonly index: number;
  readonly timestamp: string | null;
  readonly value: number;
  readonly expected: number | null;
  /** expected - lowerMargin and expected + upperMargin: the band of normal values. */
  readonly lower: number | null;
  readonly upper: number | null;
  readonly isAnomaly: boolean;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
  readonly severity: number | null;
  readonly isChangePoint: boolean;
  readonly confidence: number | null;
  readonly regime: string | null;
  readonly energy: number | null;
  readonly zScore: number | null;
}

export interface ResultView {
  readonly rows: readonly ResultRow[];
  /** Indices of the rows flagged as anomalies (the chart's red points, the table's rows). */
  readonly anomalyIndices: readonly number[];
  readonly changePointIndices: readonly number[];
}

const EMPTY_ROW = {
  expected: null,
  lower: null,
  upper: null,
  isAnomaly: false,
  isPositiveAnomaly: false,
  isNegativeAnomaly: false,
  severity: null,
  isChangePoint: false,
  confidence: null,
  regime: null,
  energy: null,
  zScore: null,
} as const;

/**
 * The view of a multivariate detection's machine verdict: each point's value is the machine's score
 * against the joint model of its channels, its band 0 to the threshold, its regime the machine's.
 */
export function viewFromMachineVerdict(timestamps: readonly (string | null)[], machine: MachineVerdictBody, regimes: readonly string[]): ResultView {
  return toView(
    machine.score.map((score, index) => ({
      ...EMPTY_ROW,
      index,
      timestamp: timestamps[index] ?? null,
      value: score,
      expected: 0,
      lower: 0,
      upper: machine.threshold,
      isAnomaly: machine.is_anomaly[index] === true,
      isPositiveAnomaly: machine.is_anomaly[index] === true,
      severity: machine.severity[index] ?? 0,
      regime: regimes[index] ?? null,
    })),
  );
}

/** The view of an entire-series detection (vendor route) or of POST /v1/detect (adds regimes, energies). */
export function viewFromDetection(points: readonly SeriesPoint[], response: EntireDetectResponse | DetectResponse): ResultView {
  const native = 'regimes' in response ? response : null;
  return toView(
    points.map((point, index) => {
      const expected = response.expectedValues[index] ?? null;
      const upperMargin = response.upperMargins[index] ?? null;
      const lowerMargin = response.lowerMargins[index] ?? null;
      return {
        ...EMPTY_ROW,
        index,
        timestamp: point.timestamp ?? null,
        value: point.value,
        expected,
        lower: expected !== null && lowerMargin !== null ? expected - lowerMargin : null,
        upper: expected !== null && upperMargin !== null ? expected + upperMargin : null,
        isAnomaly: response.isAnomaly[index] === true,
        isPositiveAnomaly: response.isPositiveAnomaly[index] === true,
        isNegativeAnomaly: response.isNegativeAnomaly[index] === true,
        severity: response.severity[index] ?? null,
        regime: native?.regimes[index] ?? null,
        energy: native?.energies?.[index] ?? null,
        zScore: native?.z_scores?.[index] ?? null,
      };
    }),
  );
}

export function viewFromChangePoints(points: readonly SeriesPoint[], response: ChangePointDetectResponse): ResultView {
  return toView(
    points.map((point, index) => ({
      ...EMPTY_ROW,
      index,
      timestamp: point.timestamp ?? null,
      value: point.value,
      isChangePoint: response.isChangePoint[index] === true,
      confidence: response.confidenceScores[index] ?? null,
    })),
  );
}

/** The fields a stored result row and a job's result row share: the value, its band and its flags. */
function bandRow(result: JobResultRowBody | ResultRowBody, index: number): ResultRow {
  return {
    ...EMPTY_ROW,
    index,
    timestamp: result.timestamp,
    value: result.value,
    expected: result.expected_value,
    lower: result.expected_value - result.lower_margin,
    upper: result.expected_value + result.upper_margin,
    isAnomaly: result.is_anomaly,
    isPositiveAnomaly: result.is_positive_anomaly,
    isNegativeAnomaly: result.is_negative_anomaly,
    severity: result.severity,
  };
}

/** A detection job's results (GET /v1/jobs/{id}/results, one series), pages concatenated. */
export function viewFromJobResults(results: readonly JobResultRowBody[]): ResultView {
  return toView(results.map(bandRow));
}

/** A machine's stored streaming results (GET /v1/machines/{id}/results), pages concatenated. */
export function viewFromResults(results: readonly ResultRowBody[]): ResultView {
  return toView(results.map((result, index) => ({ ...bandRow(result, index), regime: result.regime, energy: result.energy, zScore: result.z_score })));
}

function toView(rows: ResultRow[]): ResultView {
  return {
    rows,
    anomalyIndices: rows.filter((row) => row.isAnomaly).map((row) => row.index),
    changePointIndices: rows.filter((row) => row.isChangePoint).map((row) => row.index),
  };
}

export interface RegimeSpan {
  readonly regime: string;
  /** First and last row index of the run, inclusive. */
  readonly start: number;
  readonly end: number;
}

/** Runs of one regime other than HEALTHY and UNKNOWN: the coloured bands behind a chart. */
export function regimeSpans(rows: readonly ResultRow[]): RegimeSpan[] {
  const spans: RegimeSpan[] = [];
  let current: { regime: string; start: number; end: number } | null = null;
  for (const row of rows) {
    const regime = row.regime;
    const marked = regime !== null && regime !== 'HEALTHY' && regime !== 'UNKNOWN';
    if (current && (!marked || regime !== current.regime)) {
      spans.push(current);
      current = null;
    }
    if (marked && !current) current = { regime, start: row.index, end: row.index };
    else if (marked && current) current.end = row.index;
  }
  if (current) spans.push(current);
  return spans;
}

const CSV_COLUMNS = [
  'index',
  'timestamp',
  'value',
  'expected_value',
  'lower_bound',
  'upper_bound',
  'is_anomaly',
  'is_positive_anomaly',
  'is_negative_anomaly',
  'severity',
  'is_change_point',
  'confidence',
  'regime',
  'energy',
  'z_score',
] as const;

/** The results as CSV: one header row, one row per point, empty cells where a mode has no value. */
export function resultsToCsv(view: ResultView): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const row of view.rows) {
    const cells = [
      row.index,
      row.timestamp,
      row.value,
      row.expected,
      row.lower,
      row.upper,
      row.isAnomaly,
      row.isPositiveAnomaly,
      row.isNegativeAnomaly,
      row.severity,
      row.isChangePoint,
      row.confidence,
      row.regime,
      row.energy,
      row.zScore,
    ];
    lines.push(cells.map(csvCell).join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** The results as JSON: what was asked, the flagged indices, and every row. */
export function resultsToJson(view: ResultView, request: Readonly<Record<string, unknown>>): string {
  return `${JSON.stringify({ request, anomaly_indices: view.anomalyIndices, change_point_indices: view.changePointIndices, rows: view.rows }, null, 2)}\n`;
}

function csvCell(cell: string | number | boolean | null): string {
  if (cell === null) return '';
  const text = String(cell);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
