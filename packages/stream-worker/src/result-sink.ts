// The result sink: one ClickHouse insert (and one Redis write of checkpoints) for the batches of several
// partitions that finish at about the same time. The bus hands each partition's batch to its own
// handler call and several run at once; without this each would pay its own insert round trip and
// leave its own part in ClickHouse (which wants few, large inserts). A handler hands over its rows
// and checkpoints and waits; the first hand-over of a round starts a short timer (`lingerMs`), and
// when it fires, or the round holds `maxRows`, the round is written: rows first, then
// checkpoints. Every handler of the round resolves when both are stored, or rejects with the same
// error, so each bus batch still commits only after its own rows and checkpoints are stored.
import type { CheckpointStore, ResultRow, ResultStore } from '@adp/streaming';

export interface ResultSinkOptions {
  /** How long the first hand-over of a round waits for others, ms. 0 = write at the next tick. */
  readonly lingerMs: number;
  /** A round is written at once when it holds this many rows. */
  readonly maxRows: number;
  /** Wraps the insert (a tracing span). */
  readonly aroundInsert?: (rows: number, insert: () => Promise<void>) => Promise<void>;
}

export interface StoreTimings {
  readonly insertMs: number;
  readonly checkpointMs: number;
  /** Batches written together in this round. */
  readonly batches: number;
}

interface Waiter {
  resolve(timings: StoreTimings): void;
  reject(error: unknown): void;
}

export class ResultSink {
  private rows: ResultRow[] = [];
  private checkpoints = new Map<string, Buffer>();
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly results: Pick<ResultStore, 'insert'>,
    private readonly checkpointStore: Pick<CheckpointStore, 'save'>,
    private readonly options: ResultSinkOptions,
  ) {}

  /** Resolves once `rows` and `checkpoints` (and those of the round's other batches) are stored. */
  store(rows: readonly ResultRow[], checkpoints: ReadonlyMap<string, Buffer>): Promise<StoreTimings> {
    return new Promise<StoreTimings>((resolve, reject) => {
      for (const row of rows) this.rows.push(row);
      // Series belong to one partition, so two batches of a round never share a key.
      for (const [key, value] of checkpoints) this.checkpoints.set(key, value);
      this.waiters.push({ resolve, reject });
      if (this.rows.length >= this.options.maxRows) {
        this.flush();
      } else if (!this.timer) {
        this.timer = setTimeout(() => this.flush(), this.options.lingerMs);
      }
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const rows = this.rows;
    const checkpoints = this.checkpoints;
    const waiters = this.waiters;
    this.rows = [];
    this.checkpoints = new Map();
    this.waiters = [];
    if (waiters.length === 0) return;
    void (async () => {
      try {
        const started = performance.now();
        if (rows.length > 0) {
          const insert = () => this.results.insert(rows);
          await (this.options.aroundInsert ? this.options.aroundInsert(rows.length, insert) : insert());
        }
        const inserted = performance.now();
        if (checkpoints.size > 0) await this.checkpointStore.save(checkpoints);
        const timings = { insertMs: inserted - started, checkpointMs: performance.now() - inserted, batches: waiters.length };
        for (const waiter of waiters) waiter.resolve(timings);
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    })();
  }
}
