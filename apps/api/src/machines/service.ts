// Per-machine baselines: fine-tuning orchestration, persistence and the predictor cache.
//
// Baseline writes (and deletes) for one machine run one at a time, in arrival order, so two
// concurrent calls end in one whole baseline (the later one's) instead of a mix of weights from
// one and statistics from the other. Fine-tuning runs in the model's worker thread; the event
// loop only waits for it. Detection never waits for a baseline write: it reads the last committed
// baseline.
import type { BaselineFineTuneStats, BaselineRecord, MachineDetection, MachineStatusRecord, MachineSummary, Store } from '@adp/store';
import { decodePredictorWeights, encodePredictorWeights, type Normalisation, type PredictorWeights } from '@adp/model';
import { givenEnergyStats, seriesEnergyStats } from './energy-stats.js';
import { KeyedSerialiser } from './keyed-serialiser.js';
import type { ModelHolder } from './model.js';
import { PredictorCache } from './predictor-cache.js';

export interface BaselineServiceOptions {
  readonly store: Store;
  readonly model: ModelHolder;
  /** Most machines whose predictors stay loaded; 0 disables the cache. */
  readonly cacheSize: number;
  /**
   * Called after a baseline is created, replaced or deleted (once the store has it), so the other
   * replicas can drop their cached predictor. Awaited inside the write, so it runs before the next
   * write of the same machine; it must not reject (log instead).
   */
  readonly onChanged?: (orgId: string, machineId: string) => Promise<void>;
}

/** What a baseline request carries besides its data. */
export interface BaselineSettings {
  readonly machineId: string;
  readonly label: string | null;
  readonly granularity: string | null;
  readonly sensitivity: number | null;
}

/** A baseline without its weight bytes, plus the decoded predictor (null: statistics only). */
export interface MachinePredictor {
  readonly baseline: Omit<BaselineRecord, 'predictorWeights'>;
  readonly weights: PredictorWeights | null;
  readonly normalisation: Normalisation | null;
}

export function baselineIdOf(machineId: string): string {
  return `bl_${machineId}`;
}

function cacheKey(orgId: string, machineId: string): string {
  // JSON keeps the pair unambiguous whatever characters either part holds.
  return JSON.stringify([orgId, machineId]);
}

const SKIPPED_FINE_TUNE: BaselineFineTuneStats = Object.freeze({
  status: 'skipped',
  finalLoss: null,
  epochsRun: 0,
  epochsMax: 0,
  earlyStopped: false,
  windows: 0,
  durationSeconds: 0,
});

export class BaselineService {
  private readonly writes = new KeyedSerialiser();
  private readonly cache: PredictorCache<MachinePredictor>;

  constructor(private readonly options: BaselineServiceOptions) {
    this.cache = new PredictorCache(options.cacheSize);
  }

  /** Fine-tunes on healthy `values`, measures the fine-tuned energies and stores the baseline. */
  fromSeries(orgId: string, settings: BaselineSettings, values: readonly number[]): Promise<BaselineRecord> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const model = await this.options.model.get();
      const tuned = await model.fineTune(values);
      const { energies } = await model.energies(values, { weights: tuned.weights, normalisation: tuned.normalisation });
      const record = await this.options.store.upsertBaseline(orgId, {
        ...settings,
        baselineId: baselineIdOf(settings.machineId),
        stats: seriesEnergyStats(energies),
        fineTuneStats: { ...tuned.stats, finalLoss: Number.isFinite(tuned.stats.finalLoss) ? tuned.stats.finalLoss : null },
        predictorWeights: encodePredictorWeights(tuned.weights),
        normalisation: { center: tuned.normalisation.center, scale: tuned.normalisation.scale },
      });
      this.cache.replace(cacheKey(orgId, settings.machineId), toPredictor(record, tuned.weights));
      await this.options.onChanged?.(orgId, settings.machineId);
      return record;
    });
  }

  /** Stores statistics of energies the caller computed; detection keeps the generic predictor. */
  fromEnergies(orgId: string, settings: BaselineSettings, energies: readonly number[]): Promise<BaselineRecord> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const record = await this.options.store.upsertBaseline(orgId, {
        ...settings,
        baselineId: baselineIdOf(settings.machineId),
        stats: givenEnergyStats(energies),
        fineTuneStats: SKIPPED_FINE_TUNE,
        predictorWeights: null,
        normalisation: null,
      });
      this.cache.replace(cacheKey(orgId, settings.machineId), toPredictor(record, null));
      await this.options.onChanged?.(orgId, settings.machineId);
      return record;
    });
  }

  getBaseline(orgId: string, machineId: string): Promise<BaselineRecord | null> {
    return this.options.store.getBaseline(orgId, machineId);
  }

  listMachines(orgId: string): Promise<readonly MachineSummary[]> {
    return this.options.store.listMachines(orgId);
  }

  machineStatus(orgId: string, machineId: string): Promise<MachineStatusRecord | null> {
    return this.options.store.machineStatus(orgId, machineId);
  }

  /**
   * Forgets the machine's cached predictor because another replica changed its baseline. Bumps the
   * generation, so a load that started before this cannot put the old predictor back.
   */
  dropCached(orgId: string, machineId: string): void {
    this.cache.replace(cacheKey(orgId, machineId), undefined);
  }

  /** Whether the machine's predictor is loaded in memory now (for the status endpoint). */
  isLoaded(orgId: string, machineId: string): boolean {
    return this.cache.has(cacheKey(orgId, machineId));
  }

  /** Removes the machine, its baseline and counters; queued behind any baseline write in flight. */
  deleteMachine(orgId: string, machineId: string): Promise<{ deleted: boolean; baselineDeleted: boolean }> {
    const key = cacheKey(orgId, machineId);
    return this.writes.run(key, async () => {
      const result = await this.options.store.deleteMachine(orgId, machineId);
      this.cache.replace(key, undefined);
      if (result.deleted) await this.options.onChanged?.(orgId, machineId);
      return result;
    });
  }

  /** The machine's predictor for detection, from the cache or the store; null without a baseline. */
  async predictorFor(orgId: string, machineId: string): Promise<MachinePredictor | null> {
    const key = cacheKey(orgId, machineId);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const generation = this.cache.generation(key);
    const record = await this.options.store.getBaseline(orgId, machineId);
    if (!record) return null;
    const weights = record.predictorWeights === null ? null : decodePredictorWeights(record.predictorWeights);
    const predictor = toPredictor(record, weights);
    this.cache.setIfCurrent(key, generation, predictor);
    return predictor;
  }

  recordDetection(orgId: string, machineId: string, detection: MachineDetection): Promise<void> {
    return this.options.store.recordDetection(orgId, machineId, detection);
  }
}

function toPredictor(record: BaselineRecord, weights: PredictorWeights | null): MachinePredictor {
  const { predictorWeights: _bytes, ...baseline } = record;
  return { baseline, weights, normalisation: record.normalisation };
}
