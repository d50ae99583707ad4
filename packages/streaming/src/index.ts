export * from './errors.js';
export * from './schemas.js';
export * from './avro.js';
export * from './rabin.js';
export * from './identifiers.js';
export * from './clickhouse-migrations.js';
export * from './contracts.js';
