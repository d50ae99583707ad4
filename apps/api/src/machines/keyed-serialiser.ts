// Runs tasks one at a time per key and in parallel across keys: two baseline calls for one machine
// queue behind each other (the last one wins, whole), while other machines go on.
export class KeyedSerialiser {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Tasks queued or running for `key`. */
  has(key: string): boolean {
    return this.tails.has(key);
  }

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    // Forget the key once its queue is empty, so the map does not grow with every machine ever seen.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
