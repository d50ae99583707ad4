import { describe, expect, it } from 'vitest';
import { regimeSpans, resultsToCsv, resultsToJson, viewFromChangePoints, viewFromDetection, viewFromMachineVerdict, viewFromResults } from '../web/results.js';

const points = [
  { timestamp: '2025-06-01T10:00:00.000Z', value: 1 },
  { timestamp: '2025-06-01T10:01:00.000Z', value: 9 },
  { timestamp: '2025-06-01T10:02:00.000Z', value: 1 },
];

const entire = {
  period: 0,
  expectedValues: [1, 1, 1],
  upperMargins: [0.5, 0.5, 0.5],
  lowerMargins: [0.25, 0.25, 0.25],
  isAnomaly: [false, true, false],
  isPositiveAnomaly: [false, true, false],
  isNegativeAnomaly: [false, false, false],
  severity: [0, 0.8, 0],
};

describe('result views', () => {
  it('turns an entire detection into rows with the band and the flagged indices', () => {
    const view = viewFromDetection(points, entire);
    expect(view.anomalyIndices).toEqual([1]);
    expect(view.changePointIndices).toEqual([]);
    expect(view.rows[1]).toMatchObject({ index: 1, value: 9, expected: 1, lower: 0.75, upper: 1.5, isAnomaly: true, severity: 0.8, regime: null });
  });

  it('keeps the native detection regimes, energies and z-scores', () => {
    const view = viewFromDetection(points, {
      ...entire,
      regimes: ['HEALTHY', 'SHOCK', 'SHOCK'],
      energies: [0, 0.5, 0.1],
      z_scores: [0, 9, 2],
      embeddings: null,
      model_version: 'm',
      engine: 'generic',
      machine_id: null,
      baseline_id: null,
      inference_time_ms: 1,
    });
    expect(view.rows.map((row) => [row.regime, row.energy, row.zScore])).toEqual([
      ['HEALTHY', 0, 0],
      ['SHOCK', 0.5, 9],
      ['SHOCK', 0.1, 2],
    ]);
    expect(regimeSpans(view.rows)).toEqual([{ regime: 'SHOCK', start: 1, end: 2 }]);
  });

  it('marks changepoints with their confidence', () => {
    const view = viewFromChangePoints(points, { period: 0, isChangePoint: [false, false, true], confidenceScores: [0.1, 0.2, 0.9] });
    expect(view.changePointIndices).toEqual([2]);
    expect(view.rows[2]).toMatchObject({ isChangePoint: true, confidence: 0.9, expected: null });
  });

  it('reads stored results', () => {
    const view = viewFromResults([
      {
        timestamp: '2025-06-01T10:00:00.000Z', value: 5, expected_value: 4, upper_margin: 1, lower_margin: 2, is_anomaly: true,
        is_positive_anomaly: true, is_negative_anomaly: false, severity: 0.3, energy: null, z_score: null, regime: 'UNKNOWN', model_version: 'm',
      },
    ]);
    expect(view.rows[0]).toMatchObject({ lower: 2, upper: 5, isAnomaly: true, regime: 'UNKNOWN' });
    expect(view.anomalyIndices).toEqual([0]);
  });
});

describe('regimeSpans', () => {
  it('joins runs of one marked regime and leaves HEALTHY and UNKNOWN out', () => {
    const rows = ['HEALTHY', 'ACTIVE', 'ACTIVE', 'TRANSITION', 'UNKNOWN', 'SHOCK'].map((regime, index) => ({
      ...viewFromChangePoints([{ value: 0 }], { period: 0, isChangePoint: [false], confidenceScores: [0] }).rows[0]!,
      index,
      regime,
    }));
    expect(regimeSpans(rows)).toEqual([
      { regime: 'ACTIVE', start: 1, end: 2 },
      { regime: 'TRANSITION', start: 3, end: 3 },
      { regime: 'SHOCK', start: 5, end: 5 },
    ]);
  });
});

describe('downloads', () => {
  it('writes one CSV row per point, empty cells where the mode has no value', () => {
    const csv = resultsToCsv(viewFromDetection(points, entire)).split('\n');
    expect(csv[0]).toBe('index,timestamp,value,expected_value,lower_bound,upper_bound,is_anomaly,is_positive_anomaly,is_negative_anomaly,severity,is_change_point,confidence,regime,energy,z_score');
    expect(csv[2]).toBe('1,2025-06-01T10:01:00.000Z,9,1,0.75,1.5,true,true,false,0.8,false,,,,');
    expect(csv).toHaveLength(5);
  });

  it('writes JSON with the request and the flagged indices', () => {
    const json = JSON.parse(resultsToJson(viewFromDetection(points, entire), { mode: 'entire', sensitivity: 95 }));
    expect(json.request).toEqual({ mode: 'entire', sensitivity: 95 });
    expect(json.anomaly_indices).toEqual([1]);
    expect(json.rows).toHaveLength(3);
  });
});

describe('viewFromMachineVerdict', () => {
  it("charts the machine's score with its band 0 to the threshold, its flags and regimes", () => {
    const machine = {
      model: 'gaussian-drift' as const,
      sensitivity: 95,
      threshold: 2.5,
      score: [1, 3, 5, 2],
      is_anomaly: [false, true, true, false],
      severity: [0, 1 - 2.5 / 3, 0.5, 0],
      contributions: { a: [0.5, 2, 4, 1], b: [0.5, 1, 1, 1] },
      episodes: [
        { start: 1, end: 2, start_timestamp: null, end_timestamp: null, peak: 2, peak_score: 5, severity: 0.5, channels: [{ channel: 'a', share: 0.75 }], closed: false },
      ],
    };
    const view = viewFromMachineVerdict(['t0', 't1', 't2', 't3'], machine, ['HEALTHY', 'ACTIVE', 'ACTIVE', 'HEALTHY']);
    expect(view.anomalyIndices).toEqual([1, 2]);
    expect(view.rows[2]).toMatchObject({ index: 2, timestamp: 't2', value: 5, expected: 0, lower: 0, upper: 2.5, isAnomaly: true, isPositiveAnomaly: true, severity: 0.5, regime: 'ACTIVE' });
    expect(view.rows[0]).toMatchObject({ isAnomaly: false, severity: 0, regime: 'HEALTHY' });
  });
});
