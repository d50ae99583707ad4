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
import type { JudgedPoint, ResultRow } from '@adp/streaming';
import { JUDGED_POINT_CELLS, JUDGED_POINT_COLUMNS } from '../judged-point.js';

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

/** A RowBinary body of a size known in advance, written front to back (every ClickHouse adapter's inserts). */
export class RowBinaryWriter {
  private readonly out: Buffer;
  private at = 0;

  constructor(size: number) {
    this.out = Buffer.allocUnsafe(size);
  }

  uint8(n: number): void {
    this.out[this.at++] = n;
  }

  bool(b: boolean): void {
    this.out[this.at++] = b ? 1 : 0;
  }

  uint32(n: number): void {
    this.out.writeUInt32LE(n, this.at);
    this.at += 4;
  }

  /** A safe integer as Int64: two's complement, the high word by floor division. */
  int64(n: number): void {
    const high = Math.floor(n / TWO_32);
    this.out.writeUInt32LE(n - high * TWO_32, this.at);
    this.out.writeInt32LE(high, this.at + 4);
    this.at += 8;
  }

  nullableInt64(n: number | null): void {
    if (n === null) {
      this.out[this.at++] = 1;
    } else {
      this.out[this.at++] = 0;
      this.int64(n);
    }
  }

  float64(x: number): void {
    this.out.writeDoubleLE(x, this.at);
    this.at += 8;
  }

  nullableFloat64(x: number | null): void {
    if (x === null) {
      this.out[this.at++] = 1;
    } else {
      this.out[this.at++] = 0;
      this.float64(x);
    }
  }

  /** Bytes already laid out as RowBinary (a String's length and UTF-8, from `rowBinaryString`). */
  raw(bytes: Buffer): void {
    this.at += bytes.copy(this.out, this.at);
  }

  /** The body; throws when the size given at the start was not exactly filled (a bug). */
  finish(): Buffer {
    if (this.at !== this.out.length) throw new Error(`RowBinary encoding wrote ${this.at} bytes of ${this.out.length}`);
    return this.out;
  }
}

/** A String column's RowBinary: LEB128 byte length, then the UTF-8 bytes. */
export function rowBinaryString(text: string): Buffer {
  const utf8 = Buffer.from(text, 'utf8');
  const bytes = Buffer.allocUnsafe(varintLength(utf8.length) + utf8.length);
  let offset = 0;
  let n = utf8.length;
  while (n >= 0x80) {
    bytes[offset++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  bytes[offset++] = n;
  utf8.copy(bytes, offset);
  return bytes;
}

/** RowBinary bytes of a judged point's columns: 8 a double, 1 a flag. */
export const JUDGED_POINT_ROW_BINARY_BYTES: number = JUDGED_POINT_COLUMNS.reduce(
  (bytes, column) => bytes + (column.type === 'double' ? 8 : 1),
  0,
);

/** A judged point's columns (`JUDGED_POINT_COLUMNS`: Float64 and UInt8 flags), in table order. */
export function writeJudgedPoint(out: RowBinaryWriter, point: JudgedPoint): void {
  for (let i = 0; i < JUDGED_POINT_CELLS.length; i++) {
    const cell = JUDGED_POINT_CELLS[i]!(point);
    if (typeof cell === 'number') out.float64(cell);
    else out.bool(cell);
  }
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
      bytes = rowBinaryString(text);
      strings.set(text, bytes);
    }
    return bytes;
  };

  // Fixed part of a row: ts 8, the judged point, the two nullable doubles' flags 2 (and 8 for
  // each present), regime 1, written_at 8.
  let size = 0;
  for (const row of rows) {
    size += encoded(row.orgId).length + encoded(row.machineId).length + encoded(row.modelVersion).length;
    size += 8 + JUDGED_POINT_ROW_BINARY_BYTES + 2 + 1 + 8;
    if (row.energy !== null) size += 8;
    if (row.zScore !== null) size += 8;
  }

  const out = new RowBinaryWriter(size);
  for (const row of rows) {
    out.raw(encoded(row.orgId));
    out.raw(encoded(row.machineId));
    out.int64(row.tsMs);
    writeJudgedPoint(out, row);
    out.nullableFloat64(row.energy);
    out.nullableFloat64(row.zScore);
    out.uint8(REGIME_ENUM_VALUES[row.regime]);
    out.raw(encoded(row.modelVersion));
    out.int64(row.writtenAtMs);
  }
  return out.finish();
}
