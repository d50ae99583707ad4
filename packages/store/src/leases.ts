// The leases port: a named lease held by one holder until it expires or is released, so that a
// periodic job with several replicas runs on one at a time. Adapter: embedded/duckdb-leases.ts
// (the ClickHouse store has none: it cannot compare-and-set; scale-out deployments lease in Redis).
import { StoreError } from './errors.js';

export interface LeaseStore {
  /**
   * Takes the lease `name` for `holder` until `nowMs + ttlMs` when it is free, expired, or already
   * held by `holder` (then extended); answers whether `holder` holds it now. Atomic.
   */
  tryAcquire(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /** Frees the lease when `holder` still holds it; a lease taken over since is left alone. */
  release(name: string, holder: string): Promise<void>;
}

export function validateLease(operation: string, name: string, holder: string, ttlMs = 1, nowMs = 0): void {
  if (!name || !holder || !Number.isSafeInteger(ttlMs) || ttlMs <= 0 || !Number.isSafeInteger(nowMs)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, 'a lease needs a name, a holder, a positive whole ttl and a whole clock');
  }
}
