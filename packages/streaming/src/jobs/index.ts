// Detection jobs: the port and its adapters (README in docs/jobs.md).
export * from './contract.js';
export { createMemoryJobStore } from './memory.js';
export { createDuckDbJobStore, type DuckDbJobStoreOptions } from './duckdb.js';
export { createClickHouseJobStore, type ClickHouseJobStoreOptions } from './clickhouse.js';
