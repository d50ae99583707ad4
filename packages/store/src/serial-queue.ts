// Runs async tasks one after another. DuckDB allows one writer and a connection must not run two
// statements at once, so every operation of the embedded store goes through one queue.
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  /** Number of tasks queued or running. */
  get size(): number {
    return this.pending;
  }

  run<T>(task: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const result = this.tail.then(task);
    // The chain must survive a failed task; the caller still sees the failure through `result`.
    this.tail = result.then(
      () => {
        this.pending -= 1;
      },
      () => {
        this.pending -= 1;
      },
    );
    return result;
  }

  /** Resolves when everything queued so far has finished. */
  async drain(): Promise<void> {
    while (this.pending > 0) {
      await this.tail;
    }
  }
}
