// A bounded LRU of loaded baselines (the API's predictors, the worker's series baselines), with a
// generation per key so that a baseline write or delete, or its invalidation message, wins over a
// load that was already under way. A Map keeps insertion order, so re-inserting on every hit makes
// its first key the least recently used.
//
//   const generation = cache.generation(key);   // before an asynchronous load
//   const value = await load(key);
//   cache.setIfCurrent(key, generation, value);  // dropped if the key was replaced meanwhile
export class GenerationalCache<V> {
  private readonly entries = new Map<string, V>();
  private readonly generations = new Map<string, number>();

  /** `maxEntries` 0 or less caches nothing (generations are still kept). */
  constructor(readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  /** The cached value, made the most recently used. */
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** The cached value, without making it the most recently used. */
  peek(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** Whether the key is cached, without making it the most recently used. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The key's generation now; hand it back to `setIfCurrent` after an asynchronous load. */
  generation(key: string): number {
    return this.generations.get(key) ?? 0;
  }

  /** Caches `value` unless the key was replaced or dropped since `generation` was taken. */
  setIfCurrent(key: string, generation: number, value: V): void {
    if (this.generation(key) !== generation) return;
    this.put(key, value);
  }

  /** After a write: a newer generation, and the written value (or nothing, for a delete). */
  replace(key: string, value: V | undefined): void {
    this.generations.set(key, this.generation(key) + 1);
    this.entries.delete(key);
    if (value !== undefined) this.put(key, value);
  }

  /**
   * Drops `key` (a newer generation even when it was not cached) and every cached key that
   * `alsoDrop` selects (each to a newer generation too); returns how many cached entries went.
   */
  drop(key: string, alsoDrop: (cached: string) => boolean = () => false): number {
    let dropped = this.entries.has(key) ? 1 : 0;
    this.replace(key, undefined);
    for (const cached of [...this.entries.keys()]) {
      if (alsoDrop(cached)) {
        this.replace(cached, undefined);
        dropped++;
      }
    }
    return dropped;
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
