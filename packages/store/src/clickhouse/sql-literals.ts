// Values interpolated into ClickHouse SQL text. 18.16 has no server-side query parameters, so a
// string from a request (an organization or machine id) goes into a quoted literal; this is the one
// place that quotes it, and numbers get the same treatment: checked, then printed.
import { StreamingError } from '@adp/streaming/errors';

/**
 * A single-quoted ClickHouse string literal of `value`: backslash and quote escaped, every control
 * character and DEL as `\xHH`, so the literal cannot end early or smuggle a statement.
 */
export function sqlStringLiteral(value: string): string {
  if (typeof value !== 'string') throw new StreamingError('VALUE_INVALID', 'SQL string literal: not a string');
  const escaped = value.replace(/[\\'\u0000-\u001f\u007f]/g, (ch) => {
    if (ch === '\\') return '\\\\';
    if (ch === "'") return "\\'";
    return `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
  return `'${escaped}'`;
}

/** `value` printed as an SQL integer literal, if it is a safe integer (else VALUE_INVALID). */
export function sqlIntegerLiteral(value: number, what = 'value'): string {
  if (!Number.isSafeInteger(value)) {
    throw new StreamingError('VALUE_INVALID', `${what} ${String(value)} is not a safe integer`);
  }
  return String(value);
}
