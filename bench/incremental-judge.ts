// Streaming detection per point: the exact detectStream (every point's model refitted over its
// window) against the incremental judge the worker runs (judgeStream / createStreamJudge), on the
// benchmark's 5-minute series with a daily cycle, windows 720 and 1441, in one process, runs
// interleaved so both see the same machine load. Single-threaded: points/s is per core.
//
//   npx tsx bench/incremental-judge.ts            # 20,000 points per run, 3 runs each
//   npx tsx bench/incremental-judge.ts --quick    # 6,000 points, 1 run
import { detectStream, judgeStream, type LastResult, type SeriesInput } from '@adp/detection';
import { benchSeries } from './series.js';

const quick = process.argv.includes('--quick');
const POINTS = quick ? 6000 : 20_000;
const RUNS = quick ? 1 : 3;
const WINDOWS = [720, 1441] as const;
const OPTIONS = { sensitivity: 95, maxAnomalyRatio: 0.25 };

function input(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

function timed(fn: () => LastResult[]): { ms: number; records: LastResult[] } {
  const t0 = performance.now();
  const records = fn();
  return { ms: performance.now() - t0, records };
}

const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const series = benchSeries({ points: POINTS, period: 288, stepMs: 300_000, seed: 20240102, levelShiftFraction: 0.7 });
const warm = benchSeries({ points: 3000, period: 288, stepMs: 300_000, seed: 1 }).values;
const rows: Record<string, unknown>[] = [];
for (const windowPoints of WINDOWS) {
  const opts = { ...OPTIONS, windowPoints };
  detectStream(input(warm), opts);
  judgeStream(warm, opts);
  const exact: number[] = [];
  const incremental: number[] = [];
  const streamRecheck: number[] = [];
  let agreement = '';
  for (let run = 0; run < RUNS; run++) {
    const a = timed(() => detectStream(input(series.values), opts));
    const b = timed(() => judgeStream(series.values, opts));
    // The trade-off row: the period re-detected by detectStream's rule (every tenth of the
    // window, at most 100 points) also once the window is full, instead of every half window.
    const c = timed(() => judgeStream(series.values, { ...opts, fullPeriodRecheckShare: null }));
    exact.push(a.ms);
    incremental.push(b.ms);
    streamRecheck.push(c.ms);
    if (run === 0) {
      const flagsA = a.records.flatMap((r, i) => (r.isAnomaly ? [i] : []));
      const flagsB = b.records.flatMap((r, i) => (r.isAnomaly ? [i] : []));
      const common = flagsA.filter((i) => flagsB.includes(i)).length;
      agreement = `${flagsA.length} exact / ${flagsB.length} incremental flags, ${common} common`;
    }
  }
  const usExact = (median(exact) * 1000) / POINTS;
  const usIncremental = (median(incremental) * 1000) / POINTS;
  const usStreamRecheck = (median(streamRecheck) * 1000) / POINTS;
  rows.push({
    windowPoints,
    points: POINTS,
    runs: RUNS,
    exactUsPerPoint: Math.round(usExact * 10) / 10,
    exactPointsPerS: Math.round(1e6 / usExact),
    incrementalUsPerPoint: Math.round(usIncremental * 10) / 10,
    incrementalPointsPerS: Math.round(1e6 / usIncremental),
    speedup: Math.round((usExact / usIncremental) * 10) / 10,
    streamRecheckUsPerPoint: Math.round(usStreamRecheck * 10) / 10,
    streamRecheckSpeedup: Math.round((usExact / usStreamRecheck) * 10) / 10,
    agreement,
  });
}
console.log(
  '| window | exact µs/point | exact points/s | incremental µs/point | incremental points/s | speed-up | period re-detected as detectStream: µs/point, speed-up | flags (exact vs incremental) |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  console.log(
    `| ${r.windowPoints} | ${r.exactUsPerPoint} | ${r.exactPointsPerS} | ${r.incrementalUsPerPoint} | ${r.incrementalPointsPerS} | ${r.speedup}× | ${r.streamRecheckUsPerPoint}, ${r.streamRecheckSpeedup}× | ${r.agreement} |`,
  );
}
