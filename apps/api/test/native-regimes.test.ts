// machineRegimes (machines/regimes.ts) on a stand-in model whose energy has a window, so a spike
// echoes into later points as the learned model's does: the echo check's model call (the points
// it asks for, the scaling it uses) and its failure.
import { describe, expect, it } from 'vitest';
import { robustNormalisation, type EnergyResult, type Normalisation } from '@adp/model';
import { zScoresOf } from '@adp/regimes';
import { AppError } from '../src/errors.js';
import type { EnergyOptions, NativeModel } from '../src/machines/model.js';
import { machineRegimes } from '../src/machines/regimes.js';
import type { MachinePredictor } from '../src/machines/service.js';

const REACH = 64;

/** energy[t] = the largest ((v - center) / scale)^2 in t's 64-point window (0 for the first 32 points). */
function echoingModel(fail = false): NativeModel & { calls: EnergyOptions[] } {
  const calls: EnergyOptions[] = [];
  return {
    modelVersion: 'echo-1',
    calls,
    async energies(values, options = {}): Promise<EnergyResult> {
      calls.push(options);
      if (fail && options.points !== undefined) throw new Error('the graph failed');
      const normalisation = options.normalisation ?? robustNormalisation(values);
      const out = new Float64Array(values.length);
      for (let t = 32; t < values.length; t++) {
        for (let k = Math.max(0, t - REACH + 1); k <= t; k++) {
          out[t] = Math.max(out[t]!, (((values[k] ?? 0) - normalisation.center) / normalisation.scale) ** 2);
        }
      }
      return { energies: out, embeddings: null, normalisation };
    },
    fineTune: () => Promise.reject(new Error('not used')),
    close: async () => undefined,
  };
}

function predictor(normalisation: Normalisation | null): MachinePredictor {
  return {
    weights: null,
    normalisation,
    machineModel: null,
    levelModel: null,
    baseline: {
      orgId: 'org_default',
      machineId: 'm-1',
      baselineId: 'bl_m-1',
      label: null,
      granularity: null,
      sensitivity: null,
      stats: { energyMean: 1, energyStd: 1, energyP99: 3, numWindows: 100, seriesLength: 400 },
      fineTuneStats: { status: 'skipped', finalLoss: null, epochsRun: 0, epochsMax: 0, earlyStopped: false, windows: 0, durationSeconds: 0 },
      normalisation,
      createdAt: new Date(0),
      updatedAt: new Date(0),
    },
  };
}

/** A smooth signal around 50 (scaled by 5: energies below 1.5) with a spike at `spike`. */
function series(spike: number): number[] {
  return Array.from({ length: 300 }, (_, i) => 50 + 5 * Math.sin(i / 9) + ((i * 7) % 5) / 10 + (i === spike ? 60 : 0));
}

async function regimesOf(model: NativeModel, values: number[], normalisation: Normalisation | null) {
  const { energies } = await model.energies(values, normalisation ? { normalisation } : {});
  return machineRegimes({ model, predictor: predictor(normalisation), values, zScores: zScoresOf(energies, 1, 1), changePoints: null });
}

describe('machineRegimes', () => {
  it('asks the model for the echo points only, scaled as the series was, and reads the spike alone SHOCK', async () => {
    const model = echoingModel();
    const values = series(150);
    const regimes = await regimesOf(model, values, { center: 50, scale: 5 });
    expect(model.calls).toHaveLength(2);
    expect(Array.from(model.calls[1]!.points ?? [])).toEqual(Array.from({ length: REACH }, (_, i) => 151 + i));
    expect(model.calls[1]!.normalisation).toEqual({ center: 50, scale: 5 });
    expect(regimes[150]).toBe('SHOCK');
    expect(regimes.filter((regime) => regime !== 'HEALTHY')).toEqual(['SHOCK']);
  });

  it("without a stored normalisation, scales the repaired series by the series' own (as the first run did)", async () => {
    const model = echoingModel();
    const values = series(150);
    const regimes = await regimesOf(model, values, null);
    expect(model.calls[1]!.normalisation).toEqual(robustNormalisation(values));
    expect(regimes[150]).toBe('SHOCK');
  });

  it('makes no second model call without a spike', async () => {
    const model = echoingModel();
    const regimes = await regimesOf(model, series(-1), { center: 50, scale: 5 });
    expect(model.calls).toHaveLength(1);
    expect(new Set(regimes)).toEqual(new Set(['HEALTHY']));
  });

  it('a model failure in the echo check is a retriable ModelUnavailable', async () => {
    const caught = await regimesOf(echoingModel(true), series(150), { center: 50, scale: 5 }).catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(AppError);
    expect(caught).toMatchObject({ code: 'ModelUnavailable', statusCode: 503 });
  });
});
