// The vendor's verdict on one point (value, band, flags, severity) in the native API's snake_case,
// as the stored results of telemetry (GET /v1/machines/{id}/results) and a detection job's result
// rows both carry it: one schema and one mapping for both.
import { Type } from 'typebox';
import type { JudgedPoint } from '@adp/streaming';

/** The fields of a point's verdict, to spread into a row's schema. */
export const PointVerdictFields = {
  value: Type.Number(),
  expected_value: Type.Number(),
  upper_margin: Type.Number(),
  lower_margin: Type.Number(),
  is_anomaly: Type.Boolean(),
  is_positive_anomaly: Type.Boolean(),
  is_negative_anomaly: Type.Boolean(),
  severity: Type.Number(),
};

/** A stored row's verdict (the result and job stores' JudgedPoint) as the wire's fields. */
export function pointVerdictBody(row: JudgedPoint) {
  return {
    value: row.value,
    expected_value: row.expectedValue,
    upper_margin: row.upperMargin,
    lower_margin: row.lowerMargin,
    is_anomaly: row.isAnomaly,
    is_positive_anomaly: row.isPositiveAnomaly,
    is_negative_anomaly: row.isNegativeAnomaly,
    severity: row.severity,
  };
}
