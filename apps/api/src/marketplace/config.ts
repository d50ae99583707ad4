// The marketplace's settings (read by readMarketplace in ../config.ts with the rest of the API's).
export interface MarketplaceConfig {
  /**
   * `MARKETPLACE_PRODUCT_CODE`: our product's code in AWS Marketplace; a registration token that
   * resolves to another product is refused. 1..255 of A-Z a-z 0-9.
   */
  readonly productCode: string;
  /** `MARKETPLACE_REGION`: the region of the metering service. Default `us-east-1`. */
  readonly region: string;
  /**
   * `MARKETPLACE_ENDPOINT`: the metering service's URL instead of the region's AWS one (a local
   * stand-in). Default: the SDK's. https, or http on a loopback host only. Credentials always come
   * the AWS SDK's usual ways (environment, shared files, instance or task role).
   */
  readonly endpoint: string | undefined;
  /**
   * `MARKETPLACE_TIMEOUT_MS`: longest wait for one answer from the metering service, in
   * milliseconds; the landing page says "try again" after it. Default 10000. Range 100 .. 60000.
   */
  readonly timeoutMs: number;
  /**
   * `MARKETPLACE_EXPORT_SCHEDULE`: export every finished hour automatically (one replica at a
   * time, through a lease); false leaves it to `POST /admin/v1/metering/export`. Default true.
   */
  readonly exportSchedule: boolean;
  /**
   * `MARKETPLACE_EXPORT_DELAY_S`, read in seconds and kept in milliseconds: how long after an
   * hour ends its export starts, so that calls in flight at the boundary are counted. Default 300
   * (5 minutes). Range 30 .. 1800 seconds.
   */
  readonly exportDelayMs: number;
  /**
   * `MARKETPLACE_SNS_TOPIC_ARN`: the marketplace's SNS topic for subscription notifications;
   * `POST /marketplace/notifications` refuses messages of any other topic. Default unset: the
   * route answers 404 (notifications off).
   */
  readonly snsTopicArn: string | undefined;
  /**
   * `MARKETPLACE_SNS_HOST_PATTERN`: a regular expression the host (with `:port` when given) of
   * SNS signing-certificate and subscription-confirmation URLs must match in full, instead of
   * `sns.<topic region>.amazonaws.com` (a local stand-in in tests). Such URLs are https, or http
   * on a loopback host only. Default unset.
   */
  readonly snsHostPattern: RegExp | undefined;
}
