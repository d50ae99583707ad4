// The only ways a value enters the text of a ClickHouse statement, for every adapter of this
// package (the platform store's ports, the result and job stores). 18.16 has no server-side query
// parameters (`{name:Type}`), so SELECTs and mutations interpolate; inserts never do (their rows
// travel as JSONEachRow or RowBinary bodies). Identifiers go through `sqlIdentifier`
// (`identifiers.ts`).
//
// A value refused here is STORE_INVALID_ARGUMENT: every caller checks its input first (the ports'
// validators, `validateResultQuery`, the job store's callers), so reaching this door with a
// non-string or an unsafe integer is a bug, never an outage.
import { StoreError } from '../errors.js';

// Backslash escapes that ClickHouse's string-literal parser knows on 18.16 and current releases.
// Quote and backslash must be escaped; the common control characters are escaped so that a
// statement stays one readable line in the server's query log. Everything else, any Unicode
// included, goes through as its UTF-8 bytes, which ClickHouse takes verbatim inside quotes
// (test/integration/store-clickhouse.test.ts reads every code point back from the server).
const ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  "'": "\\'",
  '\0': '\\0',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
const NEEDS_ESCAPE = /[\\'\0\b\f\n\r\t]/g;

/**
 * A ClickHouse string literal, quotes included, that the server reads back as exactly `value`.
 * Throws STORE_INVALID_ARGUMENT for anything but a string, so a number or object never reaches SQL
 * through this door by accident. `operation` names the caller in the error.
 */
export function sqlString(value: string, operation = 'sql'): string {
  if (typeof value !== 'string') {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, `expected a string for SQL, got ${typeof value}`);
  }
  return `'${value.replace(NEEDS_ESCAPE, (char) => ESCAPES[char] ?? char)}'`;
}

/** A safe integer as SQL text; throws STORE_INVALID_ARGUMENT for NaN, infinities, fractions, and beyond 2^53. */
export function sqlInteger(value: number, operation = 'sql'): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, `expected a safe integer for SQL, got ${String(value)}`);
  }
  return String(value);
}
