// The baselines of the series a worker sees: read from the store on first sight, decoded once
// (a fine-tuned predictor is about 1.9 MB), kept in a bounded LRU, read again after `refreshMs`
// in case a change notification was missed, and dropped at once when one arrives. Each key has a
// generation that a drop bumps (`GenerationalCache`), so a read that raced a drop does not put
// the old baseline back.
import type { ShapeReferenceData } from '@adp/detection';
import { baselineLevelModel } from '@adp/machine';
import { decodePredictorWeights, type Normalisation, type PredictorWeights } from '@adp/model';
import type { BaselineRecord, Store } from '@adp/store';
import { GenerationalCache } from '@adp/streaming';
import { machineModelOf, type MachineModelOf } from './machine-verdicts.js';

export interface SeriesBaseline {
  readonly baselineId: string;
  /** When the baseline was last written: a re-read that finds the same one keeps what was decoded and fitted. */
  readonly updatedAtMs: number;
  /** Fine-tuned predictor; null for a statistics-only baseline (the generic predictor is used). */
  readonly weights: PredictorWeights | null;
  /** The scaling the predictor was tuned with; null = the series' own robust scaling. */
  readonly normalisation: Normalisation | null;
  readonly energyMean: number;
  readonly energyStd: number;
  /** The baseline's sensitivity, used instead of the worker's default when set. */
  readonly sensitivity: number | null;
  /** The baseline's healthy shapes, which the learned scores add to the z-scores; null: none kept. */
  readonly shapeReference: ShapeReferenceData | null;
  /** A multi-channel machine's joint model of its channels; null: none (a single series, a channel, an older baseline). */
  readonly machine: MachineModelOf | null;
  /** A single series' level model (its flags hold while it stays away, level-hold.ts); null: none. */
  readonly level: MachineModelOf | null;
}

interface Entry {
  readonly baseline: SeriesBaseline | null;
  readonly loadedAtMs: number;
}

export function toSeriesBaseline(record: BaselineRecord): SeriesBaseline {
  return {
    baselineId: record.baselineId,
    updatedAtMs: record.updatedAt.getTime(),
    weights: record.predictorWeights === null ? null : decodePredictorWeights(record.predictorWeights),
    normalisation: record.normalisation,
    energyMean: record.stats.energyMean,
    energyStd: record.stats.energyStd,
    sensitivity: record.sensitivity,
    shapeReference: record.shapeReference ?? null,
    machine: record.machineModel ? machineModelOf(record.machineModel, record.updatedAt.getTime(), record.sensitivity) : null,
    level: levelModelOf(record),
  };
}

function levelModelOf(record: BaselineRecord): MachineModelOf | null {
  const model = baselineLevelModel(record);
  return model === null ? null : { model, updatedAtMs: record.updatedAt.getTime(), sensitivity: record.sensitivity };
}

export class BaselineCache {
  private readonly entries: GenerationalCache<Entry>;
  private readonly loading = new Map<string, Promise<SeriesBaseline | null>>();

  constructor(
    private readonly store: Pick<Store, 'getBaseline'>,
    maxEntries: number,
    private readonly refreshMs: number,
    private readonly now: () => number,
  ) {
    this.entries = new GenerationalCache(maxEntries);
  }

  /** The series' baseline (null: none). Store failures reject (the batch is retried). */
  async get(orgId: string, seriesId: string): Promise<SeriesBaseline | null> {
    const key = `${orgId}/${seriesId}`;
    const entry = this.entries.peek(key);
    if (entry && this.now() - entry.loadedAtMs < this.refreshMs) return this.entries.get(key)!.baseline;
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight;
    const generation = this.entries.generation(key);
    const load = (async () => {
      try {
        const record = await this.store.getBaseline(orgId, seriesId);
        // The periodic re-read mostly finds the baseline unchanged: its decoded predictor and its
        // fitted level model (tens of ms for a long reference) are kept rather than made again.
        const before = this.entries.peek(key)?.baseline ?? null;
        const unchanged = record !== null && before !== null && before.baselineId === record.baselineId && before.updatedAtMs === record.updatedAt.getTime();
        const baseline = record === null ? null : unchanged ? before : toSeriesBaseline(record);
        this.entries.setIfCurrent(key, generation, { baseline, loadedAtMs: this.now() });
        return baseline;
      } finally {
        this.loading.delete(key);
      }
    })();
    this.loading.set(key, load);
    return load;
  }

  /** Forgets the machine's baseline and those of its channels (`<machine>:<channel>`). */
  drop(orgId: string, machineId: string): number {
    const key = `${orgId}/${machineId}`;
    const channelPrefix = `${key}:`;
    const ofMachine = (cached: string): boolean => cached.startsWith(channelPrefix);
    // Loads under way for the machine's channels must not put what they read back either.
    for (const loadingKey of [...this.loading.keys()]) {
      if (!ofMachine(loadingKey)) continue;
      this.entries.replace(loadingKey, undefined);
      this.loading.delete(loadingKey);
    }
    this.loading.delete(key);
    return this.entries.drop(key, ofMachine);
  }

  get size(): number {
    return this.entries.size;
  }
}
