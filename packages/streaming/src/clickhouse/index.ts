// @adp/streaming/clickhouse: what @adp/store's ClickHouse adapters share with the ones here (the
// migration runner over schemas/clickhouse/, identifier checks, the server's error code), without
// loading the buses.
export {
  clickHouseServerCode,
  DEFAULT_CLICKHOUSE_MIGRATIONS_DIR,
  runClickHouseMigrations,
  type MigrationReport,
  type RunClickHouseMigrationsOptions,
} from './migrations.js';
export { sqlIdentifier } from './identifiers.js';
