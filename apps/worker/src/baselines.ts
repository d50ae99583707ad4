// The baselines of the series a worker sees: read from the store on first sight, decoded once
// (a fine-tuned predictor is about 1.9 MB), kept in a bounded LRU, read again after `refreshMs`
// in case a change notification was missed, and dropped at once when one arrives. Each key has a
// generation that a drop bumps, so a read that raced a drop does not put the old baseline back.
import { decodePredictorWeights, type Normalisation, type PredictorWeights } from '@adp/model';
import type { BaselineRecord, Store } from '@adp/store';

export interface SeriesBaseline {
  readonly baselineId: string;
  /** Fine-tuned predictor; null for a statistics-only baseline (the generic predictor is used). */
  readonly weights: PredictorWeights | null;
  /** The scaling the predictor was tuned with; null = the series' own robust scaling. */
  readonly normalisation: Normalisation | null;
  readonly energyMean: number;
  readonly energyStd: number;
  /** The baseline's sensitivity, used instead of the worker's default when set. */
  readonly sensitivity: number | null;
}

interface Entry {
  readonly baseline: SeriesBaseline | null;
  readonly loadedAtMs: number;
}

export function toSeriesBaseline(record: BaselineRecord): SeriesBaseline {
  return {
    baselineId: record.baselineId,
    weights: record.predictorWeights === null ? null : decodePredictorWeights(record.predictorWeights),
    normalisation: record.normalisation,
    energyMean: record.stats.energyMean,
    energyStd: record.stats.energyStd,
    sensitivity: record.sensitivity,
  };
}

export class BaselineCache {
  private readonly entries = new Map<string, Entry>();
  private readonly generations = new Map<string, number>();
  private readonly loading = new Map<string, Promise<SeriesBaseline | null>>();

  constructor(
    private readonly store: Pick<Store, 'getBaseline'>,
    private readonly maxEntries: number,
    private readonly refreshMs: number,
    private readonly now: () => number,
  ) {}

  /** The series' baseline (null: none). Store failures reject (the batch is retried). */
  async get(orgId: string, seriesId: string): Promise<SeriesBaseline | null> {
    const key = `${orgId}/${seriesId}`;
    const entry = this.entries.get(key);
    if (entry && this.now() - entry.loadedAtMs < this.refreshMs) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry.baseline;
    }
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight;
    const generation = this.generations.get(key) ?? 0;
    const load = (async () => {
      try {
        const record = await this.store.getBaseline(orgId, seriesId);
        const baseline = record ? toSeriesBaseline(record) : null;
        if ((this.generations.get(key) ?? 0) === generation) this.put(key, { baseline, loadedAtMs: this.now() });
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
    let dropped = 0;
    const bump = (k: string) => this.generations.set(k, (this.generations.get(k) ?? 0) + 1);
    bump(key);
    this.loading.delete(key);
    for (const cached of [...this.entries.keys()]) {
      if (cached === key || cached.startsWith(channelPrefix)) {
        this.entries.delete(cached);
        if (cached !== key) bump(cached);
        dropped++;
      }
    }
    return dropped;
  }

  get size(): number {
    return this.entries.size;
  }

  private put(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }
}
