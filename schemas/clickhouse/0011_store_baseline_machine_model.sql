-- A multivariate machine's joint model of its channels: JSON text written by the API (opaque to the
-- store). NULL for single series, channels' own baselines, tombstones and older rows.
ALTER TABLE {database}.store_baselines ADD COLUMN machine_model Nullable(String);
