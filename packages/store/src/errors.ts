// Typed failures of the store. The app turns these into its own coded errors at the HTTP edge; the
// store package cannot depend on the app, so it keeps this small registry of its own.

export const STORE_ERROR_CODES = {
  /** The store was closed (shutdown in progress or finished). */
  STORE_CLOSED: { retriable: false },
  /** The database could not be opened: locked by another process or instance, unreadable, full disk. */
  STORE_UNAVAILABLE: { retriable: true },
  /** A statement failed inside the database. Context says which operation. */
  STORE_QUERY_FAILED: { retriable: true },
  /** The caller passed a value the store refuses (negative points, empty id). A bug, not an outage. */
  STORE_INVALID_ARGUMENT: { retriable: false },
} as const;

export type StoreErrorCode = keyof typeof STORE_ERROR_CODES;

export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly code: StoreErrorCode;
  readonly retriable: boolean;
  /** Which store operation failed, e.g. `recordUsage`. */
  readonly operation: string;

  constructor(code: StoreErrorCode, operation: string, message: string, options?: { cause?: unknown }) {
    super(`${operation}: ${message}`, options);
    this.code = code;
    this.retriable = STORE_ERROR_CODES[code].retriable;
    this.operation = operation;
  }
}

export function isStoreError(value: unknown): value is StoreError {
  return value instanceof StoreError;
}
