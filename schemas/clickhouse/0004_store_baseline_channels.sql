-- A multivariate machine's baseline lists its channels (a JSON array of names); each channel's own
-- baseline is the row of `<machine_id>:<channel>`. NULL for a single series and for older rows.
ALTER TABLE {database}.store_baselines ADD COLUMN channels Nullable(String);
