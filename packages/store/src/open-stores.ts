// The one place that picks the backend: the API, the worker and the tools open their stores here.
import { openClickHouseStore, type ClickHouseStoreOptions } from './clickhouse/clickhouse-store.js';
import { openEmbeddedStore } from './embedded/duckdb-store.js';
import type { Store } from './types.js';

export interface StoresConfig {
  /** Folder of the embedded database (`platform.duckdb`), used when `clickhouse` is absent. */
  readonly dataDir: string;
  /**
   * The scale-out configuration's ClickHouse (`url`, `database` and the options of
   * `openClickHouseStore`); absent: the embedded store. Every replica and worker on one database.
   */
  readonly clickhouse?: Omit<ClickHouseStoreOptions, 'now'>;
  /** Clock for timestamps and usage days (UTC). Default: the system clock. */
  readonly now?: () => Date;
}

/** Opens every port on the configured backend (creating and migrating its database when needed). */
export function openStores(config: StoresConfig): Promise<Store> {
  const clock = config.now === undefined ? {} : { now: config.now };
  return config.clickhouse
    ? openClickHouseStore({ ...config.clickhouse, ...clock })
    : openEmbeddedStore({ dataDir: config.dataDir, ...clock });
}
