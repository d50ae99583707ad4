// A baselined machine's regimes for POST /v1/detect: the series' energy z-scores with spikes'
// echoes taken out (@adp/regimes' echo check, which asks the machine's model for the energies of
// the points after a spike on the repaired series), then the regime rules. The streaming worker
// judges its windows the same way (packages/stream-worker/src/worker.ts).
import { detectChangePointSeries, type SeriesInput } from '@adp/detection';
import { robustNormalisation, WINDOW_POINTS } from '@adp/model';
import { classifyRegimes, echoFreeZScores, zScoresOf, type Regime } from '@adp/regimes';
import { toModelAppError, type NativeModel } from './model.js';
import type { MachinePredictor } from './service.js';

export interface MachineRegimesInput {
  readonly model: NativeModel;
  readonly predictor: MachinePredictor;
  readonly values: readonly number[];
  /** The series' z-scores against the baseline. */
  readonly zScores: ArrayLike<number>;
  /** The engine's changepoint flags; null when it has none. */
  readonly changePoints: readonly boolean[] | null;
}

export async function machineRegimes(input: MachineRegimesInput): Promise<Regime[]> {
  const { model, predictor, values, zScores, changePoints } = input;
  const { energyMean, energyStd } = predictor.baseline.stats;
  // The repaired series is scaled as the series itself was (a baseline without a normalisation
  // scales each series by its own), so the two runs differ in the repaired values only.
  const normalisation = predictor.normalisation ?? robustNormalisation(values);
  const judged = await echoFreeZScores({
    zScores,
    values,
    warmupPoints: WINDOW_POINTS,
    reach: WINDOW_POINTS,
    repairedZScores: async (repaired, points) => {
      try {
        const { energies } = await model.energies(repaired, {
          ...(predictor.weights ? { weights: predictor.weights } : {}),
          normalisation,
          points,
        });
        return zScoresOf(energies, energyMean, energyStd);
      } catch (cause) {
        throw toModelAppError(cause, 'computing energies');
      }
    },
  });
  // The first WINDOW_POINTS windows are partly padding: their energies are not comparable.
  return classifyRegimes({ zScores: judged, changePoints, warmupPoints: WINDOW_POINTS });
}

/** Changepoint flags for the regime rules; a series the changepoint detector refuses has none. */
export function changePointsOf(input: SeriesInput, period: number): boolean[] | null {
  try {
    return detectChangePointSeries(input, { period }).isChangePoint;
  } catch {
    return null;
  }
}
