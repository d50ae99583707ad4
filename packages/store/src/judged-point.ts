// A judged point's columns, the one definition every result table of this package writes and reads
// (the stream's results and the jobs' results, DuckDB and ClickHouse): their names, their order,
// their type and the JudgedPoint field each holds. The writers (RowBinary for ClickHouse,
// `writeJudgedPoint`; DuckDB's appender, `appendJudgedPoint`) and the readers walk this list, so a
// new column is added here (and in the ClickHouse DDL of schemas/clickhouse/, which a migration
// changes). The rows' own columns (ids, timestamps) go around these.
import type { JudgedPoint } from '@adp/streaming';

/** The JudgedPoint fields whose values are of type `T`. */
type FieldOf<T> = { [K in keyof JudgedPoint]-?: JudgedPoint[K] extends T ? K : never }[keyof JudgedPoint];

/** A column: a double (Float64 / DOUBLE) or a flag (UInt8 0/1 / BOOLEAN), and the field it holds. */
export type JudgedPointColumn =
  | { readonly name: string; readonly type: 'double'; readonly field: FieldOf<number> }
  | { readonly name: string; readonly type: 'flag'; readonly field: FieldOf<boolean> };

/** In table order: `value` to `severity`. */
export const JUDGED_POINT_COLUMNS = [
  { name: 'value', type: 'double', field: 'value' },
  { name: 'expected_value', type: 'double', field: 'expectedValue' },
  { name: 'upper_margin', type: 'double', field: 'upperMargin' },
  { name: 'lower_margin', type: 'double', field: 'lowerMargin' },
  { name: 'is_anomaly', type: 'flag', field: 'isAnomaly' },
  { name: 'is_positive_anomaly', type: 'flag', field: 'isPositiveAnomaly' },
  { name: 'is_negative_anomaly', type: 'flag', field: 'isNegativeAnomaly' },
  { name: 'severity', type: 'double', field: 'severity' },
] as const satisfies readonly JudgedPointColumn[];

/** The columns' names in table order, for column lists in SQL. */
export const JUDGED_POINT_COLUMN_NAMES: readonly string[] = JUDGED_POINT_COLUMNS.map((column) => column.name);

/**
 * Each column's cell of a point, in table order: a number for a double, a boolean for a flag. What
 * the writers loop over (a closure per column reads one field, which keeps a row's encoding within
 * tens of ns of hand-written calls; a loop reading `point[column.field]` cost several times that).
 */
export const JUDGED_POINT_CELLS: readonly ((point: JudgedPoint) => number | boolean)[] = JUDGED_POINT_COLUMNS.map(
  ({ field }) =>
    (point: JudgedPoint) =>
      point[field],
);

/** A row as a query answers it: each judged-point column by name (other columns beside them). */
export type JudgedPointRecord = { readonly [C in (typeof JUDGED_POINT_COLUMNS)[number] as C['name']]: unknown };

/**
 * A judged point read from its columns: `double` and `flag` turn a backend's cell (a JSON number,
 * 0/1, a DuckDB value) into the field's type.
 */
export function judgedPointFromColumns(
  record: JudgedPointRecord,
  double: (cell: unknown) => number,
  flag: (cell: unknown) => boolean,
): JudgedPoint {
  const point: Record<string, number | boolean> = {};
  for (const column of JUDGED_POINT_COLUMNS) {
    const cell = record[column.name];
    point[column.field] = column.type === 'double' ? double(cell) : flag(cell);
  }
  return point as unknown as JudgedPoint;
}
