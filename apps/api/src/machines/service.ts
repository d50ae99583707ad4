// Per-machine baselines: fine-tuning orchestration, persistence and the predictor cache.
//
// Baseline writes (and deletes) for one machine run one at a time, in arrival order, so two
// concurrent calls end in one whole baseline (the later one's) instead of a mix of weights from
// one and statistics from the other. Fine-tuning runs in the model's worker thread; the event
// loop only waits for it. Detection never waits for a baseline write: it reads the last committed
// baseline.
//
// The machine inventory (list and status) merges two sources: the platform store (baselines,
// synchronous detections) and, where one is injected, the streaming ResultStore (machines that
// sent telemetry, with per-machine aggregates of their stored results). A machine known only from
// its results is listed too. If the ResultStore cannot answer, the inventory answers 503 rather
// than a list that silently leaves those machines out.
import type { BaselineFineTuneStats, BaselineRecord, MachineDetection, MachineStatusRecord, MachineSummary, Store } from '@adp/store';
import { decodePredictorWeights, encodePredictorWeights, type Normalisation, type PredictorWeights } from '@adp/model';
import { AppError, ERRORS } from '../errors.js';
import { givenEnergyStats, heldOutEnergyStats } from './energy-stats.js';
import { KeyedSerialiser } from './keyed-serialiser.js';
import type { ModelHolder } from './model.js';
import { GenerationalCache, type ResultStore, type StoredMachineSummary } from '@adp/streaming';

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
  /**
   * The streaming results, for the telemetry part of the inventory. Absent: no machine has a
   * telemetry summary (`telemetry` null everywhere) and only the store's machines are listed.
   */
  readonly results?: Pick<ResultStore, 'machines'>;
}

/** One machine of the inventory: what the store knows (nulls when it knows nothing) plus its telemetry summary. */
export interface MachineListing {
  readonly machineId: string;
  readonly baselineCreatedAt: Date | null;
  readonly numWindows: number | null;
  readonly label: string | null;
  /** Aggregates of the machine's stored streaming results; null when it has none. */
  readonly telemetry: StoredMachineSummary | null;
}

/** A machine's status: the store's record (null for a machine known only from its results) and its telemetry summary. */
export interface MachineInventoryStatus {
  readonly record: MachineStatusRecord | null;
  readonly telemetry: StoredMachineSummary | null;
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
  private readonly cache: GenerationalCache<MachinePredictor>;

  constructor(private readonly options: BaselineServiceOptions) {
    this.cache = new GenerationalCache(options.cacheSize);
  }

  /**
   * Fine-tunes on healthy `values`, measures the fine-tuned energies on the held-out tail the fit
   * did not train on, and stores the baseline.
   */
  fromSeries(orgId: string, settings: BaselineSettings, values: readonly number[]): Promise<BaselineRecord> {
    return this.writes.run(cacheKey(orgId, settings.machineId), async () => {
      const model = await this.options.model.get();
      const tuned = await model.fineTune(values);
      const { energies } = await model.energies(values, { weights: tuned.weights, normalisation: tuned.normalisation });
      const stats = heldOutEnergyStats(energies, tuned.heldOutFrom);
      // Every energy, not only the held-out ones the statistics use: a series the model cannot
      // score anywhere is out of range as a whole.
      const finite = Array.prototype.every.call(energies, (energy: number) => Number.isFinite(energy));
      if (!finite || ![stats.energyMean, stats.energyStd, stats.energyP99].every(Number.isFinite)) {
        // As POST /v1/detect answers for such values: their energies overflow (a reading of 1e100
        // beside readings near 1 is 1e100 scales out).
        throw new AppError(ERRORS.InvalidSeries, "The series' values are out of the learned model's range (energy overflow).");
      }
      const record = await this.options.store.upsertBaseline(orgId, {
        ...settings,
        baselineId: baselineIdOf(settings.machineId),
        stats,
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

  /**
   * The store's machines and the machines with stored results, merged by id, ascending by id
   * (code-unit order, as both stores sort). Rejects with 503 ServiceUnavailable when the results
   * store cannot answer.
   */
  async listMachines(orgId: string): Promise<MachineListing[]> {
    const [known, stored] = await Promise.all([this.options.store.listMachines(orgId), this.storedMachines(orgId)]);
    const telemetry = new Map(stored.map((summary) => [summary.machineId, summary]));
    const listed: MachineListing[] = known.map((machine: MachineSummary) => ({
      machineId: machine.machineId,
      baselineCreatedAt: machine.baselineCreatedAt,
      numWindows: machine.numWindows,
      label: machine.label,
      telemetry: telemetry.get(machine.machineId) ?? null,
    }));
    const inStore = new Set(known.map((machine) => machine.machineId));
    for (const summary of stored) {
      if (inStore.has(summary.machineId)) continue;
      listed.push({ machineId: summary.machineId, baselineCreatedAt: null, numWindows: null, label: null, telemetry: summary });
    }
    return listed.sort((a, b) => (a.machineId < b.machineId ? -1 : a.machineId > b.machineId ? 1 : 0));
  }

  /**
   * The store's status record and the telemetry summary of one machine; null when neither source
   * knows it. Rejects with 503 ServiceUnavailable when the results store cannot answer.
   */
  async machineStatus(orgId: string, machineId: string): Promise<MachineInventoryStatus | null> {
    const [record, stored] = await Promise.all([this.options.store.machineStatus(orgId, machineId), this.storedMachines(orgId)]);
    const telemetry = stored.find((summary) => summary.machineId === machineId) ?? null;
    if (record === null && telemetry === null) return null;
    return { record, telemetry };
  }

  /** Whether the machine has stored streaming results; false when the results store cannot tell. */
  async hasStoredResults(orgId: string, machineId: string): Promise<boolean> {
    const stored = await this.storedMachines(orgId).catch(() => []);
    return stored.some((summary) => summary.machineId === machineId);
  }

  /** The organization's machines with stored results (none without a results store). */
  private async storedMachines(orgId: string): Promise<readonly StoredMachineSummary[]> {
    const results = this.options.results;
    if (!results) return [];
    try {
      return await results.machines(orgId);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'The results store cannot be reached right now. Retry shortly.', { cause });
    }
  }

  /**
   * Forgets the machine's cached predictor because another replica changed its baseline. Bumps the
   * generation, so a load that started before this cannot put the old predictor back.
   */
  dropCached(orgId: string, machineId: string): void {
    this.cache.drop(cacheKey(orgId, machineId));
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
