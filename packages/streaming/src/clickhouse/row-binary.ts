// Result rows as a RowBinary body for `INSERT INTO results (RESULT_COLUMNS) FORMAT RowBinary`.
//
// Why binary: ClickHouse's text parsers (JSONEachRow, TabSeparated) may read a Float64 as a
// neighbour of the nearest double (its documentation of Float64 says so for current releases;
// 18.16 here misread 5 of 2,000 values of a smooth test series, about one random double in six),
// so a stored value could differ from the one the machine sent. RowBinary carries each double's
// eight bytes as they are, in both releases, and costs both sides less than JSON: no number
// formatting here, no parsing on the server.
//
// Layout per row, columns in RESULT_COLUMNS order (schemas/clickhouse/0001_results.sql):
// String = LEB128 byte length + UTF-8 bytes; Int64 / UInt64 / Float64 = 8 bytes little-endian;
// UInt8 = 1 byte; Nullable(Float64) = 1 byte (1: NULL, then nothing; 0: then the 8 bytes);
// Enum8 = its Int8 value.
import type { ResultRow } from '../ports.js';

/** Enum8 values of the `regime` column, as the DDL declares them. */
export const REGIME_ENUM_VALUES: Readonly<Record<ResultRow['regime'], number>> = {
  HEALTHY: 1,
  ACTIVE: 2,
  TRANSITION: 3,
  SHOCK: 4,
  UNKNOWN: 5,
};

const TWO_32 = 2 ** 32;

/** Bytes of LEB128 for a non-negative integer below 2^31. */
function varintLength(n: number): number {
  let bytes = 1;
  while (n >= 0x80) {
    n >>>= 7;
    bytes++;
  }
  return bytes;
}

/**
 * Encodes validated rows (`validateResultRows`: finite numbers, safe-integer timestamps) as
 * RowBinary. Strings repeated across rows (organization, machine, model version) are encoded once.
 */
export function encodeResultRowsRowBinary(rows: readonly ResultRow[]): Buffer {
  const strings = new Map<string, Buffer>();
  const encoded = (text: string): Buffer => {
    let bytes = strings.get(text);
    if (bytes === undefined) {
      const utf8 = Buffer.from(text, 'utf8');
      bytes = Buffer.allocUnsafe(varintLength(utf8.length) + utf8.length);
      let offset = 0;
      let n = utf8.length;
      while (n >= 0x80) {
        bytes[offset++] = (n & 0x7f) | 0x80;
        n >>>= 7;
      }
      bytes[offset++] = n;
      utf8.copy(bytes, offset);
      strings.set(text, bytes);
    }
    return bytes;
  };

  // Fixed part of a row: ts 8, four doubles 32, three flags 3, severity 8, the two nullable
  // doubles' flags 2 (and 8 for each present), regime 1, written_at 8.
  let size = 0;
  for (const row of rows) {
    size += encoded(row.orgId).length + encoded(row.machineId).length + encoded(row.modelVersion).length;
    size += 8 + 32 + 3 + 8 + 2 + 1 + 8;
    if (row.energy !== null) size += 8;
    if (row.zScore !== null) size += 8;
  }

  const out = Buffer.allocUnsafe(size);
  let at = 0;
  const int64 = (n: number): void => {
    // Two's complement from a safe integer: the high word by floor division.
    const high = Math.floor(n / TWO_32);
    out.writeUInt32LE(n - high * TWO_32, at);
    out.writeInt32LE(high, at + 4);
    at += 8;
  };
  const float64 = (x: number): void => {
    out.writeDoubleLE(x, at);
    at += 8;
  };
  const nullableFloat64 = (x: number | null): void => {
    if (x === null) {
      out[at++] = 1;
    } else {
      out[at++] = 0;
      float64(x);
    }
  };
  const text = (s: string): void => {
    at += encoded(s).copy(out, at);
  };

  for (const row of rows) {
    text(row.orgId);
    text(row.machineId);
    int64(row.tsMs);
    float64(row.value);
    float64(row.expectedValue);
    float64(row.upperMargin);
    float64(row.lowerMargin);
    out[at++] = row.isAnomaly ? 1 : 0;
    out[at++] = row.isPositiveAnomaly ? 1 : 0;
    out[at++] = row.isNegativeAnomaly ? 1 : 0;
    float64(row.severity);
    nullableFloat64(row.energy);
    nullableFloat64(row.zScore);
    out[at++] = REGIME_ENUM_VALUES[row.regime];
    text(row.modelVersion);
    int64(row.writtenAtMs);
  }
  if (at !== size) throw new Error(`RowBinary encoding wrote ${at} bytes of ${size}`);
  return out;
}
