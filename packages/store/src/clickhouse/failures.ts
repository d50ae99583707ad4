// How a request to ClickHouse failed, for every adapter's error mapping (the platform store's
// StoreErrors, the stream stores' and the migration runner's StreamingErrors): with an answer
// carrying the server's error code, or with no answer at all (refused, reset, timed out).
import { describe } from '../database.js';

/**
 * ClickHouse's numeric error code. Current releases reach us as a ClickHouseError with `code`;
 * 18.16 sends no exception header, so the client rejects with a plain Error whose message starts
 * `Code: 81, e.displayText() = ...`, and the code is only in that text.
 */
export function clickHouseServerCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^\d+$/.test(code)) return code;
  return /^Code: (\d+)[.,]/.exec(error.message)?.[1];
}

/** A failure's server code (undefined: the server never answered) and the sentence that says which. */
export function clickHouseFailure(error: unknown): { readonly serverCode: string | undefined; readonly message: string } {
  const serverCode = clickHouseServerCode(error);
  const reason = describe(error);
  const message = serverCode === undefined ? `ClickHouse did not answer: ${reason}` : `ClickHouse error ${serverCode}: ${reason}`;
  return { serverCode, message };
}
