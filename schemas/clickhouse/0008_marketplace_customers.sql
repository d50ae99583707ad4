-- Marketplace subscribers and license-based metering (packages/store/src/clickhouse/clickhouse-metering.ts).
--
-- The license a ledger entry was sent under ('' for the older CustomerIdentifier form).
ALTER TABLE {database}.store_metering_ledger ADD COLUMN license_arn String DEFAULT '';
-- What ResolveCustomer said of each subscriber: one row per write, the greatest version is the
-- record ('' for a value the marketplace did not give).
CREATE TABLE IF NOT EXISTS {database}.store_marketplace_customers (
  org_id String,
  customer_identifier String,
  aws_account_id String,
  license_arn String,
  updated_ms Int64,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY org_id;
