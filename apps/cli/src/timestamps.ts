// Timestamps the CLI accepts: whatever the API accepts (ISO 8601) plus bare epoch numbers.
import { parseIsoTimestamp } from '@adp/detection';

const EPOCH = /^\d+(?:\.\d+)?$/;

/**
 * Epoch numbers below this are seconds, at or above it milliseconds: 1e11 s is the year 5138,
 * 1e11 ms is March 1973, so real data from either era is read the right way.
 */
export const EPOCH_SECONDS_BELOW = 1e11;

/** Epoch milliseconds (sub-millisecond digits truncated), or null when the text is not a timestamp. */
export function parseTimestamp(text: string): number | null {
  if (EPOCH.test(text)) {
    const n = Number(text);
    if (!Number.isFinite(n)) return null;
    return Math.floor(n < EPOCH_SECONDS_BELOW ? n * 1000 : n);
  }
  return parseIsoTimestamp(text);
}
