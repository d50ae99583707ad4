// The learned model's energies for the new points of many series at once. The encoder is the same
// for every machine, so the segments of all series that share a predictor (every machine without
// fine-tuned weights shares the generic one) go through onnxruntime in one call: each segment is
// the series' own 64 preceding values and its new values, scaled by the series' own
// normalisation, laid end to end and run under the identity normalisation. A row of the model's
// window only reaches back 64 points, and the energy of a point only needs the previous point's
// embedding, so no segment sees another's values; where a series has fewer than 64 points of
// history the segment is padded with its first value, exactly as the model pads a series' start.
import { WARMUP_POINTS, WINDOW_POINTS, type Normalisation, type PredictorWeights } from '@adp/model';

/** The slice of the model runtime (@adp/model's ModelRuntime, or the API's NativeModel) the worker uses. */
export interface WorkerModel {
  /** Reported in each result's `model_version`. */
  readonly modelVersion: string;
  /**
   * With `points`, only those points' energies are needed (the model may leave the others 0): the
   * packaged runtime then encodes each point's window and the one before it, not the context's.
   */
  energies(
    values: ArrayLike<number>,
    options?: { weights?: PredictorWeights; normalisation?: Normalisation; points?: ArrayLike<number> },
  ): Promise<{ readonly energies: ArrayLike<number> }>;
}

export interface EnergyRequest {
  /** The values before the new ones, oldest first (only the last 64 are used). */
  readonly context: readonly number[];
  readonly newValues: readonly number[];
  /** Fine-tuned predictor; null = the generic one. */
  readonly weights: PredictorWeights | null;
  readonly normalisation: Normalisation;
  /** Index of newValues[0] in the series' whole history (energies are 0 before WARMUP_POINTS). */
  readonly historyIndex: number;
}

const IDENTITY: Normalisation = Object.freeze({ center: 0, scale: 1 });

/** Energies of each request's new values, in request order; one model call per distinct predictor. */
export async function batchEnergies(model: WorkerModel, requests: readonly EnergyRequest[]): Promise<Float64Array[]> {
  const out = new Array<Float64Array>(requests.length);
  const groups = new Map<PredictorWeights | null, number[]>();
  requests.forEach((request, index) => {
    const group = groups.get(request.weights);
    if (group) group.push(index);
    else groups.set(request.weights, [index]);
  });
  for (const [weights, indices] of groups) {
    let total = 0;
    for (const index of indices) total += WINDOW_POINTS + requests[index]!.newValues.length;
    const series = new Float64Array(total);
    const starts: number[] = [];
    // The new points past each series' warm-up: the only energies asked for.
    const points: number[] = [];
    let offset = 0;
    for (const index of indices) {
      const { context, newValues, normalisation, historyIndex } = requests[index]!;
      const kept = context.slice(-WINDOW_POINTS);
      const first = kept[0] ?? newValues[0] ?? 0;
      const scale = (value: number) => (value - normalisation.center) / normalisation.scale;
      for (let i = 0; i < WINDOW_POINTS - kept.length; i++) series[offset++] = scale(first);
      for (const value of kept) series[offset++] = scale(value);
      starts.push(offset);
      for (let j = 0; j < newValues.length; j++) {
        if (historyIndex + j >= WARMUP_POINTS) points.push(offset);
        series[offset++] = scale(newValues[j]!);
      }
    }
    // Every new point inside its warm-up: nothing to ask (their energies are 0 below).
    const { energies } =
      points.length === 0
        ? { energies: [] as ArrayLike<number> }
        : await model.energies(series, { ...(weights ? { weights } : {}), normalisation: IDENTITY, points });
    indices.forEach((index, k) => {
      const request = requests[index]!;
      const start = starts[k]!;
      const result = new Float64Array(request.newValues.length);
      for (let j = 0; j < result.length; j++) {
        result[j] = request.historyIndex + j < WARMUP_POINTS ? 0 : Number(energies[start + j] ?? 0);
      }
      out[index] = result;
    });
  }
  return out;
}
