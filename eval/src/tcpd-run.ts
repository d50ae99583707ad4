// Runs one change-point detector over the TCPD series and scores F1 and cover per series.
import type { ChangePointDetector } from './detectors.js';
import type { TcpdSeries } from './tcpd-data.js';
import { tcpdCover, tcpdF1 } from './tcpd-scorer.js';

export interface TcpdSeriesResult {
  readonly series: string;
  readonly nObs: number;
  readonly f1: number;
  readonly precision: number;
  readonly recall: number;
  readonly cover: number;
  readonly changePoints: readonly number[];
  /** Set when the detector threw: the series then scores 0 on both metrics (TCPDBench's rule). */
  readonly error?: string;
}

export interface TcpdDetectorResult {
  readonly detector: string;
  readonly elapsedMs: number;
  /** Arithmetic means over the series. */
  readonly f1: number;
  readonly cover: number;
  readonly series: readonly TcpdSeriesResult[];
  readonly errors: number;
}

export function runTcpd(series: readonly TcpdSeries[], detector: ChangePointDetector): TcpdDetectorResult {
  const started = performance.now();
  const results = series.map((s): TcpdSeriesResult => {
    try {
      const changePoints = detector.changePoints(s.values);
      const f = tcpdF1(s.annotations, changePoints);
      return {
        series: s.name,
        nObs: s.nObs,
        f1: f.f1,
        precision: f.precision,
        recall: f.recall,
        cover: tcpdCover(s.annotations, changePoints, s.nObs),
        changePoints,
      };
    } catch (err) {
      const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      return { series: s.name, nObs: s.nObs, f1: 0, precision: 0, recall: 0, cover: 0, changePoints: [], error };
    }
  });
  const mean = (pick: (r: TcpdSeriesResult) => number): number =>
    results.length === 0 ? Number.NaN : results.reduce((sum, r) => sum + pick(r), 0) / results.length;
  return {
    detector: detector.name,
    elapsedMs: Math.round(performance.now() - started),
    f1: mean((r) => r.f1),
    cover: mean((r) => r.cover),
    series: results,
    errors: results.filter((r) => r.error !== undefined).length,
  };
}
