// The learned side of a batch's series with a baseline: the model's energies of the new points
// (all such series in one onnxruntime call, energies.ts), their z-scores against the baseline,
// the regimes over the kept window and the new points, and the learned scores the verdict joins
// (z-scores plus the baseline's shape scores). The model is loaded on first use, once; a failed
// load is retried with the next batch.
import { detectChangePointSeries, learnedScores, trailingShapeScorer, type SeriesInput, type ShapeReferenceData, type TrailingShapeScorer } from '@adp/detection';
import { robustNormalisation, WINDOW_POINTS } from '@adp/model';
import { classifyRegimes, echoFreeZScores, zScoresOf } from '@adp/regimes';
import type { JudgedSeries } from './batch-judge.js';
import { batchEnergies, type EnergyRequest, type WorkerModel } from './energies.js';
import type { SeriesWindow } from './series-window.js';

/** Points of the window (and the new points after it) inside the model's warm-up: never elevated. */
function warmupPointsOf(window: SeriesWindow): number {
  const historyStart = window.seenPoints - window.values.length;
  return Math.max(0, WINDOW_POINTS - historyStart);
}

function seriesInput(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

export class LearnedStage {
  private model: Promise<WorkerModel> | undefined;
  /** One batch's inference at a time (see `add`). */
  private modelTurn: Promise<void> = Promise.resolve();
  /**
   * Per shape reference (one per baselined series, as long as its baseline is cached), the
   * scorer that carries the shape join on from the series' previous batch.
   */
  private readonly shapeScorers = new WeakMap<ShapeReferenceData, TrailingShapeScorer>();

  constructor(
    private readonly loadModelOnce: () => Promise<WorkerModel>,
    /** Whether the changepoint detector's flags feed the regimes (TRANSITION). */
    private readonly changePoints: boolean,
  ) {}

  /** The model, if a load was started (it may still be loading). */
  loaded(): Promise<WorkerModel> | undefined {
    return this.model;
  }

  private loadModel(): Promise<WorkerModel> {
    this.model ??= this.loadModelOnce().catch((error: unknown) => {
      this.model = undefined; // a failed load is retried with the next batch
      throw error;
    });
    return this.model;
  }

  private shapeScorerOf(reference: ShapeReferenceData): TrailingShapeScorer {
    let scorer = this.shapeScorers.get(reference);
    if (scorer === undefined) {
      scorer = trailingShapeScorer(reference);
      this.shapeScorers.set(reference, scorer);
    }
    return scorer;
  }

  /** Energies, z-scores and regimes of the series with a baseline; how long inference and regimes took, ms. */
  async add(judged: readonly JudgedSeries[]): Promise<{ inferenceMs: number; regimesMs: number }> {
    const withBaseline = judged.filter((j) => j.baseline !== null && j.newValues.length > 0);
    if (withBaseline.length === 0) return { inferenceMs: 0, regimesMs: 0 };
    const current = await this.loadModel();
    const requests: EnergyRequest[] = withBaseline.map((j) => ({
      context: j.window.values,
      newValues: j.newValues,
      weights: j.baseline!.weights,
      normalisation: j.baseline!.normalisation ?? robustNormalisation(j.window.values.concat(j.newValues)),
      historyIndex: j.window.seenPoints,
    }));
    // One batch's inference at a time: onnxruntime's threads are few (and the cores are shared),
    // so concurrent runs only interleave; in turn, each batch's time is its own.
    const turn = this.modelTurn;
    let release!: () => void;
    this.modelTurn = new Promise<void>((resolve) => (release = resolve));
    await turn;
    const started = performance.now();
    // Per series: the z-scores the regime rules judge, over the kept window and the new points.
    const judgedZ: Float64Array[] = [];
    let inferenceMs: number;
    try {
      const energies = await batchEnergies(current, requests);
      for (const [index, j] of withBaseline.entries()) {
        const baseline = j.baseline!;
        const energy = energies[index]!;
        const z = zScoresOf(energy, baseline.energyMean, baseline.energyStd);
        j.energies = energy;
        j.zScores = z;
        // The window's z-scores are kept as judged (echoes out); the new points' lose the echoes
        // of spikes within the model's window before them, as POST /v1/detect judges a series
        // (apps/api/src/machines/regimes.ts): one more model call for a series with such a spike.
        const windowLength = j.window.values.length;
        const request = requests[index]!;
        judgedZ.push(
          await echoFreeZScores({
            zScores: j.window.zScores.concat(Array.from(z)),
            values: j.window.values.concat(j.newValues),
            warmupPoints: warmupPointsOf(j.window),
            reach: WINDOW_POINTS,
            from: windowLength,
            repairedZScores: async (repaired) => {
              const [again] = await batchEnergies(current, [
                { ...request, context: repaired.slice(0, windowLength), newValues: repaired.slice(windowLength) },
              ]);
              const out = new Float64Array(repaired.length).fill(Number.NaN);
              out.set(zScoresOf(again!, baseline.energyMean, baseline.energyStd), windowLength);
              return out;
            },
          }),
        );
      }
      inferenceMs = performance.now() - started;
    } finally {
      release();
    }
    const regimesStarted = performance.now();
    withBaseline.forEach((j, index) => {
      // Regimes over the kept window and the new points: an episode that began in an earlier
      // batch is still one episode. Points of the model's warm-up are never elevated.
      const windowLength = j.window.values.length;
      const allZ = judgedZ[index]!;
      j.judgedZScores = Array.from(allZ.subarray(windowLength));
      const allValues = j.window.values.concat(j.newValues);
      let changePoints: boolean[] | null = null;
      if (this.changePoints && allValues.length >= 12) {
        try {
          const period = j.detections[j.detections.length - 1]?.period ?? 0;
          changePoints = detectChangePointSeries(seriesInput(allValues), { period }).isChangePoint;
        } catch {
          changePoints = null; // a window the changepoint detector refuses has none
        }
      }
      const regimes = classifyRegimes({ zScores: allZ, changePoints, warmupPoints: warmupPointsOf(j.window) });
      j.regimes = regimes.slice(windowLength);
      // The learned scores the verdict joins: the z-scores the rows report, plus each point's shape
      // score where the baseline keeps shapes (the subsequence ending at the point: a stream has
      // nothing after it), as POST /v1/detect scores a request's points.
      const reference = j.baseline!.shapeReference;
      j.learnedScores =
        reference === null ? Float64Array.from(j.zScores!) : learnedScores(j.zScores!, this.shapeScorerOf(reference).scores(allValues, windowLength));
    });
    return { inferenceMs, regimesMs: performance.now() - regimesStarted };
  }
}
