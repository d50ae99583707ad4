// The one gate for names that go into SQL text. ClickHouse 18.16 has no server-side parameters,
// so a database or table name is interpolated; only names that are plain identifiers may be.
import { StreamingError } from '@adp/streaming/errors';

/** A plain, unquoted ClickHouse identifier: a letter or underscore, then up to 62 more word characters. */
export const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Returns `name` when it is a plain identifier; otherwise throws INVALID_IDENTIFIER. */
export function sqlIdentifier(name: string, what = 'identifier'): string {
  if (typeof name !== 'string' || !SQL_IDENTIFIER.test(name)) {
    throw new StreamingError(
      'INVALID_IDENTIFIER',
      `${what} ${JSON.stringify(name)} is not a plain identifier (${SQL_IDENTIFIER.source})`,
    );
  }
  return name;
}
