// What both backends' databases share: close once (later operations refuse with STORE_CLOSED), and
// the failure text every adapter puts into its StoreErrors.
import { StoreError } from './errors.js';

export abstract class StoreDatabase {
  /** Set by close(); every operation checks it before it starts. */
  closed = false;
  private closing: Promise<void> | undefined;

  /** Flushes pending writes and releases the database, once; later calls wait for that. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
      this.closing = this.shutdown();
    }
    return this.closing;
  }

  protected abstract shutdown(): Promise<void>;
}

export function closedError(operation: string): StoreError {
  return new StoreError('STORE_CLOSED', operation, 'the store is closed');
}

export function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
