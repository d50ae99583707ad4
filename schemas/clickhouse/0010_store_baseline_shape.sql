-- A baseline's shape reference: base64 of little-endian float64s [length, center, spread,
-- ...values] (packages/store/src/shape-reference.ts), so every value reads back bit for bit. NULL for
-- statistics-only and multivariate parent baselines, tombstones and older rows.
ALTER TABLE {database}.store_baselines ADD COLUMN shape_reference_base64 Nullable(String);
