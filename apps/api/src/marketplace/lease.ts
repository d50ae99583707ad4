// The lease the hourly metering export runs under, so that with several API replicas one exports
// at a time: in Redis (REDIS_URL) when there is one, else in the store. A lost race, an
// unreachable Redis or store all answer "not acquired": the export is retried on a later tick.
import { randomUUID } from 'node:crypto';
import type { LeaseStore } from '@adp/store';
import type { RedisConnection } from '../tenancy/redis-client.js';

export interface HeldLease {
  /** Frees the lease if this holder still has it (never one another holder took after expiry). */
  release(): Promise<void>;
}

export interface ExportLease {
  /** The lease for `ttlMs`, or null when another holder has it or the backend cannot answer. */
  acquire(ttlMs: number): Promise<HeldLease | null>;
}

/** Deletes the key only while it still holds our token: an expired lease taken over is left alone. */
const RELEASE_SCRIPT = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

export class RedisExportLease implements ExportLease {
  constructor(
    private readonly redis: RedisConnection,
    private readonly key: string,
  ) {}

  async acquire(ttlMs: number): Promise<HeldLease | null> {
    const token = randomUUID();
    const reply = await this.redis.set(this.key, token, { NX: true, PX: ttlMs });
    if (reply !== 'OK') return null;
    return {
      release: async () => {
        await this.redis.eval(RELEASE_SCRIPT, { keys: [this.key], arguments: [token] });
      },
    };
  }
}

export class StoreExportLease implements ExportLease {
  constructor(
    private readonly leases: LeaseStore,
    private readonly name: string,
    private readonly nowMs: () => number,
  ) {}

  async acquire(ttlMs: number): Promise<HeldLease | null> {
    const holder = randomUUID();
    if (!(await this.leases.tryAcquire(this.name, holder, ttlMs, this.nowMs()))) return null;
    return { release: () => this.leases.release(this.name, holder) };
  }
}
