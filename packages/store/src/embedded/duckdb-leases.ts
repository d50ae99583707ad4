// Leases in the embedded database (table `leases`, migration 8). The read and the write of one
// acquisition run as one task on the store's serial queue, so two callers never both take a lease.
import type { EmbeddedAccess } from './duckdb-database.js';
import { validateLease, type LeaseStore } from '../leases.js';

export class DuckDBLeaseStore implements LeaseStore {
  constructor(private readonly access: EmbeddedAccess) {}

  tryAcquire(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean> {
    try {
      validateLease('tryAcquire', name, holder, ttlMs, nowMs);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('tryAcquire', async (connection) => {
      const reader = await connection.runAndReadAll('SELECT holder, expires_ms FROM leases WHERE name = $1', [name]);
      const row = reader.getRowObjects()[0];
      if (row !== undefined && String(row['holder']) !== holder && Number(row['expires_ms']) > nowMs) return false;
      await connection.run('INSERT OR REPLACE INTO leases (name, holder, expires_ms) VALUES ($1, $2, $3)', [name, holder, BigInt(nowMs + ttlMs)]);
      return true;
    });
  }

  release(name: string, holder: string): Promise<void> {
    try {
      validateLease('release', name, holder);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.access.run('release', async (connection) => {
      await connection.run('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
    });
  }
}
