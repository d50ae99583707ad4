// Group commit for one ClickHouse table. ClickHouse makes a part per insert and wants few, large
// inserts; the API wants each request's write durable before it answers. So rows that arrive while
// an insert is in flight wait for the next one, which takes them all, and consecutive inserts start at
// least `minIntervalMs` apart. An idle table inserts at once: the pause only bites under load, where
// it caps the table at 1000 / minIntervalMs inserts per second per process.
import { setTimeout as delay } from 'node:timers/promises';

type Row = Readonly<Record<string, unknown>>;

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class InsertBatcher {
  private rows: Row[] = [];
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private lastStartMs = Number.NEGATIVE_INFINITY;

  /**
   * @param write inserts one batch; a failure rejects every caller whose rows were in it. Never
   *   retried: a retry after a lost acknowledgement would write the rows twice.
   * @param minIntervalMs least time between the starts of two inserts, ms.
   * @param track receives the flush loop, so that the owner can wait for it on close.
   */
  constructor(
    private readonly write: (rows: readonly Row[]) => Promise<void>,
    private readonly minIntervalMs: number,
    private readonly track: (flush: Promise<void>) => void = () => undefined,
    private readonly clockMs: () => number = Date.now,
  ) {}

  /** Number of rows waiting for an insert. */
  get pending(): number {
    return this.rows.length;
  }

  /** Resolves once `rows` are in ClickHouse. */
  add(...rows: Row[]): Promise<void> {
    this.rows.push(...rows);
    const written = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.running) {
      this.running = this.flush();
      this.track(this.running);
    }
    return written;
  }

  private async flush(): Promise<void> {
    try {
      // Rows added in the same tick join the first insert.
      await Promise.resolve();
      while (this.rows.length > 0) {
        const wait = this.lastStartMs + this.minIntervalMs - this.clockMs();
        if (wait > 0) await delay(wait);
        const batch = this.rows;
        const waiters = this.waiters;
        this.rows = [];
        this.waiters = [];
        this.lastStartMs = this.clockMs();
        try {
          await this.write(batch);
          for (const waiter of waiters) waiter.resolve();
        } catch (err) {
          for (const waiter of waiters) waiter.reject(err);
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
