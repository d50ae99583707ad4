// Worker checkpoints that survive a restart without Redis: the series windows in a DuckDB file of
// their own under the data directory (`checkpoints.duckdb`, beside `results.duckdb`), so the
// embedded worker of a restarted `npm start` resumes each machine's window instead of starting it
// afresh. A save is one transaction (all of a batch's windows or none); values are bound, never
// spliced into SQL. One statement at a time on the one connection.
import { DuckDBBlobValue } from '@duckdb/node-api';
import type { CheckpointStore } from '@adp/streaming';
import { embeddedUnavailable, openDuckDbFile, stagedUpsert } from './duckdb-file.js';
import { checkMachineRef, isCheckpointOfMachine } from '@adp/streaming/series-ids';

export interface DuckDbCheckpointStoreOptions {
  /** Directory of the file; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** Default `checkpoints.duckdb`. */
  readonly fileName?: string;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS checkpoints (
  key VARCHAR PRIMARY KEY,
  value BLOB NOT NULL,
  saved_at_ms BIGINT NOT NULL
)`;

/** Keys per statement (3 bound values each). */
const KEYS_PER_STATEMENT = 500;



export async function createDuckDbCheckpointStore(options: DuckDbCheckpointStoreOptions): Promise<CheckpointStore> {
  const file = await openDuckDbFile(options.dataDir, options.fileName ?? 'checkpoints.duckdb', SCHEMA, 'the checkpoint store');
  const { filePath, connection, serial, assertOpen } = file;
  const upsert = await stagedUpsert(
    file,
    'checkpoints',
    ['key', 'value', 'saved_at_ms'],
    'ON CONFLICT (key) DO UPDATE SET value = excluded.value, saved_at_ms = excluded.saved_at_ms',
  );

  return {
    async load(keys: readonly string[]): Promise<Map<string, Buffer>> {
      assertOpen();
      const found = new Map<string, Buffer>();
      if (keys.length === 0) return found;
      return serial(async () => {
        try {
          for (let start = 0; start < keys.length; start += KEYS_PER_STATEMENT) {
            const chunk = keys.slice(start, start + KEYS_PER_STATEMENT);
            const reader = await connection.runAndReadAll(
              `SELECT key, value FROM checkpoints WHERE key IN (${chunk.map((_, i) => `$${i + 1}`).join(', ')})`,
              chunk,
            );
            for (const row of reader.getRowObjects()) {
              const value = row['value'];
              if (value instanceof DuckDBBlobValue) found.set(String(row['key']), Buffer.from(value.bytes));
            }
          }
          return found;
        } catch (cause) {
          throw embeddedUnavailable(`loading ${keys.length} checkpoints from ${filePath}`, cause);
        }
      });
    },

    async save(entries: ReadonlyMap<string, Buffer>): Promise<void> {
      assertOpen();
      if (entries.size === 0) return;
      const all = [...entries];
      const savedAt = Date.now();
      await upsert((appender) => {
        for (const [key, value] of all) {
          appender.appendVarchar(key);
          appender.appendBlob(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
          appender.appendBigInt(BigInt(savedAt));
          appender.endRow();
        }
      }, `saving ${all.length} checkpoints into ${filePath}`);
    },

    async deleteMachine(orgId: string, machineId: string): Promise<number> {
      assertOpen();
      checkMachineRef(orgId, machineId, 'deleteMachine');
      return serial(async () => {
        try {
          // Every group's keys of the organization, then the exact check (series-ids.ts) in code.
          const reader = await connection.runAndReadAll('SELECT key FROM checkpoints WHERE contains(key, $1)', [`/${orgId}/`]);
          const keys = reader
            .getRowObjects()
            .map((row) => String(row['key']))
            .filter((key) => isCheckpointOfMachine(key, orgId, machineId));
          await connection.run('BEGIN TRANSACTION');
          for (let start = 0; start < keys.length; start += KEYS_PER_STATEMENT) {
            const chunk = keys.slice(start, start + KEYS_PER_STATEMENT);
            await connection.run(`DELETE FROM checkpoints WHERE key IN (${chunk.map((_, i) => `$${i + 1}`).join(', ')})`, chunk);
          }
          await connection.run('COMMIT');
          return keys.length;
        } catch (cause) {
          await connection.run('ROLLBACK').catch(() => undefined);
          throw embeddedUnavailable(`deleting the checkpoints of ${machineId}`, cause);
        }
      });
    },

    async ping(): Promise<void> {
      assertOpen();
    },

    close: () => file.close(),
  };
}
