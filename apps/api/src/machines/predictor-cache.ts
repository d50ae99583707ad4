// A bounded LRU of loaded predictors, keyed by organization and machine. A Map keeps insertion
// order, so re-inserting on every hit makes its first key the least recently used.
//
// Each key has a generation that baseline writes and deletes bump. A load that started before a
// bump must not put what it read into the cache, or a stale predictor would outlive the write.
export class PredictorCache<V> {
  private readonly entries = new Map<string, V>();
  private readonly generations = new Map<string, number>();

  constructor(readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** Whether the key is cached, without making it the most recently used. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The key's generation now; hand it back to `setIfCurrent` after an asynchronous load. */
  generation(key: string): number {
    return this.generations.get(key) ?? 0;
  }

  /** Caches `value` unless the key was written or deleted since `generation` was taken. */
  setIfCurrent(key: string, generation: number, value: V): void {
    if (this.generation(key) !== generation) return;
    this.put(key, value);
  }

  /** After a write: newer generation, and the written value (or nothing, for a delete). */
  replace(key: string, value: V | undefined): void {
    this.generations.set(key, this.generation(key) + 1);
    this.entries.delete(key);
    if (value !== undefined) this.put(key, value);
  }

  private put(key: string, value: V): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }
}
